// Package entry holds the lab's jobs as tests: the entry points of lab
// test (native), nightly, accept, compare, sweep and tune, and of their
// worker processes. A session needs a testing/synctest bubble, and so a
// *testing.T: each job is a test function, run by the testing package
// either in lab/jobs's test binary (go test -C lab/jobs -tags jobs, the
// source path of a checkout) or in the lab binary itself, which starts a
// copy of itself with Env set and hands control to Main.
//
// The flags are the jobs' arguments, registered on the test binary's
// command line (RegisterFlags): the job's process is started with go
// test's -test.* flags, then the job's own.
package entry

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/gcdefault"
	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/filetest"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/sessionproc"
	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/tune"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Env, set in a lab binary's environment, names the job it runs (a test
// of Tests): Requested is then true and the binary's main calls Main.
const Env = "LATENCYLAB_JOB"

// WorkerTest is the test a job's worker processes run (jobs.UseWorkers).
const WorkerTest = "TestWorker"

// Tests are the jobs, by the names their processes are started with
// (-test.run=^NAME$).
var Tests = []testing.InternalTest{
	{Name: "TestFiles", F: Files},
	{Name: "TestNightly", F: Nightly},
	{Name: "TestCompare", F: Compare},
	{Name: "TestSweep", F: Sweep},
	{Name: "TestTune", F: Tune},
	{Name: "TestSuite", F: Suite},
	{Name: WorkerTest, F: Worker},
}

// Requested reports whether this process was started as a job or as a
// job's worker, and so must run Main rather than its own main.
func Requested() bool { return os.Getenv(Env) != "" || jobs.Serving() }

// Main runs the job (or worker) this process was started for, as the
// testing package runs a test binary's tests, and exits with its status.
// A lab binary calls it first thing when Requested.
func Main() {
	if jobs.Serving() {
		gcdefault.Set()
	} else if !sessionproc.Seeded() {
		// Only a test binary may seed crypto/rand (testing/cryptotest),
		// which QUIC's connection IDs and TLS draw from: unseeded, two
		// runs of a seed differ. Said once, by the job, not its workers.
		fmt.Fprintln(os.Stderr, "lab: native sessions run unseeded in this binary (built without -ldflags=-X=testing.testBinary=1, as make dist builds it): "+
			"two runs of a seed may differ; exact sessions are unaffected")
	}
	RegisterFlags(flag.CommandLine)
	testing.Main(matchString, Tests, nil, nil)
}

// matchString is -test.run's matcher, as go test's own.
func matchString(pat, s string) (bool, error) {
	re, err := regexp.Compile(pat)
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}

// flags are the jobs' arguments.
var flags struct {
	root                                  *string
	seeds, exact, out, parallel, baseline *string
	accept, dirty                         *bool
	group, variant, a, b, scenario        *string
	filesOut, dir, defaults, tuneState    *string
	registered                            sync.Once
}

// RegisterFlags defines the jobs' flags on fs, once per process: the test
// binary of lab/jobs calls it from an init function, Main before it runs.
// -out, -seeds and -parallel are shared with the sweep's flags
// (sweep.RegisterFlags reuses a flag already defined), so they are
// strings whose empty value means each job's own default.
func RegisterFlags(fs *flag.FlagSet) {
	flags.registered.Do(func() {
		flags.root = fs.String("root", "", "the folder the jobs' relative paths are resolved against, and in a checkout the module the exact guest is built from (default: the module's root above the working folder)")
		flags.seeds = fs.String("seeds", "", "seeds, comma-separated (nightly and compare: 1,2,3)")
		flags.exact = fs.String("exact", "", "true runs every session exact (lab/exact): the same result from any run, about 10x slower (nightly and compare: false; the sweep: true)")
		flags.out = fs.String("out", "", "the report's folder, relative to -root (nightly: out/nightly, compare: out/compare)")
		flags.parallel = fs.String("parallel", "0", "sessions at once; 0 is every core")
		flags.baseline = fs.String("baseline", "", "nightly: the baselines' folder, relative to -root (default "+jobs.DefaultBaselines+", or baselines beside scenario files)")
		flags.accept = fs.Bool("accept", false, "nightly: write this run's evidence as the new baselines")
		flags.dirty = fs.Bool("allow-dirty", false, "nightly -accept: accept from a work tree with uncommitted changes (refused otherwise)")
		flags.group = fs.String("group", "", "a group of the library: "+strings.Join(scenarios.Groups, ", "))
		flags.variant = fs.String("variant", jobspec.AsWritten, "nightly: the configuration to run against the baseline")
		flags.a = fs.String("a", jobspec.AsWritten, "compare: configuration A, the reference")
		flags.b = fs.String("b", "", "compare: configuration B, judged against A")
		flags.scenario = fs.String("scenario", "", "scenarios of the library, comma-separated (instead of -group)")
		flags.filesOut = fs.String("files-out", "", "lab test: the file the sessions are written to, a JSON line each (filetest.Outcome)")
		flags.dir = fs.String("dir", "", "lab test, nightly, compare: the folder the scenario paths are relative to (the user's working folder)")
		flags.defaults = fs.String("defaults", "", "the defaults file of every scenario file (default: each folder's defaults.yaml, else the library's)")
		flags.tuneState = fs.String("tune-state", "", "the tune's folder (lab tune -state), its settings and first step written")
		sweep.RegisterFlags(fs)
	})
}

