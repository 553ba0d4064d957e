package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A job's go test command becomes a build of its test binary and a run of
// it with the same test flags, each in its test. form, and the job's own
// arguments as given.
func TestJobRunTakesTheCommandApart(t *testing.T) {
	goArgs, err := sweepCommand([]string{"-threshold", "30ms", "-scenarios", "abr-lossy", "-out", "res"}, &bytes.Buffer{})
	require.NoError(t, err)
	j, err := parseJobRun(goArgs)
	require.NoError(t, err)
	root, err := moduleRoot()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "lab", "jobs"), j.dir)
	require.Equal(t, []string{"-tags", "jobs"}, j.build)
	require.Equal(t, []string{"-test.run=^TestSweep$", "-test.count=1", "-test.timeout=0"}, j.test)
	require.Equal(t, "-threshold=30ms", j.args[0])
	require.Equal(t, goArgs[len(goArgs)-len(j.args):], j.args, "what follows -args, untouched")

	j, err = parseJobRun([]string{"test", "-C", "d", "-v", "-run=^X$", "-args", "-v"})
	require.NoError(t, err)
	require.Equal(t, []string{"-test.v=true", "-test.run=^X$"}, j.test)
	require.Equal(t, []string{"-v"}, j.args)

	for _, bad := range [][]string{
		{"test", "-C", "d", "-race", "-args"},
		{"test", "-run", "^X$"},
		{"test", "-C"},
		{"version"},
	} {
		_, err := parseJobRun(bad)
		require.Error(t, err, "%q", bad)
	}
}
