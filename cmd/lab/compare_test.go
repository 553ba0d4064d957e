package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// lab compare with -a-results and -b-results judges result files without
// running a session (and without go test): x11vnc against Xvnc from lab
// vnc's worked example.
func TestCompareResultFiles(t *testing.T) {
	vnc := filepath.Join("..", "..", "testdata", "vnc")
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := compareCmd([]string{
		"-a-results", filepath.Join(vnc, "*-x11vnc-hextile-*.json"),
		"-b-results=" + filepath.Join(vnc, "*-xvnc-hextile-*.json"),
		"-out", out,
	}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	require.Contains(t, stdout.String(), "xvnc-hextile against x11vnc-hextile: ")
	require.FileExists(t, filepath.Join(out, "report.html"))

	require.True(t, resultsGiven([]string{"--b-results", "x"}))
	require.False(t, resultsGiven([]string{"-b", "old-pipeline", "-scenario", "a-results"}))
	err = compareCmd([]string{"-a-results", filepath.Join(vnc, "*.json")}, &stdout, &stderr)
	require.EqualError(t, err, "compare results needs both -a-results and -b-results")
	err = compareCmd([]string{"-a-results", "x", "-b", "old-pipeline"}, &stdout, &stderr)
	require.ErrorContains(t, err, "flag provided but not defined: -b")
}
