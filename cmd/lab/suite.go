package main

import (
	"errors"
	"flag"
	"io"
	"strings"

	"github.com/nuvirahub/latencylab/lab/jobs/entry"
	"github.com/nuvirahub/latencylab/scenarios"
)

// suiteCmd runs the scenario library as make suite does (lab suite), in
// the jobs' worker processes: the main job, from a lab binary alone.
func suiteCmd(args []string, stdout, stderr io.Writer) error {
	job, err := suiteCommand(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	return goTest("suite", job, stdout, stderr)
}

// suiteCommand checks lab suite's flags and returns its job.
func suiteCommand(args []string, stderr io.Writer) (jobRun, error) {
	j := newJobFlags("suite", `usage: lab suite [flags]

Runs the scenario library built into lab, each scenario once at its own
seed, natively in worker processes on every core, as make suite does: a
line per scenario as it finishes, the summary table, and a result folder (a
JSON file per scenario, summary.md, and in the lab's checkout
reproduction.md). It exits non-zero when an expectation is not met or a
scenario does not run; a scenario that replays ../shared's traces is
skipped, saying so, where that folder is absent.

flags:
`, stderr)
	j.path("out", "", "the result folder (default "+entry.DefaultSuiteOut+")")
	j.fs.String("group", "", "run one group of the library: "+strings.Join(scenarios.Groups, ", "))
	j.fs.String("scenario", "", "run these scenarios of the library, comma-separated")
	j.fs.String("parallel", "0", "sessions at once; 0 is every core")
	jobArgs, err := j.parse(args, func(get func(string) string) error {
		return checkSelection(get("group"), get("scenario"))
	})
	if err != nil {
		return jobRun{}, err
	}
	return jobCommand("suite", "TestSuite", jobArgs)
}