// root is -root, else the module's root above the working folder.
func root(t *testing.T) string {
	if *flags.root != "" {
		return *flags.root
	}
	r, err := jobs.ModuleRoot()
	require.NoError(t, err, "-root: none given, and no module above the working folder")
	return r
}

func names() []string {
	var out []string
	for _, n := range strings.Split(*flags.scenario, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func seedsAndParallel(t *testing.T) ([]uint64, int) {
	var seeds []uint64
	if *flags.seeds != "" {
		var err error
		seeds, err = jobspec.ParseSeeds(*flags.seeds)
		require.NoError(t, err, "-seeds")
	}
	parallel, err := strconv.Atoi(*flags.parallel)
	require.NoError(t, err, "-parallel: expected a count of sessions")
	return seeds, parallel
}

// exactRunner is the runner for exact sessions when -exact=true, else nil
// (worker processes).
func exactRunner(t *testing.T) *exact.Runner {
	if *flags.exact == "" || *flags.exact == "false" {
		return nil
	}
	require.Equal(t, "true", *flags.exact, "-exact: expected true or false")
	r, err := exact.Open(t.Context(), exact.Options{Root: root(t), Log: os.Stderr})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// files loads the scenario files named after the flags, relative to -dir
// (the working folder is changed to it, so that the results name the
// files as the user wrote them, and the workers start there too); none
// named is nil.
func files(t *testing.T) []*scenarios.Scenario {
	if *flags.dir != "" {
		t.Chdir(*flags.dir)
	}
	if flag.NArg() == 0 {
		return nil
	}
	scs, err := filetest.Load(flag.Args(), *flags.defaults)
	require.NoError(t, err)
	return scs
}

// filesAndRoot is a nightly's or compare's scenario files and the folder
// its relative paths and defaults are resolved against: with files, the
// user's working folder (their baselines, their out/, their repository's
// commit), else -root.
func filesAndRoot(t *testing.T) ([]*scenarios.Scenario, string) {
	r := root(t)
	scs := files(t)
	if scs != nil {
		wd, err := os.Getwd()
		require.NoError(t, err)
		r = wd
	}
	return scs, r
}

// Suite runs the library (or a group, or named scenarios) once each at
// its own seed, in worker processes, as make suite runs it in one go
// test: a progress line per scenario, the summary table, and the result
// folder -out (a JSON file per scenario, summary.md, and in the lab's
// checkout reproduction.md, whose codec rows are the checkout's). An
// expectation not met, or a scenario that did not run, fails it.
func Suite(t *testing.T) {
	jobs.UseWorkers(WorkerTest)
	_, parallel := seedsAndParallel(t)
	scs, err := jobspec.Select(*flags.group, names())
	require.NoError(t, err)
	out := *flags.out
	if out == "" {
		out = DefaultSuiteOut
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(root(t), out)
	}
	sessions := jobs.Run(t, jobs.Plan{
		Scenarios: scs, Parallel: parallel,
		Finished: func(s jobs.Session, done, total int) {
			o := filetest.FromSession(s)
			fmt.Print(filetest.ProgressLine(o, filetest.Judge(o), done, total))
		},
	})
	entries := make([]lab.SuiteEntry, len(sessions))
	for i, s := range sessions {
		entries[i] = lab.SuiteEntry{Scenario: scs[i], Result: s.Result, Err: s.Err, Skipped: s.Skipped, Wall: s.Wall,
			Command: "lab suite -scenario " + scs[i].Name}
		switch {
		case s.Skipped:
			t.Logf("%s: skipped: %v", s.Scenario, s.Err)
		case s.Err != nil:
			t.Errorf("%s (%s): %v", s.Scenario, s.File, s.Err)
		case !s.Result.Passed():
			for _, c := range s.Result.Checks {
				if !c.Pass {
					t.Errorf("%s:%d: expectation not met: %s", s.File, c.Line, c)
				}
			}
		}
	}
	rep, err := lab.LoadReproduction()
	if err != nil {
		// Outside the checkout: no codec reference run to build the
		// table with; the results and the summary are written.
		rep = nil
	}
	require.NoError(t, lab.WriteSuite(out, entries, rep))
	fmt.Printf("\n%s\nresults: %d scenarios in %s (a JSON file each, summary.md", lab.SummaryTable(entries), len(entries), out)
	if rep != nil {
		fmt.Print(", reproduction.md")
	}
	fmt.Println(")")
}

// DefaultSuiteOut is the suite's result folder, relative to -root: make
// suite's.
const DefaultSuiteOut = "out/results"

// Worker serves sessions in a worker process (jobs.Serve); run as a
// test outside one, it has nothing to do.
func Worker(t *testing.T) {
	if !jobs.Serving() {
		t.Skip("not a worker process: jobs start this test in their workers")
	}
	jobs.Serve(t)
}

// Files is lab test's native entry point: the scenario files named after
// the flags, each at its own seed or at every -seeds, in worker
// processes on -parallel cores; it prints a progress line per session as
// it finishes and writes every session to -files-out. It fails only when
// it cannot run: judging is lab test's.
func Files(t *testing.T) {
	require.NotEmpty(t, *flags.filesOut, "-files-out: lab test names the file for the sessions")
	out, err := filepath.Abs(*flags.filesOut)
	require.NoError(t, err)
	// Sessions in worker processes: reproducible for a seed (jobs' worker.go).
	jobs.UseWorkers(WorkerTest)
	scs := files(t)
	require.NotEmpty(t, scs, "no scenario files named after the flags")
	seeds, parallel := seedsAndParallel(t)
	sessions := jobs.Run(t, jobs.Plan{
		Scenarios: scs, Seeds: seeds, Parallel: parallel,
		Finished: func(s jobs.Session, done, total int) {
			o := filetest.FromSession(s)
			fmt.Print(filetest.ProgressLine(o, filetest.Judge(o), done, total))
		},
	})
	f, err := os.Create(out)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, s := range sessions {
		require.NoError(t, enc.Encode(filetest.FromSession(s)))
	}
	require.NoError(t, f.Close())
}

// Nightly runs the nightly and fails on a regression or a failed session,
// listing each with its evidence; with -accept it writes the new
// baselines instead of failing on what it accepts. Scenario files named
// after the flags replace the library.
func Nightly(t *testing.T) {
	// Sessions in worker processes: reproducible for a seed (jobs' worker.go).
	jobs.UseWorkers(WorkerTest)
	seeds, parallel := seedsAndParallel(t)
	ex := exactRunner(t)
	scs, r := filesAndRoot(t)
	run, err := jobs.Nightly(t, jobs.NightlyOptions{
		Root: r, Seeds: seeds, Baselines: *flags.baseline, Out: *flags.out, Files: scs, Scenarios: names(), Group: *flags.group, Config: *flags.variant,
		Accept: *flags.accept, AllowDirty: *flags.dirty, Parallel: parallel, Progress: os.Stderr, Exact: ex,
	})
	require.NoError(t, err)
	j := run.Judgement
	fmt.Printf("\nnightly: %s", j.Summary())
	fmt.Printf("%d sessions in %.1f s wall; report: %s (and .html), results: %s\n", run.Sessions, run.Wall.Seconds(), run.Report, run.Suite)
	if *flags.accept {
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
		t.Log("a regression that is intended: accept it with lab accept (make accept-baseline) and commit the baselines")
	}
}

// Compare runs one scenario, a group, the library or the scenario files
// named after the flags under two configurations and writes the report;
// it fails only when it cannot run.
func Compare(t *testing.T) {
	// Sessions in worker processes: reproducible for a seed (jobs' worker.go).
	jobs.UseWorkers(WorkerTest)
	seeds, parallel := seedsAndParallel(t)
	ex := exactRunner(t)
	scs, r := filesAndRoot(t)
	run, err := jobs.Compare(t, jobs.CompareOptions{
		Root: r, A: *flags.a, B: *flags.b, Files: scs, Scenarios: names(), Group: *flags.group, Seeds: seeds, Out: *flags.out,
		Parallel: parallel, Progress: os.Stderr, Exact: ex,
	})
	require.NoError(t, err)
	fmt.Printf("\ncompare: %s\n", run.Judgement.Summary())
	fmt.Printf("verdict: %s\n%d sessions in %.1f s wall; report: %s (and .html)\n", run.Verdict(), run.Sessions, run.Wall.Seconds(), run.Report)
}

// Sweep runs the ABR parameter sweep the flags describe (lab/sweep).
func Sweep(t *testing.T) {
	// Sessions in worker processes: reproducible for a seed (jobs' worker.go).
	jobs.UseWorkers(WorkerTest)
	r := root(t)
	job, err := sweep.JobFromFlags(flag.CommandLine, r)
	require.NoError(t, err)
	_, err = sweep.RunJob(t, job, r, os.Stderr, os.Stdout)
	require.NoError(t, err)
}

// Tune runs the ABR tune's next steps in -tune-state's folder (lab/tune).
func Tune(t *testing.T) {
	if *flags.tuneState == "" {
		t.Skip("no -tune-state: lab tune starts this entry point with its folder")
	}
	// Sessions in worker processes: reproducible for a seed (jobs' worker.go).
	jobs.UseWorkers(WorkerTest)
	parallel := 0
	if f := flag.Lookup(sweep.FlagParallel); f != nil {
		var err error
		parallel, err = strconv.Atoi(f.Value.String())
		require.NoError(t, err, "-parallel")
	}
	st, err := tune.Run(t, *flags.tuneState, sweep.RunOptions{Parallel: parallel, Progress: os.Stderr, Root: root(t)}, os.Stdout)
	require.NoError(t, err)
	t.Logf("tune %s", st)
}
