//go:build jobs

// The nightly's and compare's entry points: `lab nightly`,
// `lab accept`, `lab compare`, `make nightly` and `make accept-baseline`
// start them as
//
//	go test -C lab/jobs -tags jobs -run '^TestNightly$' -count=1 -timeout 0 -args -seeds 1,2,3 [-accept] ...
//	go test -C lab/jobs -tags jobs -run '^TestCompare$' -count=1 -timeout 0 -args -a as-written -b old-pipeline ...
//
// The "jobs" tag keeps go test ./... from running them. Their logic is in
// package jobs (Nightly, Compare), which go test ./... builds and tests;
// this file only reads the flags and fails the test on a regression.
package jobs_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The flags. -out, -seeds and -parallel are shared with the sweep's entry
// point (sweep.RegisterFlags reuses a flag already defined), so they are
// strings whose empty value means each job's own default. These
// initialisers run before any init function of the package, the sweep's
// included.
var (
	flagSeeds    = flag.String("seeds", "", "seeds, comma-separated (nightly and compare: 1,2,3)")
	flagExact    = flag.String("exact", "", "true runs every session exact (lab/exact): the same result from any run, about 10x slower (nightly and compare: false; the sweep: true)")
	flagOut      = flag.String("out", "", "the report's folder, relative to the module's root (nightly: out/nightly, compare: out/compare)")
	flagParallel = flag.String("parallel", "0", "sessions at once; 0 is every core")
	flagBaseline = flag.String("baseline", jobs.DefaultBaselines, "nightly: the baselines' folder, relative to the module's root")
	flagAccept   = flag.Bool("accept", false, "nightly: write this run's evidence as the new baselines")
	flagDirty    = flag.Bool("allow-dirty", false, "nightly -accept: accept from a work tree with uncommitted changes (refused otherwise)")
	flagGroup    = flag.String("group", "", "a group of the library: "+strings.Join(scenarios.Groups, ", "))
	flagVariant  = flag.String("variant", jobspec.AsWritten, "nightly: the configuration to run against the baseline")
	flagA        = flag.String("a", jobspec.AsWritten, "compare: configuration A, the reference")
	flagB        = flag.String("b", "", "compare: configuration B, judged against A")
	flagScenario = flag.String("scenario", "", "scenarios of the library, comma-separated (instead of -group)")
)

func names() []string {
	var out []string
	for _, n := range strings.Split(*flagScenario, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func seedsAndParallel(t *testing.T) ([]uint64, int) {
	var seeds []uint64
	if *flagSeeds != "" {
		var err error
		seeds, err = jobspec.ParseSeeds(*flagSeeds)
		require.NoError(t, err, "-seeds")
	}
	parallel, err := strconv.Atoi(*flagParallel)
	require.NoError(t, err, "-parallel: expected a count of sessions")
	return seeds, parallel
}

// exactRunner is the runner for exact sessions when -exact=true, else nil
// (worker processes).
func exactRunner(t *testing.T) *exact.Runner {
	if *flagExact == "" || *flagExact == "false" {
		return nil
	}
	require.Equal(t, "true", *flagExact, "-exact: expected true or false")
	r, err := exact.Open(t.Context(), exact.Options{Root: filepath.Join("..", ".."), Log: os.Stderr})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// TestNightly runs the nightly and fails on a regression or a failed
// session, listing each with its evidence; with -accept it writes the new
// baselines instead of failing on what it accepts.
func TestNightly(t *testing.T) {
	// Sessions in worker processes: reproducible for a seed (worker.go).
	jobs.UseWorkers("TestWorker")
	seeds, parallel := seedsAndParallel(t)
	run, err := jobs.Nightly(t, jobs.NightlyOptions{
		Seeds: seeds, Baselines: *flagBaseline, Out: *flagOut, Scenarios: names(), Group: *flagGroup, Config: *flagVariant,
		Accept: *flagAccept, AllowDirty: *flagDirty, Parallel: parallel, Progress: os.Stderr, Exact: exactRunner(t),
	})
	require.NoError(t, err)
	j := run.Judgement
	fmt.Printf("\nnightly: %s", j.Summary())
	fmt.Printf("%d sessions in %.1f s wall; report: %s (and .html), results: %s\n", run.Sessions, run.Wall.Seconds(), run.Report, run.Suite)
	if *flagAccept {
		fmt.Printf("accepted: %d baselines, %d bytes, in %s\n", run.Accepted, run.AcceptedBytes, run.Baselines)
		return
	}
	for _, v := range j.Regressions() {
		t.Errorf("REGRESSION %s", v)
	}
	for _, s := range j.Errors {
		t.Errorf("FAILED %s seed %d: %v", s.Scenario, s.Seed, s.Err)
	}
	if j.Failed() {
		t.Log("a regression that is intended: accept it with lab accept (make accept-baseline) and commit testdata/baselines")
	}
}

// TestCompare runs one scenario, a group or the library under two
// configurations and writes the report; it fails only when it cannot run.
func TestCompare(t *testing.T) {
	// Sessions in worker processes: reproducible for a seed (worker.go).
	jobs.UseWorkers("TestWorker")
	seeds, parallel := seedsAndParallel(t)
	run, err := jobs.Compare(t, jobs.CompareOptions{
		A: *flagA, B: *flagB, Scenarios: names(), Group: *flagGroup, Seeds: seeds, Out: *flagOut,
		Parallel: parallel, Progress: os.Stderr, Exact: exactRunner(t),
	})
	require.NoError(t, err)
	fmt.Printf("\ncompare: %s\n", run.Judgement.Summary())
	fmt.Printf("verdict: %s\n%d sessions in %.1f s wall; report: %s (and .html)\n", run.Verdict(), run.Sessions, run.Wall.Seconds(), run.Report)
}
