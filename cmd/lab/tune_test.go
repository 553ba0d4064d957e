package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The cluster's steps from the command line: -ask writes the first step,
// -status says it is pending, -tell refuses a step whose shards have not
// run; mistakes in the flags are named before anything is written.
func TestTuneAskStatusTell(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tune")
	var out, errOut bytes.Buffer
	require.NoError(t, tuneCmd([]string{"-ask", "-state", dir, "-scenarios", "abr-lossy,group:cellular", "-seeds", "1", "-validation-seeds", "2",
		"-params", "threshold,hold,min,max", "-generations", "2"}, &out, &errOut))
	require.Contains(t, out.String(), "tune started in "+dir+": pending: step 01-generation, its grid "+filepath.Join(dir, "pending", "grid.yaml"))
	grid, err := os.ReadFile(filepath.Join(dir, "pending", "grid.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(grid), "scenarios: [abr-lossy, cellular-att-driving, cellular-steady, cellular-verizon-lte, rmcat-cellular-bad-coverage, rmcat-cellular-varying-load]\n")
	require.Contains(t, string(grid), "  - {threshold: 60ms, hold: 1500ms, min: 500kbit/s, max: 20Mbit/s}\n")

	out.Reset()
	require.NoError(t, tuneCmd([]string{"-status", "-state", dir}, &out, &errOut))
	require.Contains(t, out.String(), "pending: step 01-generation")
	require.ErrorContains(t, tuneCmd([]string{"-tell", "-state", dir}, &out, &errOut), "no part files in")
	require.ErrorContains(t, tuneCmd([]string{"-ask", "-state", dir, "-scenarios", "abr-lossy"}, &out, &errOut), "already holds a tune")
	require.ErrorContains(t, tuneCmd([]string{"-status", "-state", t.TempDir()}, &out, &errOut), "no tune here")
}

// A folder stands for its scenario files, named as the module's root
// sees them.
func TestTuneReadsAFolderOfScenarios(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tune")
	var out, errOut bytes.Buffer
	require.NoError(t, tuneCmd([]string{"-ask", "-state", dir, "-scenarios", "docs/own-scenarios", "-seeds", "1", "-validation-seeds", "2"}, &out, &errOut))
	grid, err := os.ReadFile(filepath.Join(dir, "pending", "grid.yaml"))
	require.NoError(t, err)
	require.Contains(t, string(grid), "scenarios: [docs/own-scenarios/home-office.yaml, docs/own-scenarios/train-wifi.yaml]\n")
	require.ErrorContains(t, tuneCmd([]string{"-ask", "-state", filepath.Join(t.TempDir(), "x"), "-scenarios", "docs"}, &out, &errOut),
		"folder docs holds no scenario file")
}

func TestTuneRefusesBadFlags(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"unknown parameter": {[]string{"-params", "treshold"}, `-params: unknown parameter "treshold"`},
		"leaky seeds":       {[]string{"-scenarios", "abr-lossy", "-seeds", "1,2", "-validation-seeds", "2"}, "seed 2 is both a training and a validation seed"},
		"unknown group":     {[]string{"-scenarios", "group:Mobile"}, `-scenarios: group "Mobile": expected one of mobile`},
		"unknown scenario":  {[]string{"-scenarios", "abr-lossless"}, "scenario abr-lossless is not in the library"},
		"scripted bitrate":  {[]string{"-scenarios", "abr-lossy", "-held-out", "encoder-restart-fix"}, ""},
		"two modes":         {[]string{"-ask", "-tell"}, "-ask, -tell and -status are steps of their own"},
		"bad duration":      {[]string{"-scenarios", "abr-lossy", "-duration", "10"}, "-duration: 10 is missing a unit"},
		"no grid parts":     {[]string{"-scenarios", "abr-lossy", "-grid-parts", "/nowhere/*.json"}, "-grid-parts: /nowhere/*.json: no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := tuneCmd(append([]string{"-ask", "-state", filepath.Join(t.TempDir(), "x")}, c.args...), &out, &errOut)
			if c.want == "" {
				// A scenario whose bitrate is scripted has no ABR to tune.
				require.ErrorContains(t, err, "scripts its bitrate")
				return
			}
			require.ErrorContains(t, err, c.want)
		})
	}
}
