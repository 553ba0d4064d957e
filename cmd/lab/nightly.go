package main

import (
	"bytes"
	"os"

	"errors"
	"flag"
	"fmt"
	"github.com/nuvirahub/latencylab/lab/filetest"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/scenarios"
)

// nightlyCmd runs the nightly regression run (lab nightly) or accepts its
// runs as the new baseline (lab accept). The sessions need
// testing/synctest bubbles, which only a test can make, so it starts the
// job's entry point with go test (lab/jobs/nightly_job_test.go) and
// streams its progress and report; go test's exit status is the nightly's.
func nightlyCmd(name string, args []string, stdout, stderr io.Writer) error {
	job, err := nightlyCommand(name, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed: asking for it is no failure
	}
	if err != nil {
		return err
	}
	return goTest(name, job, stdout, stderr)
}

// jobFlags is a job's flag set: the flags are checked here, so that a typo
// fails at once rather than after a build, then handed to the job as
// given, paths made absolute (go test runs in lab/jobs).
type jobFlags struct {
	fs    *flag.FlagSet
	paths []string // flags holding paths
	// files lets the job take scenario files and folders after the
	// flags (a team's own, as lab test takes them), instead of the
	// library's; they are loaded here, so that a mistake in one is told
	// before any session runs.
	files bool
}

func newJobFlags(name, usage string, stderr io.Writer) *jobFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return &jobFlags{fs: fs}
}

func (j *jobFlags) path(name, value, usage string) {
	j.fs.String(name, value, usage)
	j.paths = append(j.paths, name)
}

// parse parses args, checks them with check, and writes back the flags
// given on the command line as the job's arguments.
func (j *jobFlags) parse(args []string, check func(get func(string) string) error) ([]string, error) {
	if err := j.fs.Parse(args); err != nil {
		return nil, err
	}
	if j.fs.NArg() > 0 && !j.files {
		return nil, fmt.Errorf("%s: unexpected argument %q", j.fs.Name(), j.fs.Arg(0))
	}
	get := func(name string) string { return j.fs.Lookup(name).Value.String() }
	if err := check(get); err != nil {
		return nil, fmt.Errorf("%s: %w", j.fs.Name(), err)
	}
	files, err := j.checkFiles(get)
	if err != nil {
		return nil, err
	}
	var out []string
	j.fs.Visit(func(f *flag.Flag) {
		v := f.Value.String()
		for _, p := range j.paths {
			if p == f.Name && v != "" {
				if v, err = filepath.Abs(v); err != nil {
					return
				}
			}
		}
		out = append(out, "-"+f.Name+"="+v)
	})
	return append(out, files...), err
}

