package sweep

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A real sweep, small enough for CI: 6 points x 2 scenarios cut to 3 s,
// run whole (RunJob, as the job entry point does) and as 3 shards, each
// session in its own bubble through jobs.Run.
//
// Same-seed sessions are not bit-identical from run to run (quic-go's
// goroutines, ready at the same virtual instant, are scheduled at random
// by the runtime, which cannot be seeded: README "Determinism"), so two
// runs of the grid agree on everything but the measured figures. What
// must be exact is the merge: the shards' parts merged give the same
// points, sessions and order as the whole run, and the whole run's own
// sessions dealt into 3 parts merge to its table byte for byte.
func TestShardedSweepMergesToTheUnshardedTable(t *testing.T) {
	g := Grid{
		Threshold: []time.Duration{40 * time.Millisecond, 80 * time.Millisecond},
		Decrease:  []float64{0.1, 0.2, 0.3},
		Scenarios: []string{"abr-lossy", "abr-spikes-fix"},
		Warmup:    time.Second,
		Duration:  3 * time.Second,
	}
	out := t.TempDir()
	var progress, log bytes.Buffer
	whole, err := RunJob(t, Job{Grid: g, Shard: ShardID{I: 1, N: 1}, Out: out}, ".", &progress, &log)
	require.NoError(t, err)
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

	// The three shards, run for real and merged.
	var parts []*Part
	for i := 1; i <= 3; i++ {
		p, err := RunShard(t, g, i, 3, RunOptions{Parallel: 2})
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
	require.Equal(t, shape(wholeTable), shape(sharded))

	// The whole run's sessions dealt into 3 parts: the same table, byte
	// for byte.
	dealt, err := Merge(splitPart(t, whole, 3))
	require.NoError(t, err)
	require.Equal(t, wholeTable.TableMarkdown(), dealt.TableMarkdown())
	require.Equal(t, wholeTable.Rows, dealt.Rows)
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
