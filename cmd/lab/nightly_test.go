package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The commands hand go test the job's entry point with the flags given,
// paths made absolute, and nothing else.
func TestNightlyCommand(t *testing.T) {
	args, err := goArgs(nightlyCommand("nightly", []string{"-seeds", "1,2", "-out", "o", "-variant", "old-pipeline", "-group", "pipeline"}, &bytes.Buffer{}))
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Dir(filepath.Dir(wd))
	require.Equal(t, []string{"test", "-C", filepath.Join(root, "lab", "jobs"), "-tags", "jobs", "-run", "^TestNightly$", "-count=1", "-timeout", "0", "-args", "-root=" + root,
		"-group=pipeline", "-out=" + filepath.Join(wd, "o"), "-seeds=1,2", "-variant=old-pipeline"}, args)

	args, err = goArgs(nightlyCommand("accept", []string{"-scenario", "lan-animation"}, &bytes.Buffer{}))
	require.NoError(t, err)
	require.Equal(t, []string{"-root=" + root, "-accept", "-scenario=lan-animation"}, args[len(args)-3:])
	args, err = goArgs(nightlyCommand("accept", []string{"-allow-dirty"}, &bytes.Buffer{}))
	require.NoError(t, err)
	require.Equal(t, []string{"-root=" + root, "-accept", "-allow-dirty=true"}, args[len(args)-3:], "accepting from a dirty tree only when told")

	args, err = goArgs(nightlyCommand("nightly", []string{"-exact"}, &bytes.Buffer{}))
	require.NoError(t, err)
	require.Equal(t, "-exact=true", args[len(args)-1], "exact sessions on request")

	args, err = goArgs(compareCommand([]string{"-b", "threshold=80ms", "-scenario", "abr-lossy"}, &bytes.Buffer{}))
	require.NoError(t, err)
	require.Equal(t, []string{"-run", "^TestCompare$"}, args[5:7])
	require.Equal(t, []string{"-a=as-written", "-b=threshold=80ms", "-scenario=abr-lossy"}, args[len(args)-3:])
}

func TestNightlyCommandRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"nightly", []string{"-seeds", "1,x"}, `nightly: seeds "1,x": "x" is not a seed`},
		{"nightly", []string{"-variant", "old-pipelin"}, `nightly: configuration "old-pipelin": unknown configuration "old-pipelin" (did you mean old-pipeline?)`},
		{"nightly", []string{"-group", "lans"}, `nightly: no group "lans" (did you mean lan?)`},
		{"accept", []string{"-variant", "old-pipeline"}, "flag provided but not defined: -variant"},
		{"nightly", []string{"-allow-dirty"}, "flag provided but not defined: -allow-dirty"},
		{"nightly", []string{"extra"}, `nightly: the scenario files: extra: no such file or folder`},
		{"nightly", []string{"-group", "lan", "."}, "nightly: -group and -scenario pick from the library: with scenario files, name the files or folders to run instead"},
		{"compare", []string{"-a", "as-written"}, "compare: no -b"},
		{"compare", []string{"-b", "hold=1"}, "compare: -b: configuration \"hold=1\": hold: 1 is missing a unit"},
		{"compare", []string{"-b", "old-pipeline", "-scenario", "nope"}, `compare: no scenario "nope" in the library`},
	} {
		var stderr bytes.Buffer
		var err error
		if c.cmd == "compare" {
			_, err = compareCommand(c.args, &stderr)
		} else {
			_, err = nightlyCommand(c.cmd, c.args, &stderr)
		}
		require.ErrorContains(t, err, c.want, "%s %v", c.cmd, c.args)
	}
}

func TestNightlyUsage(t *testing.T) {
	var stderr bytes.Buffer
	_, err := nightlyCommand("nightly", []string{"-h"}, &stderr)
	require.Error(t, err)
	require.Contains(t, stderr.String(), "usage: lab nightly")
	require.Contains(t, stderr.String(), "old-pipeline")
	stderr.Reset()
	_, err = compareCommand([]string{"-h"}, &stderr)
	require.Error(t, err)
	require.Contains(t, stderr.String(), "Settings: the ABR's threshold, window")
	require.NoError(t, nightlyCmd("accept", []string{"-h"}, &bytes.Buffer{}, &stderr), "help is no failure")
	require.Contains(t, stderr.String(), "usage: lab accept")
	require.Contains(t, stderr.String(), "accept refuses a work tree with uncommitted changes")
	require.Contains(t, stderr.String(), "-allow-dirty")
}

// lab suite checks its selection before it starts the job.
func TestSuiteCommand(t *testing.T) {
	args, err := goArgs(suiteCommand([]string{"-group", "lan", "-out", "o"}, &bytes.Buffer{}))
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, []string{"-group=lan", "-out=" + filepath.Join(wd, "o")}, args[len(args)-2:])
	require.Contains(t, args, "^TestSuite$")
	_, err = suiteCommand([]string{"-group", "lans"}, &bytes.Buffer{})
	require.ErrorContains(t, err, `suite: no group "lans" (did you mean lan?)`)
	_, err = suiteCommand([]string{"extra"}, &bytes.Buffer{})
	require.ErrorContains(t, err, `suite: unexpected argument "extra"`)
}
