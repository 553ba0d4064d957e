package measure

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

// A run shorter than an expectation's window (handmade lasts 3 s) does not
// judge it: not judged, with the reason, nothing measured, and it fails
// nothing; a window the run covers, to its last instant, is judged as
// ever, and so is a band and a requirement, which carry their kind.
func TestEvaluateLeavesUncoveredWindowsUnjudged(t *testing.T) {
	r := handmade()
	checks := Evaluate(r, []scenarios.Expectation{
		{Measure: "latency.median", From: time.Second, To: 20 * time.Second, Max: f64(0.03), Band: true},
		{Measure: "bitrate.target", At: 30 * time.Second, Max: f64(1e6)},
		{Measure: "latency.median", To: 3 * time.Second, Min: f64(0.05), Required: "the write-up's figure"},
		{Measure: "latency.median", To: 2 * time.Second, Max: f64(0.03), Band: true},
	})
	require.Len(t, checks, 4)

	require.Equal(t, "the run lasted 3s, and this window ends at 20s", checks[0].NotJudged)
	require.True(t, checks[0].Pass, "not judged fails nothing")
	require.False(t, checks[0].Within)
	require.Zero(t, checks[0].Value)
	require.Equal(t, 20*time.Second, checks[0].To)
	require.Equal(t, "latency.median [1s, 20s), want <= 30 ms: not judged (the run lasted 3s, and this window ends at 20s)", checks[0].String())
	require.Equal(t, "the run lasted 3s, and this is measured at 30s", checks[1].NotJudged)
	r.Checks = checks[:2]
	require.True(t, r.Passed())

	require.Empty(t, checks[2].NotJudged, "a window ending at the run's end is covered")
	require.False(t, checks[2].Pass)
	require.Equal(t, "the write-up's figure", checks[2].Required)
	require.Contains(t, checks[2].String(), "FAIL: below the required minimum; required by the write-up's figure")
	require.True(t, checks[3].Band)
	require.Contains(t, checks[3].String(), "FAIL: changed: above the band measured for this scenario")
}

// An interrupted run (handmade's 3 s cut at 2 s) judges the windows it
// covered, and leaves the rest, those open to the end included, not judged.
func TestEvaluateLeavesWhatAnInterruptedRunMissedUnjudged(t *testing.T) {
	r := handmade()
	r.Ran, r.Interrupted = 2*time.Second, "context canceled"
	checks := Evaluate(r, []scenarios.Expectation{
		{Measure: "latency.median", To: 2 * time.Second, Max: f64(0.05)},
		{Measure: "latency.median", Max: f64(0.05)},
		{Measure: "latency.median", From: time.Second, To: 3 * time.Second, Max: f64(0.05)},
	})
	require.Empty(t, checks[0].NotJudged)
	require.True(t, checks[0].Pass)
	require.Equal(t, 0.04, checks[0].Value)
	require.Equal(t, "the run was interrupted at 2s, and this window ends at 3s", checks[1].NotJudged)
	require.Equal(t, "the run was interrupted at 2s, and this window ends at 3s", checks[2].NotJudged)
	require.True(t, checks[1].Pass && checks[2].Pass, "not judged fails nothing")
}
