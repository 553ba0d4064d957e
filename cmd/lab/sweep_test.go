package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// lab sweep checks its flags itself and hands go test the job spelt out,
// with -out made absolute (the job runs in lab/jobs).
func TestSweepCommand(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	args, err := goArgs(sweepCommand([]string{"-threshold", "30ms,60ms", "-scenarios", "abr-lossy", "-shard", "2/3", "-out", "res", "-exact=false"}, &bytes.Buffer{}))
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, []string{"test", "-C", filepath.Join(root, "lab", "jobs"), "-tags", "jobs", "-run", "^TestSweep$", "-count=1", "-timeout", "0", "-args", "-root=" + root,
		"-threshold=30ms,60ms", "-scenarios=abr-lossy", "-seeds=", "-warmup=2s", "-shard=2/3", "-out=" + filepath.Join(wd, "res"), "-parallel=0", "-exact=false"}, args)
	args, err = goArgs(sweepCommand([]string{"-scenarios", "abr-lossy"}, &bytes.Buffer{}))
	require.NoError(t, err)
	require.Equal(t, "-exact=true", args[len(args)-1], "exact by default")
}

func TestSweepCommandRefusesBadFlags(t *testing.T) {
	for want, args := range map[string][]string{
		"-decrease: 100% out of range":       {"-scenarios", "abr-lossy", "-decrease", "100%"},
		"no scenarios":                       {"-threshold", "30ms"},
		"bad shard 3/2":                      {"-scenarios", "abr-lossy", "-shard", "3/2"},
		`unexpected argument "extra"`:        {"-scenarios", "abr-lossy", "extra"},
		"-exact: maybe is not true or false": {"-scenarios", "abr-lossy", "-exact", "maybe"},
	} {
		_, err := sweepCommand(args, &bytes.Buffer{})
		require.ErrorContains(t, err, want, "%v", args)
	}
}

// Without go on PATH, a lab that carries no exact guest (this test
// binary, or a plain go build) runs the sweep's job but cannot build the
// guest its exact sessions need: it says so, and what to do instead.
func TestSweepExactNeedsAGuest(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	err := sweepCmd([]string{"-scenarios", "abr-lossy", "-out", t.TempDir()}, &stdout, &stderr)
	require.ErrorContains(t, err, "sweep: the job failed")
	require.Contains(t, stdout.String()+stderr.String(), "the go command that builds it from "+filepath.Dir(filepath.Dir(mustWd(t)))+" is not on PATH")
	require.Contains(t, stdout.String()+stderr.String(), "run natively (-exact=false)")
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

// sweep-merge turns parts into the report and table; it runs no session.
func TestSweepMerge(t *testing.T) {
	dir := t.TempDir()
	g := grid.Grid{Threshold: []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 90 * time.Millisecond}, Scenarios: []string{"abr-lossy"}, Warmup: time.Second}
	var files []string
	for i := 1; i <= 2; i++ {
		points, err := grid.Shard(g.Points(), i, 2)
		require.NoError(t, err)
		p := &sweep.Part{Schema: sweep.PartSchema, Grid: g, Shard: sweep.ShardID{I: i, N: 2}, Wall: time.Second, Virtual: 40 * time.Second, Parallel: 1}
		for _, pt := range points {
			lat := 0.03 + float64(pt.Index)/100
			p.Points = append(p.Points, sweep.PointResult{Point: pt, Runs: []sweep.RunResult{{Scenario: "abr-lossy", Seed: 1, Ran: 20 * time.Second,
				Measures: map[string]float64{"latency.median": lat, "latency.p95": 2 * lat, "bitrate.mean": 1e6 * (1 + float64(pt.Index)), "quality.final": 0.5, "freezes": 1}}}})
		}
		file, err := sweep.WritePart(dir, p)
		require.NoError(t, err)
		files = append(files, file)
	}
	var out bytes.Buffer
	require.NoError(t, sweepMerge(append([]string{"-out", dir}, files...), &out))
	require.Contains(t, out.String(), "merged 2 part(s): 3 points, 3 sessions, 80 scenario seconds in 2.0 wall seconds")
	for _, f := range []string{"sweep.md", "sweep.html", sweep.TableFile, sweep.BitratePlot, sweep.QualityPlot} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}

	err := sweepMerge([]string{"-out", dir, files[0]}, &bytes.Buffer{})
	require.ErrorContains(t, err, "1 of 3 points missing: shard 2/2's 1 point (t60ms)")
	require.ErrorContains(t, sweepMerge([]string{"-out", dir}, &bytes.Buffer{}), "no part files")
}
