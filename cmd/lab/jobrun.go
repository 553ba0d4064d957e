package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"

	"github.com/nuvirahub/latencylab/internal/testbin"
)

// jobRun is a job of the lab: a test of lab/jobs (its entry point: the
// sessions need testing/synctest, which only a test can use) and the
// job's own arguments.
//
// It runs as go test -tags jobs -run ^TEST$ -count=1 -timeout 0 -args ARGS
// would, in lab/jobs (goArgs), but not through go test, which links the
// test binary again on every run: 3-7 s for lab/jobs on 2 cores, warm
// cache, and every lab nightly, accept, compare, sweep, tune and test
// starts a job, a cluster's shards one each. internal/testbin keeps the
// binary and links it again only when its source changed.
type jobRun struct {
	dir  string   // lab/jobs, where the binary runs
	test string   // the entry point: TestNightly, TestSweep, ...
	args []string // the job's arguments, after -args
}

// jobTags is the build tag of the jobs' entry points.
const jobTags = "jobs"

// goArgs is the go test command the job is equivalent to. -timeout 0:
// the library with many seeds, or a large sweep, runs longer than go
// test's ten minutes on a small machine.
func (j jobRun) goArgs() []string {
	return append([]string{"test", "-C", j.dir, "-tags", jobTags, "-run", "^" + j.test + "$", "-count=1", "-timeout", "0", "-args"}, j.args...)
}

// testFlags are the binary's flags of goArgs's go test flags.
func (j jobRun) testFlags() []string {
	return []string{"-test.run=^" + j.test + "$", "-test.count=1", "-test.timeout=0"}
}

// errJobBuild marks a job whose test binary did not build.
var errJobBuild = errors.New("building the job")

// run builds the job's test binary (internal/testbin: linked again only
// when its source changed) and runs it in the job's folder, as go test
// would, its output streamed. A build that fails returns an error that is
// errJobBuild, with the go command's output.
func (j jobRun) run(stdout, stderr io.Writer) error {
	bin, remove, err := testbin.Build(context.Background(), j.dir, []string{"-tags", jobTags}, nil, testbin.Options{})
	if err != nil {
		return fmt.Errorf("%w: %w", errJobBuild, err)
	}
	defer remove()
	cmd := exec.Command(bin, append(j.testFlags(), j.args...)...)
	cmd.Dir = j.dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}
