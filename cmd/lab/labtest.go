package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/filetest"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/render"
	"github.com/nuvirahub/latencylab/scenarios"
)

const testUsage = `usage: lab test [flags] FILE|DIR...

Runs your own scenario files in virtual time and judges their expectations,
as go test does the library's. A folder means every *.yaml file in it but
defaults.yaml. Each file has its folder's defaults.yaml beneath it, or the
library's (scenarios/library/defaults.yaml) when its folder has none, or the
one -defaults names. Every mistake of every file is reported at once
(file:line: field: message) and nothing runs.

Sessions run exact by default: each in a fresh WebAssembly instance with
deterministic clocks (lab/exact), so a file and seed give the same result,
byte for byte, from any run, shard or machine (the first run builds the
guest, about a minute). -exact=false runs them natively in worker
processes, about 10 times faster, where a few sessions in a hundred differ
from run to run. They run -j at a time, a progress line per session as it
finishes; a summary table ends the run.

Written into -out: a result JSON per session (NAME.json; NAME-seedN.json
with -seeds), summary.md, and report.md and report.html as lab report
renders them. -junit writes JUnit XML for CI: a test suite per session, a
test case per expectation.

Exit status: 0 when every expectation is met; 1 when one is not or a
session did not run to its end; 2 on bad input (a flag, a scenario file).
A scenario that replays a trace of ../shared is skipped when that folder is
absent, and fails with LAB_REQUIRE_SHARED=1.

flags:
`

// testOptions are lab test's settings.
type testOptions struct {
	paths     []string
	defaults  string
	seeds     []uint64
	parallel  int
	exact     bool
	out       string
	junit     string
	seedsSet  bool
	seedsFlag string
}

// parseTest reads lab test's command line. Flags may come after the
// files too (lab test my.yaml -junit j.xml), as people write them.
func parseTest(args []string, stderr io.Writer) (testOptions, error) {
	o := testOptions{exact: true}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), testUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.defaults, "defaults", "", "the defaults file of every scenario (default: each folder's defaults.yaml, else the library's)")
	fs.StringVar(&o.seedsFlag, "seeds", "", "run every scenario at each of these seeds, comma-separated (default: each scenario's own seed)")
	fs.IntVar(&o.parallel, "j", 0, "sessions at once; 0 is every core (GOMAXPROCS)")
	fs.BoolVar(&o.exact, "exact", true, "run every session exact (lab/exact): the same result from any run or machine; false runs them natively in worker processes, about 10x faster")
	fs.StringVar(&o.out, "out", "out/test", "the folder for the result JSONs, summary.md, report.md and report.html")
	fs.StringVar(&o.junit, "junit", "", "write JUnit XML to this file, for CI (a suite per session, a case per expectation)")
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return o, err
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		// A "--" ends the flags: everything after it is a path.
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			o.paths = append(o.paths, rest...)
			break
		}
		o.paths = append(o.paths, rest[0])
		rest = rest[1:]
	}
	switch {
	case len(o.paths) == 0:
		return o, usagef("no scenario file or folder: lab test FILE|DIR... (lab test -h says more)")
	case o.parallel < 0:
		return o, usagef("-j %d: expected a count of sessions at once, or 0 for every core", o.parallel)
	case o.out == "":
		return o, usagef("-out must name a folder")
	}
	if o.parallel == 0 {
		o.parallel = runtime.GOMAXPROCS(0)
	}
	if o.seedsFlag != "" {
		seeds, err := jobspec.ParseSeeds(o.seedsFlag)
		if err != nil {
			return o, usagef("-seeds: %v", err)
		}
		o.seeds, o.seedsSet = seeds, true
	}
	return o, nil
}

// testEstimate is the run's expected wall time, from lab/estimate's cost
// model: each scenario once, or once per seed of -seeds.
func testEstimate(o testOptions, scs []*scenarios.Scenario) string {
	sessions := scs
	if o.seedsSet {
		sessions = nil
		for range o.seeds {
			sessions = append(sessions, scs...)
		}
	}
	model := estimate.Native
	if o.exact {
		model = estimate.Exact
	}
	return model.Line(sessions, o.parallel)
}

// exactOpener opens the runner of exact sessions and returns what releases
// it; the tests hand one they share between runs.
type exactOpener func(ctx context.Context, root string, log io.Writer) (*exact.Runner, func(), error)

// openExact builds and compiles the guest (cached after the first time).
func openExact(ctx context.Context, root string, log io.Writer) (*exact.Runner, func(), error) {
	r, err := exact.Open(ctx, exact.Options{Root: root, Log: log})
	if err != nil {
		return nil, nil, err
	}
	return r, func() { r.Close(context.Background()) }, nil
}

// testMain is lab test from the command line; it returns the exit status.
func testMain(args []string, stdout, stderr io.Writer) int {
	return labTest(context.Background(), args, stdout, stderr, openExact)
}

