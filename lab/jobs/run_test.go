package jobs

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/scenarios"
)

func library(t *testing.T, names ...string) []*scenarios.Scenario {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	var out []*scenarios.Scenario
	for _, n := range names {
		for _, sc := range lib {
			if sc.Name == n {
				short := *sc
				short.Duration = 2 * time.Second
				short.Expect = nil
				out = append(out, &short)
			}
		}
	}
	require.Len(t, out, len(names))
	return out
}

// Every scenario under every variant and seed runs once, in the plan's
// order; a variant's change reaches the session, and a variant that
// refuses a scenario fails that session only.
func TestRunRunsThePlan(t *testing.T) {
	var progress bytes.Buffer
	var finished []string
	sessions := Run(t, Plan{
		Scenarios: library(t, "lan-animation", "pipeline-encoder-first-old"),
		Variants: []Variant{
			{Label: "base"},
			{Label: "busy", Apply: func(sc *scenarios.Scenario) error {
				if sc.Name == "pipeline-encoder-first-old" {
					return errors.New("not this one")
				}
				sc.Agent.Encoder = "busy-pc"
				return nil
			}},
		},
		Seeds:    []uint64{1, 2},
		Parallel: 2,
		Progress: &progress,
		Finished: func(s Session, done, total int) {
			// Checked below: this runs on the sessions' goroutines.
			finished = append(finished, fmt.Sprintf("%d/%d %s", done, total, s.Variant))
		},
	})
	require.Len(t, sessions, 8)
	var order []string
	for _, s := range sessions {
		order = append(order, s.Variant+"/"+s.Scenario)
	}
	require.Equal(t, "base/lan-animation", order[0])
	require.Equal(t, "busy/pipeline-encoder-first-old", order[7])
	require.Equal(t, uint64(2), sessions[1].Seed)
	for _, s := range sessions[:6] {
		require.NoError(t, s.Err, "%s/%s", s.Variant, s.Scenario)
		require.Equal(t, s.Seed, s.Result.Seed)
	}
	require.ErrorContains(t, sessions[6].Err, "variant busy: not this one")
	base, busy := sessions[0].Result.Summary.Latency.Median, sessions[4].Result.Summary.Latency.Median
	require.Greater(t, busy, base+100*time.Millisecond, "the busy PC's 130 ms encodes show")
	lines := strings.Split(strings.TrimSuffix(progress.String(), "\n"), "\n")
	require.Len(t, lines, 7, "the estimate, then a progress line per session run")
	require.True(t, strings.HasPrefix(lines[0], "estimate: 6 sessions, "), lines[0])
	require.Contains(t, lines[1], "x real time")
	require.Len(t, finished, 6, "Finished is told of every session run")
	for i, f := range finished {
		require.True(t, strings.HasPrefix(f, fmt.Sprintf("%d/6 ", i+1)), "one call at a time, counting up: %q", f)
	}
}

// RunExact needs its runner: without one it runs nothing.
func TestRunExactNeedsARunner(t *testing.T) {
	_, err := RunExact(t.Context(), Plan{Scenarios: library(t, "lan-animation")})
	require.ErrorContains(t, err, "without a runner")
}

// With an exact runner, a scenario only a native process can run (here an
// ECN-capable session) runs natively in this process instead of failing;
// the runner is never asked for it (a zero Runner would fail any exact
// session).
func TestRunExactLeavesNativeOnlyScenariosToNative(t *testing.T) {
	scs := library(t, "lan-animation")
	scs[0].ECN = "classic"
	out := Run(t, Plan{Scenarios: scs, Exact: &exact.Runner{}})
	require.Len(t, out, 1)
	require.NoError(t, out[0].Err)
	require.NotNil(t, out[0].Result)
	require.NotEmpty(t, out[0].Result.Frames)
}
