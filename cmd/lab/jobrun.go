package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/nuvirahub/latencylab/internal/testbin"
	"github.com/nuvirahub/latencylab/lab/jobs/entry"
	"github.com/nuvirahub/latencylab/lab/sessionproc"
)

// jobRun is a job of the lab: one of package entry's tests (a session
// needs testing/synctest, which only a test can use) and the job's own
// arguments, run in a process of its own as go test would run it:
//
//	go test -C lab/jobs -tags jobs -run ^TEST$ -count=1 -timeout 0 -args -root ROOT ARGS
//
// That process is one of two (jobProcess). A lab built as make dist
// builds it is a test binary (it seeds crypto/rand as go test's do) and
// carries the jobs: it starts a copy of itself, with entry.Env naming the
// job, and needs neither the go command nor the source. A lab built
// plainly (go run ./cmd/lab) cannot seed, so in a checkout with the go
// command it runs lab/jobs's test binary instead, built by
// internal/testbin (linked again only when its source changed: go test
// links on every run, 3-7 s on 2 cores). Without both, it runs itself,
// unseeded, and says so.
type jobRun struct {
	root string   // -root: the module's root in a checkout, else the working folder
	test string   // the entry point: TestNightly, TestSweep, ...
	args []string // the job's arguments
}

// jobTags is the build tag of lab/jobs's entry points.
const jobTags = "jobs"

// goArgs is the go test command the job is equivalent to. -timeout 0:
// the library with many seeds, or a large sweep, runs longer than go
// test's ten minutes on a small machine.
func (j jobRun) goArgs() []string {
	return append([]string{"test", "-C", jobsDir(j.root), "-tags", jobTags, "-run", "^" + j.test + "$", "-count=1", "-timeout", "0", "-args"}, j.jobArgs()...)
}

// testFlags are the binary's flags of goArgs's go test flags.
func (j jobRun) testFlags() []string {
	return []string{"-test.run=^" + j.test + "$", "-test.count=1", "-test.timeout=0"}
}

// jobArgs are the job's arguments, -root first.
func (j jobRun) jobArgs() []string { return append([]string{"-root=" + j.root}, j.args...) }

// errJobBuild marks a job whose test binary did not build.
var errJobBuild = errors.New("building the job")

// jobProcess is where a job runs.
type jobProcess int

const (
	selfSeeded   jobProcess = iota // this lab binary, a test binary: seeded
	fromSource                     // lab/jobs's test binary, built from the checkout
	selfUnseeded                   // this lab binary, unseeded: neither of the above
)

// processFor chooses the job's process: seeded wherever it can be.
func processFor(root string) jobProcess {
	if sessionproc.Seeded() {
		return selfSeeded
	}
	if isModuleRoot(root) {
		if _, err := exec.LookPath("go"); err == nil {
			return fromSource
		}
	}
	return selfUnseeded
}

// run runs the job in its process (processFor), its output streamed. A
// build that fails returns an error that is errJobBuild, with the go
// command's output.
func (j jobRun) run(stdout, stderr io.Writer) error {
	var cmd *exec.Cmd
	if processFor(j.root) == fromSource {
		bin, remove, err := testbin.Build(context.Background(), jobsDir(j.root), []string{"-tags", jobTags}, nil, testbin.Options{})
		if err != nil {
			return fmt.Errorf("%w: %w", errJobBuild, err)
		}
		defer remove()
		cmd = exec.Command(bin, append(j.testFlags(), j.jobArgs()...)...)
		cmd.Dir = jobsDir(j.root)
	} else {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd = exec.Command(exe, append(j.testFlags(), j.jobArgs()...)...)
		cmd.Env = append(os.Environ(), entry.Env+"="+j.test)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}

// workRoot is the folder a job's relative paths are resolved against (its
// -root): the module's root in the lab's checkout, where the defaults
// (testdata/baselines, out/nightly) are the checkout's, else the working
// folder.
func workRoot() (string, error) {
	if root, err := moduleRoot(); err == nil {
		return root, nil
	}
	return os.Getwd()
}

// isModuleRoot reports whether dir is the lab's module root.
func isModuleRoot(dir string) bool {
	root, err := moduleRoot()
	return err == nil && filepath.Clean(root) == filepath.Clean(dir)
}

// jobsDir is the folder of lab/jobs, whose test binary runs a checkout's
// jobs.
func jobsDir(root string) string { return filepath.Join(root, "lab", "jobs") }