// labTest runs lab test and returns its exit status: 0 all met, 1 an
// expectation not met or a session that did not run, 2 bad input.
func labTest(ctx context.Context, args []string, stdout, stderr io.Writer, open exactOpener) int {
	o, err := parseTest(args, stderr)
	var usage usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "lab test:", usage)
		return 2
	case err != nil:
		return 2 // the flag package said what, with the usage
	}
	root, err := workRoot()
	if err != nil {
		fmt.Fprintln(stderr, "lab test:", err)
		return 1
	}
	scs, err := filetest.Load(o.paths, o.defaults)
	if err != nil {
		n := printLoadErrors(stderr, err)
		fmt.Fprintf(stderr, "lab test: %d %s in the scenario files: nothing ran\n", n, plural(n, "mistake", "mistakes"))
		return 2
	}
	fmt.Fprintln(stdout, testEstimate(o, scs))
	began := time.Now()
	var outcomes []filetest.Outcome
	if o.exact {
		outcomes, err = runExactThenNative(ctx, root, o, scs, stdout, stderr, open)
	} else {
		outcomes, err = runNativeFiles(root, o, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "lab test:", err)
		return 1
	}
	verdicts := make([]filetest.Verdict, len(outcomes))
	for i, oc := range outcomes {
		verdicts[i] = filetest.Judge(oc)
	}
	summary := filetest.Summary(outcomes, verdicts)
	fmt.Fprintf(stdout, "\n%s", summary)
	if err := writeTestOutputs(o, outcomes, verdicts, summary); err != nil {
		fmt.Fprintln(stderr, "lab test:", err)
		return 1
	}
	mode := "exact"
	switch {
	case !o.exact:
		mode = "natively, in worker processes"
	case slices.ContainsFunc(scs, exact.NativeOnly):
		mode = "exact, and natively in worker processes what only a native process can run"
	}
	fmt.Fprintf(stdout, "ran %s in %.1f s wall; results, summary.md, report.md and report.html in %s\n", mode, time.Since(began).Seconds(), o.out)
	if o.junit != "" {
		fmt.Fprintf(stdout, "JUnit XML: %s\n", o.junit)
	}
	for _, v := range verdicts {
		if !v.Status.OK() {
			return 1
		}
	}
	return 0
}

// printLoadErrors prints every loader mistake on a line of its own and
// returns how many there were.
func printLoadErrors(w io.Writer, err error) int {
	list := scenarios.Errors(err)
	if len(list) == 0 {
		fmt.Fprintln(w, err)
		return 1
	}
	for _, e := range list {
		fmt.Fprintln(w, e)
	}
	return len(list)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// runExactThenNative runs the sessions exact, but those of scenarios only
// a native process can run (exact.Supports: the real encoder, QUIC's ECN),
// which run natively in worker processes afterwards, as the jobs do.
func runExactThenNative(ctx context.Context, root string, o testOptions, scs []*scenarios.Scenario, stdout, stderr io.Writer, open exactOpener) ([]filetest.Outcome, error) {
	var exactOnes []*scenarios.Scenario
	var nativeFiles, nativeNames []string
	for _, sc := range scs {
		if !exact.NativeOnly(sc) {
			exactOnes = append(exactOnes, sc)
		} else if !slices.Contains(nativeFiles, sc.File) {
			nativeFiles, nativeNames = append(nativeFiles, sc.File), append(nativeNames, sc.Name)
		}
	}
	if len(nativeFiles) == 0 {
		return runExactFiles(ctx, root, o, scs, stdout, stderr, open)
	}
	fmt.Fprintf(stderr, "lab test: %s only a native process can run (%s): natively, in worker processes, after the exact sessions\n",
		plural(len(nativeNames), "1 scenario", fmt.Sprintf("%d scenarios", len(nativeNames))), strings.Join(nativeNames, ", "))
	var out []filetest.Outcome
	if len(exactOnes) > 0 {
		var err error
		if out, err = runExactFiles(ctx, root, o, exactOnes, stdout, stderr, open); err != nil {
			return nil, err
		}
	}
	native := o
	native.paths = nativeFiles
	more, err := runNativeFiles(root, native, stdout, stderr)
	return append(out, more...), err
}

// runExactFiles runs the sessions exact, in this process.
func runExactFiles(ctx context.Context, root string, o testOptions, scs []*scenarios.Scenario, stdout, stderr io.Writer, open exactOpener) ([]filetest.Outcome, error) {
	fmt.Fprintln(stderr, "lab test: preparing exact sessions (in a checkout, the first run builds the WebAssembly guest, about a minute; a new guest is compiled to machine code once, then cached)")
	r, release, err := open(ctx, root, stderr)
	if err != nil {
		return nil, err
	}
	defer release()
	sessions, err := jobs.RunExact(ctx, jobs.Plan{
		Scenarios: scs, Seeds: o.seeds, Parallel: o.parallel, Exact: r,
		Finished: func(s jobs.Session, done, total int) {
			oc := filetest.FromSession(s)
			fmt.Fprint(stdout, filetest.ProgressLine(oc, filetest.Judge(oc), done, total))
		},
	})
	if err != nil {
		return nil, err
	}
	out := make([]filetest.Outcome, len(sessions))
	for i, s := range sessions {
		out[i] = filetest.FromSession(s)
	}
	return out, nil
}

// runNativeFiles runs the sessions in worker processes through the job's
// entry point (lab/jobs/files_job_test.go), which prints the progress and
// hands the sessions back in a file.
func runNativeFiles(root string, o testOptions, stdout, stderr io.Writer) ([]filetest.Outcome, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "latencylab-test-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	sessionsFile := filepath.Join(tmp, "sessions.jsonl")
	jobArgs := []string{"-files-out=" + sessionsFile, "-dir=" + wd, "-parallel=" + strconv.Itoa(o.parallel)}
	if o.defaults != "" {
		jobArgs = append(jobArgs, "-defaults="+o.defaults)
	}
	if o.seedsSet {
		jobArgs = append(jobArgs, "-seeds="+o.seedsFlag)
	}
	jobArgs = append(append(jobArgs, "--"), o.paths...)
	job, err := jobCommand("test", "TestFiles", jobArgs)
	if err != nil {
		return nil, err
	}
	if err := goTest("test", job, stdout, stderr); err != nil {
		return nil, err
	}
	return readOutcomes(sessionsFile)
}

// readOutcomes reads the sessions the native job wrote.
func readOutcomes(file string) ([]filetest.Outcome, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("the job wrote no sessions: %w", err)
	}
	defer f.Close()
	var out []filetest.Outcome
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var oc filetest.Outcome
		err := dec.Decode(&oc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the job's sessions (%s): %w", file, err)
		}
		out = append(out, oc)
	}
}

