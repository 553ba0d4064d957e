package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/scenarios"
)

// compareCmd runs one scenario, a group or the library under two
// configurations and writes a report with plots and a verdict; like the
// nightly it runs under go test (lab/jobs/nightly_job_test.go).
func compareCmd(args []string, stdout, stderr io.Writer) error {
	if resultsGiven(args) {
		return compareResultsCmd(args, stdout, stderr)
	}
	job, err := compareCommand(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return goTest("compare", job, stdout, stderr)
}

// resultsGiven reports whether compare is asked to judge runs already
// made (-a-results, -b-results) rather than to run sessions.
func resultsGiven(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "a-results" || name == "b-results") {
			return true
		}
	}
	return false
}

// compareResultsCmd judges two sets of result files against each other
// without running a session: lab vnc's runs of two servers, or two
// folders of lab run -out. It needs no go test (nothing runs in a
// synctest bubble).
func compareResultsCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: lab compare -a-results FILES -b-results FILES [-out DIR]

Judges runs already made, B against A, as lab compare judges two
configurations: per scenario (runs pair by the scenario's name) and metric,
both sides with their intervals, the difference, plots and a verdict. FILES
is a comma-separated list of result files, folders or glob patterns, e.g.
x11vnc against Xvnc from lab vnc's folder:

  lab compare -a-results 'out/vnc/*-x11vnc-zrle-*.json' -b-results 'out/vnc/*-xvnc-zrle-*.json'

flags:
`)
		fs.PrintDefaults()
	}
	a := fs.String("a-results", "", "side A's result files, folders or patterns, comma-separated")
	b := fs.String("b-results", "", "side B's, judged against A")
	out := fs.String("out", jobs.DefaultCompareOut, "the report's folder")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("compare: unexpected argument %q", fs.Arg(0))
	}
	if *a == "" || *b == "" {
		return jobs.ErrNoResults
	}
	split := func(s string) []string { return strings.Split(s, ",") }
	run, err := jobs.CompareResults(jobs.CompareResultsOptions{A: split(*a), B: split(*b), Out: *out})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\nreport: %s\n", run.Verdict(), run.Report)
	return nil
}

// abrKeys are the settings of the ABR's rule.
func abrKeys() []string {
	var out []string
	for _, k := range jobspec.SettingKeys() {
		if k != "encoder" && k != "controller" && k != "frame_sizes" {
			out = append(out, k)
		}
	}
	return out
}

// compareCommand checks compare's flags and returns its job.
func compareCommand(args []string, stderr io.Writer) (jobRun, error) {
	j := newJobFlags("compare", `usage: lab compare -a CONFIG -b CONFIG [-scenario NAMES | -group GROUP] [flags] [FILE|DIR...]

Runs scenarios under two configurations with the same seeds and judges B
against A as the nightly judges new runs against the baseline: per scenario
and metric, both sides with their intervals, the difference with its
bootstrap interval, the Kolmogorov-Smirnov test, plots, and a verdict. A
configuration is a name, key=value settings, or a name then settings, e.g.
old-abr,hold=2s or threshold=80ms,decrease=25%. Names:

`+configHelp()+`
Settings: the ABR's `+strings.Join(abrKeys(), ", ")+`, with units
(threshold=80ms, decrease=25%); encoder=PRESET, a software encoder preset;
frame_sizes=calibrated or budget, how the H.264 model sizes frames (the
library's are budget: -b frame_sizes=calibrated gives OpenH264's sizes);
controller=abr or controller=gcc, the adaptive controller (the scenario's
initial bitrate and bounds, the kind's own defaults for the rest; before any
ABR setting): -a as-written -b controller=gcc sets GCC beside the ABR.

Without -scenario or -group the whole library runs (a configuration that
does not apply to a scenario leaves it out, saying why). Scenario files or
folders after the flags (a team's own, as lab test takes them) run instead.

flags:
`, stderr)
	j.fs.String("a", jobspec.AsWritten, "configuration A, the reference")
	j.fs.String("b", "", "configuration B, judged against A")
	j.fs.String("scenario", "", "scenarios of the library, comma-separated")
	j.fs.String("group", "", "a group of the library: "+strings.Join(scenarios.Groups, ", "))
	j.fs.String("seeds", "", "seeds, comma-separated (default 1,2,3)")
	j.path("out", "", "the report's folder (default out/compare)")
	j.fs.String("parallel", "0", "sessions at once; 0 is every core")
	j.fs.Bool("exact", false, exactUsage)
	j.fileFlags()
	jobArgs, err := j.parse(args, func(get func(string) string) error {
		if get("b") == "" {
			return errors.New("no -b: give the configuration to compare with -a, e.g. -b old-pipeline")
		}
		for _, side := range []string{"a", "b"} {
			if _, err := jobspec.Parse(get(side)); err != nil {
				return fmt.Errorf("-%s: %w", side, err)
			}
		}
		if err := checkSeeds(get("seeds")); err != nil {
			return err
		}
		return checkSelection(get("group"), get("scenario"))
	})
	if err != nil {
		return jobRun{}, err
	}
	// -a's default is as-written: pass it on even when not given, so the
	// job does not depend on its own default.
	if !j.given("a") {
		jobArgs = append([]string{"-a=" + jobspec.AsWritten}, jobArgs...)
	}
	return jobCommand("compare", "TestCompare", jobArgs)
}
