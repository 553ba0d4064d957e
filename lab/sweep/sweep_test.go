package sweep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// A real sweep, small enough for CI: 6 points x 2 scenarios cut to 3 s,
// run whole (RunJob, as the job entry point does, exact by default) and
// as 3 shards run separately, each session in its own bubble. The issue's
// must-show: sharded in 3 and merged, it gives the same table as
// unsharded, byte for byte, because exact sessions depend on their
// scenario and seed only (lab/exact). The same grid run natively
// agrees with it on every row's shape, not on every figure.
func TestShardedSweepMergesToTheUnshardedTable(t *testing.T) {
	g := grid.Grid{
		Threshold: []time.Duration{40 * time.Millisecond, 80 * time.Millisecond},
		Decrease:  []float64{0.1, 0.2, 0.3},
		Scenarios: []string{"abr-lossy", "abr-spikes-fix"},
		Seeds:     []uint64{2},
		Warmup:    time.Second,
		Duration:  3 * time.Second,
	}
	root := filepath.Join("..", "..")
	out := t.TempDir()
	var progress, log bytes.Buffer
	whole, err := RunJob(t, Job{Grid: g, Shard: ShardID{I: 1, N: 1}, Out: out, Exact: true}, root, &progress, &log)
	require.NoError(t, err)
	require.True(t, whole.Exact)
	require.Contains(t, progress.String(), "[12/12]", "a progress line per session")
	require.Contains(t, log.String(), "sweep shard 1/1: 6 points, 12 sessions, 36 scenario seconds")
	for _, f := range []string{PartName(1, 1), "sweep.md", "sweep.html", TableFile, BitratePlot, QualityPlot} {
		_, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
	}
	require.Equal(t, 36*time.Second, whole.Virtual)
	for _, pr := range whole.Points {
		for _, r := range pr.Runs {
			require.Empty(t, r.Error, "%s %s", pr.Point.ID, r.Scenario)
			require.Len(t, r.Measures, len(Measures), "%s %s: %v", pr.Point.ID, r.Scenario, r.Missing)
		}
	}
	wholeTable, err := Merge([]*Part{whole})
	require.NoError(t, err)
	written, err := os.ReadFile(filepath.Join(out, TableFile))
	require.NoError(t, err)
	require.Equal(t, wholeTable.TableMarkdown(), string(written))

	// The three shards, each run on its own as a CI matrix would (in
	// another order, with another parallelism), and merged.
	r, err := exact.Open(t.Context(), exact.Options{Root: root})
	require.NoError(t, err)
	defer r.Close(context.Background())
	var parts []*Part
	for i := 3; i >= 1; i-- {
		p, err := RunShard(t, g, i, 3, RunOptions{Parallel: i, Root: root, Exact: r})
		require.NoError(t, err)
		require.Len(t, p.Points, 2)
		file, err := WritePart(out, p)
		require.NoError(t, err)
		back, err := ReadPart(file)
		require.NoError(t, err)
		parts = append(parts, back)
	}
	sharded, err := Merge(parts)
	require.NoError(t, err)
	require.Equal(t, wholeTable.TableMarkdown(), sharded.TableMarkdown(), "exact: the same table")
	require.Equal(t, withoutWall(wholeTable.Rows), withoutWall(sharded.Rows), "exact: the same sessions, but for their wall time")

	// The whole run's sessions dealt into 3 parts: the same table too
	// (Merge's own part of the promise, whatever the sessions).
	dealt, err := Merge(splitPart(t, whole, 3))
	require.NoError(t, err)
	require.Equal(t, wholeTable.TableMarkdown(), dealt.TableMarkdown())
	require.Equal(t, wholeTable.Rows, dealt.Rows)

	require.Len(t, whole.Guest, 16)
	require.Equal(t, whole.Guest, parts[0].Guest)

	// Parts from another guest (other source or Go) are refused.
	other := *parts[2]
	other.Guest = "0123456789abcdef"
	_, err = Merge([]*Part{parts[0], parts[1], &other})
	require.ErrorIs(t, err, ErrGrid)
	require.ErrorContains(t, err, "ran guest 0123456789abcdef")

	// Native parts are not mixed with exact ones.
	native, err := RunShard(t, g, 1, 3, RunOptions{Root: root})
	require.NoError(t, err)
	require.False(t, native.Exact)
	_, err = Merge([]*Part{parts[1], parts[0], native})
	require.ErrorIs(t, err, ErrGrid)
	require.ErrorContains(t, err, "ran exact sessions")
	nativeTable, err := Merge(append([]*Part{native}, splitPart(t, whole, 3)[1:]...))
	require.Error(t, err, "still refused when the exact parts come second")
	require.Nil(t, nativeTable)
}

// withoutWall is rows with each session's wall time left out: the one
// thing about a session that is the machine's, not the session's.
func withoutWall(rows []Row) []Row {
	out := make([]Row, len(rows))
	for i, r := range rows {
		r.Runs = slices.Clone(r.Runs)
		for k := range r.Runs {
			r.Runs[k].Wall = 0
		}
		out[i] = r
	}
	return out
}

// shape is what two runs of a grid agree on: every row's point and its
// sessions (scenario, seed, virtual time, failure) in order.
func shape(t *Table) []string {
	var out []string
	for _, r := range t.Rows {
		for _, s := range r.Runs {
			out = append(out, fmt.Sprint(r.Point.ID, " ", s.Scenario, " seed ", s.Seed, " ", s.Ran, " ", s.Error))
		}
	}
	return out
}