// lineFilter passes whole lines to w but those drop refuses.
type lineFilter struct {
	w    io.Writer
	drop func(line []byte) bool
	buf  []byte
}

func (f *lineFilter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.buf[:i+1]
		if !f.drop(line) {
			if _, err := f.w.Write(line); err != nil {
				return len(p), err
			}
		}
		f.buf = f.buf[i+1:]
	}
}

// Flush writes a last line without its newline.
func (f *lineFilter) Flush() {
	if len(f.buf) > 0 {
		f.w.Write(f.buf)
		f.buf = nil
	}
}

// resultName is a session's result file: NAME.json, or NAME-seedN.json
// when the run names its seeds (a scenario then runs at several).
func resultName(oc filetest.Outcome, seeded bool) string {
	if seeded {
		return fmt.Sprintf("%s-seed%d.json", oc.Scenario, oc.Seed)
	}
	return oc.Scenario + ".json"
}

// writeTestOutputs writes the result JSONs, summary.md, the report and
// the JUnit XML.
func writeTestOutputs(o testOptions, outcomes []filetest.Outcome, verdicts []filetest.Verdict, summary string) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	var entries []reportEntry
	for _, oc := range outcomes {
		if oc.Result == nil {
			continue
		}
		file := filepath.Join(o.out, resultName(oc, o.seedsSet))
		// Named as the progress and the summary name them; names are
		// unique, and so are a scenario's seeds.
		e := reportEntry{file: file, result: oc.Result, label: oc.Scenario}
		if o.seedsSet {
			e.label = fmt.Sprintf("%s seed %d", oc.Scenario, oc.Seed)
		}
		e.slug = slug(e.label)
		entries = append(entries, e)
	}
	// Written on every core: the library's results are 90 MB of JSON.
	if err := onEveryCore(len(entries), func(i int) error { return result.Write(entries[i].file, entries[i].result) }); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "summary.md"), []byte(summary), 0o644); err != nil {
		return err
	}
	doc, err := testReport(entries, outcomes, verdicts, o.paths)
	if err != nil {
		return err
	}
	if err := render.Write(o.out, "report", doc); err != nil {
		return err
	}
	if o.junit == "" {
		return nil
	}
	if dir := filepath.Dir(o.junit); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(o.junit)
	if err != nil {
		return err
	}
	if err := filetest.JUnit(f, "lab test", outcomes, verdicts); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// testReport is lab report's document of the results, with the sessions
// that gave none listed after the summary.
func testReport(entries []reportEntry, outcomes []filetest.Outcome, verdicts []filetest.Verdict, paths []string) (*render.Doc, error) {
	origin := "Written by `lab test` from " + strings.Join(quoteAll(paths), ", ") + "."
	doc := &render.Doc{Title: "Latency lab report", Intro: []string{"No session gave a result.", origin}}
	if len(entries) > 0 {
		var err error
		if doc, err = reportDoc(entries, origin); err != nil {
			return nil, err
		}
	}
	missing := render.Table{Caption: "Why each session gave no result", Header: []string{"scenario", "seed", "status", "why"}}
	for i, oc := range outcomes {
		if oc.Result == nil {
			v := verdicts[i]
			missing.Rows = append(missing.Rows, []string{oc.Scenario, fmt.Sprint(oc.Seed), string(v.Status), v.Why})
		}
	}
	if len(missing.Rows) > 0 {
		s := render.Section{Heading: "Sessions without a result", Tables: []render.Table{missing}}
		// After the summary, where a reader looks first.
		at := min(1, len(doc.Sections))
		doc.Sections = append(doc.Sections[:at], append([]render.Section{s}, doc.Sections[at:]...)...)
	}
	return doc, nil
}