// checkFiles loads the scenario files given after the flags, if any, and
// returns the job's arguments that name them: the working folder (-dir),
// which their paths are relative to, then the paths.
func (j *jobFlags) checkFiles(get func(string) string) ([]string, error) {
	if j.fs.NArg() == 0 {
		return nil, nil
	}
	if get("group") != "" || get("scenario") != "" {
		return nil, fmt.Errorf("%s: -group and -scenario pick from the library: with scenario files, name the files or folders to run instead", j.fs.Name())
	}
	if _, err := filetest.Load(j.fs.Args(), get("defaults")); err != nil {
		return nil, fmt.Errorf("%s: the scenario files: %w", j.fs.Name(), err)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return append([]string{"-dir=" + wd, "--"}, j.fs.Args()...), nil
}

// fileFlags lets the job take scenario files (jobFlags.files), with the
// -defaults flag lab test has.
func (j *jobFlags) fileFlags() {
	j.files = true
	j.path("defaults", "", "with scenario files: the defaults file of every one (default: each folder's defaults.yaml, else the library's)")
}

// given tells whether the flag was on the command line.
func (j *jobFlags) given(name string) bool {
	found := false
	j.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// checkSelection checks -group and -scenario against the library.
func checkSelection(group, scenario string) error {
	var names []string
	for _, n := range strings.Split(scenario, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	_, err := jobspec.Select(group, names)
	return err
}

func checkSeeds(s string) error {
	if s == "" {
		return nil
	}
	_, err := jobspec.ParseSeeds(s)
	return err
}

func configHelp() string {
	var b strings.Builder
	for _, n := range jobspec.NamedConfigs {
		fmt.Fprintf(&b, "  %-21s %s\n", n.Name, n.Doc)
	}
	return b.String()
}

// nightlyCommand checks the flags of lab nightly or lab accept and returns
// its job.
func nightlyCommand(name string, args []string, stderr io.Writer) (jobRun, error) {
	accept := name == "accept"
	var usage string
	if accept {
		usage = `usage: lab accept [flags] [FILE|DIR...]

Runs the nightly (the library as written, every seed) and writes its runs'
evidence as the new baseline in testdata/baselines, to be committed: after
an intended change, or to guard an improvement. With -group or -scenario it
replaces only those scenarios' baselines. A baseline names the commit its
runs were made from, so accept refuses a work tree with uncommitted changes:
commit the change, accept, then commit testdata/baselines.

Scenario files or folders after the flags (a team's own, as lab test takes
them) replace the library; their baselines' default folder is then
baselines, in the working folder.

flags:
`
	} else {
		usage = `usage: lab nightly [flags] [FILE|DIR...]

Runs the scenario library with several seeds, compares every scenario with
its baseline (testdata/baselines), writes report.md and report.html, and
exits non-zero on a regression or a failed session, listing each with its
evidence. A regression needs both: the bootstrap interval of the difference
(runs resampled, then frames) excludes 0, and the difference reaches the
practical minimum (latency: max(2 ms, 5%)). -variant runs a configuration
against the baseline instead of the code as written. Scenario files or
folders after the flags (a team's own, as lab test takes them) replace the
library; their baselines' default folder is then baselines, in the working
folder. Configurations:

` + configHelp() + `
flags:
`
	}
	j := newJobFlags(name, usage, stderr)
	j.fs.String("seeds", "", "seeds, comma-separated (default 1,2,3, the baseline's)")
	j.path("baseline", "", "the baselines' folder (default testdata/baselines; with scenario files, baselines)")
	j.path("out", "", "the report's folder (default out/nightly)")
	j.fs.String("group", "", "run one group of the library: "+strings.Join(scenarios.Groups, ", "))
	j.fs.String("scenario", "", "run these scenarios of the library, comma-separated")
	j.fs.String("parallel", "0", "sessions at once; 0 is every core")
	j.fs.Bool("exact", false, exactUsage)
	j.fileFlags()
	if accept {
		j.fs.Bool("allow-dirty", false, "accept from a work tree with uncommitted changes (the baselines then name a commit with -dirty, which no checkout has)")
	} else {
		j.fs.String("variant", jobspec.AsWritten, "the configuration to run against the baseline: a name above, key=value settings, or both")
	}
	jobArgs, err := j.parse(args, func(get func(string) string) error {
		if err := checkSeeds(get("seeds")); err != nil {
			return err
		}
		if !accept {
			if _, err := jobspec.Parse(get("variant")); err != nil {
				return err
			}
		}
		return checkSelection(get("group"), get("scenario"))
	})
	if err != nil {
		return jobRun{}, err
	}
	if accept {
		// First: scenario files, if any, end the arguments.
		jobArgs = append([]string{"-accept"}, jobArgs...)
	}
	return jobCommand(name, "TestNightly", jobArgs)
}

// exactUsage is the -exact flag's help for the nightly and compare.
const exactUsage = "run every session exact (lab/exact): the same result from any run or machine, about 10x slower; otherwise in native worker processes, where a few sessions in a hundred differ from run to run"

// jobCommand is the job that runs test of package entry with the job's
// arguments, from the working folder's root (workRoot).
func jobCommand(name, test string, jobArgs []string) (jobRun, error) {
	root, err := workRoot()
	if err != nil {
		return jobRun{}, fmt.Errorf("%s: %w", name, err)
	}
	return jobRun{root: root, test: test, args: jobArgs}, nil
}

// goTest runs a job, its output streamed, as go test would run it
// (jobRun says where).
func goTest(name string, j jobRun, stdout, stderr io.Writer) error {
	// go test's own closing lines (PASS, ok) say nothing here: the job
	// has printed its summary.
	filter := &lineFilter{w: stdout, drop: func(line []byte) bool {
		return string(line) == "PASS\n" || bytes.HasPrefix(line, []byte("ok  \t"))
	}}
	err := j.run(filter, stderr)
	filter.Flush()
	if errors.Is(err, errJobBuild) {
		return fmt.Errorf("%s: %w", name, err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%s: the job failed (%w): the regressions or failed sessions are above", name, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
