package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// goArgs is a job's go test command, for the tests that pin it.
func goArgs(j jobRun, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return j.goArgs(), nil
}

// A job runs its test binary with the test flags its go test command
// gives the binary, each in its test. form, and the job's own arguments
// as given after -root, in lab/jobs.
func TestJobRunIsItsGoTestCommand(t *testing.T) {
	j, err := sweepCommand([]string{"-threshold", "30ms", "-scenarios", "abr-lossy", "-out", "res"}, &bytes.Buffer{})
	require.NoError(t, err)
	root, err := moduleRoot()
	require.NoError(t, err)
	require.Equal(t, root, j.root, "in the checkout, the module's root")
	args := j.goArgs()
	require.Equal(t, []string{"test", "-C", filepath.Join(root, "lab", "jobs"), "-tags", "jobs", "-run", "^TestSweep$", "-count=1", "-timeout", "0", "-args"}, args[:11])
	require.Equal(t, []string{"-test.run=^TestSweep$", "-test.count=1", "-test.timeout=0"}, j.testFlags(),
		"the binary's flags are go test's -run, -count and -timeout")
	require.Equal(t, "-root="+root, args[11])
	require.Equal(t, "-threshold=30ms", j.args[0])
	require.Equal(t, args[12:], j.args, "what follows -args and -root, untouched")
}

// Outside the checkout a job's root is the working folder, where a team's
// own scenarios, baselines and reports are.
func TestJobRootOutsideTheCheckoutIsTheWorkingFolder(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	j, err := jobCommand("nightly", "TestNightly", nil)
	require.NoError(t, err)
	require.Equal(t, dir, j.root)
	require.NotEqual(t, fromSource, processFor(j.root), "no source to build a job from")
}
