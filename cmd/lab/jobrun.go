package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/nuvirahub/latencylab/internal/testbin"
)

// jobRun is a job's go test command taken apart: what builds its test
// binary and what that binary is then run with.
//
// Why not go test itself: go test links the test binary again on every
// run (3-7 s for lab/jobs on 2 cores, warm cache), and every lab nightly,
// accept, compare, sweep, tune and test starts a job, a cluster's shards
// one each. internal/testbin keeps the binary and links it again only
// when its source changed.
type jobRun struct {
	dir   string   // -C: the package's folder, where the binary runs
	build []string // go test -c's flags (-tags)
	test  []string // the binary's flags (-test.run=...)
	args  []string // what follows -args, as given
}

// parseJobRun takes apart the arguments the job commands build
// (jobCommand, sweepCommand, tuneCmd): test, -C DIR, then go test's flags
// until -args. A flag it does not know is an error, not a guess: a new
// one must say whether it is a build flag or the binary's.
func parseJobRun(goArgs []string) (jobRun, error) {
	var j jobRun
	if len(goArgs) == 0 || goArgs[0] != "test" {
		return j, fmt.Errorf("not a go test command: %q", goArgs)
	}
	rest := goArgs[1:]
	value := func(name string) (string, error) {
		if len(rest) < 2 {
			return "", fmt.Errorf("go test %s: no value", name)
		}
		v := rest[1]
		rest = rest[2:]
		return v, nil
	}
	for len(rest) > 0 {
		flag := rest[0]
		if flag == "-args" {
			j.args = rest[1:]
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(flag, "-"), "=")
		if !hasVal && name != "v" {
			var err error
			if val, err = value(flag); err != nil {
				return j, err
			}
		} else {
			rest = rest[1:]
		}
		switch name {
		case "C":
			j.dir = val
		case "tags":
			j.build = append(j.build, "-tags", val)
		case "run", "count", "timeout":
			j.test = append(j.test, "-test."+name+"="+val)
		case "v":
			j.test = append(j.test, "-test.v=true")
		default:
			return j, fmt.Errorf("go test flag %s: the job runner does not know whether it builds or runs", flag)
		}
	}
	if j.dir == "" {
		return j, fmt.Errorf("go test %q: no -C folder", goArgs)
	}
	return j, nil
}

// errJobBuild marks a job whose test binary did not build.
var errJobBuild = errors.New("building the job")

// run builds the job's test binary (internal/testbin: linked again only
// when its source changed) and runs it in the job's folder, as go test
// would, its output streamed. A build that fails returns an error that is
// errJobBuild, with the go command's output.
func (j jobRun) run(stdout, stderr io.Writer) error {
	bin, remove, err := testbin.Build(context.Background(), j.dir, j.build, nil, testbin.Options{})
	if err != nil {
		return fmt.Errorf("%w: %w", errJobBuild, err)
	}
	defer remove()
	cmd := exec.Command(bin, append(append([]string{}, j.test...), j.args...)...)
	cmd.Dir = j.dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd.Run()
}
