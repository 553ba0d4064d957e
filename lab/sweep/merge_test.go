package sweep

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// fakePart is a whole grid's part (1/1) with made-up measurements, for
// testing what needs no session.
func fakePart(g grid.Grid) *Part {
	p := &Part{Schema: PartSchema, Grid: g, Shard: ShardID{I: 1, N: 1}, Wall: 10 * time.Second, Parallel: 2}
	for _, pt := range g.Points() {
		pr := PointResult{Point: pt}
		for s, sc := range g.Scenarios {
			for _, seed := range g.Seeds {
				k := float64(pt.Index*10 + s)
				pr.Runs = append(pr.Runs, RunResult{Scenario: sc, Seed: seed, Ran: 20 * time.Second, Wall: time.Second,
					Measures: map[string]float64{"latency.median": 0.04 + k/1000, "latency.p95": 0.1 + k/1000,
						"bitrate.mean": 1e6 * (1 + k/7), "quality.final": 0.5, "freezes": float64(s)}})
				p.Virtual += 20 * time.Second
			}
		}
		p.Points = append(p.Points, pr)
	}
	return p
}

// splitPart deals a whole grid's sessions into n parts as n shards would
// have run them.
func splitPart(t *testing.T, full *Part, n int) []*Part {
	t.Helper()
	var parts []*Part
	for i := 1; i <= n; i++ {
		pts, err := grid.Shard(full.Grid.Points(), i, n)
		require.NoError(t, err)
		p := &Part{Schema: PartSchema, Grid: full.Grid, Shard: ShardID{I: i, N: n}, Wall: full.Wall / time.Duration(n),
			Parallel: full.Parallel, Exact: full.Exact, Guest: full.Guest, File: fmt.Sprintf("part%d.json", i), Points: []PointResult{}}
		for _, pt := range pts {
			pr := full.Points[pt.Index]
			p.Points = append(p.Points, pr)
			for _, r := range pr.Runs {
				p.Virtual += r.Ran
			}
		}
		parts = append(parts, p)
	}
	return parts
}

func smallGrid() grid.Grid {
	return grid.Grid{
		Threshold: []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 90 * time.Millisecond},
		Decrease:  []float64{0.1, 0.2},
		Scenarios: []string{"abr-lossy", "abr-spikes-fix"},
		Seeds:     []uint64{1, 2},
		Warmup:    time.Second,
	}
}

// Merging the shards of a grid, in any order, gives the table of the
// unsharded run.
func TestMergeOfShardsIsTheUnshardedTable(t *testing.T) {
	full := fakePart(smallGrid())
	whole, err := Merge([]*Part{full})
	require.NoError(t, err)
	for n := 1; n <= 7; n++ {
		parts := splitPart(t, full, n)
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		merged, err := Merge(parts)
		require.NoError(t, err, "n=%d", n)
		require.Equal(t, whole.Rows, merged.Rows, "n=%d", n)
		require.Equal(t, whole.TableMarkdown(), merged.TableMarkdown(), "n=%d", n)
		require.Equal(t, whole.Virtual(), merged.Virtual())
		require.Len(t, merged.Parts, n)
		require.Equal(t, 1, merged.Parts[0].Shard.I, "parts listed in shard order")
	}
}

// Each point's figures are the mean of its sessions', freezes summed.
func TestMergeAggregates(t *testing.T) {
	full := fakePart(smallGrid())
	tab, err := Merge([]*Part{full})
	require.NoError(t, err)
	r := tab.Rows[1] // index 1: k = 10 + scenario
	// Sessions: scenario 0 twice (k=10), scenario 1 twice (k=11).
	require.InDelta(t, 0.04+10.5/1000, r.Values["latency.median"], 1e-12)
	require.InDelta(t, 1e6*(1+10.5/7), r.Values["bitrate.mean"], 1e-6)
	require.Equal(t, 2.0, r.Values["freezes"], "summed: 0+0+1+1")
	require.Equal(t, 24, tab.Sessions())

	// A session that failed or lacks a figure leaves the point without
	// it, saying why.
	full.Points[2].Runs[1].Error = "boom"
	delete(full.Points[3].Runs[2].Measures, "latency.p95")
	full.Points[3].Runs[2].Missing = map[string]string{"latency.p95": "nothing to measure: no frame displayed"}
	tab, err = Merge([]*Part{full})
	require.NoError(t, err)
	require.Empty(t, tab.Rows[2].Values)
	require.Equal(t, "abr-lossy seed 2 failed: boom", tab.Rows[2].Missing["latency.median"])
	require.NotContains(t, tab.Rows[3].Values, "latency.p95")
	require.Contains(t, tab.Rows[3].Values, "latency.median")
	require.Equal(t, "abr-spikes-fix seed 1: nothing to measure: no frame displayed", tab.Rows[3].Missing["latency.p95"])
	require.Contains(t, tab.TableMarkdown(), "| n/a |")
}

// A missing shard is named with its points, so the right CI job or pod
// is rerun.
func TestMergeRefusesAMissingShard(t *testing.T) {
	parts := splitPart(t, fakePart(smallGrid()), 3)
	_, err := Merge([]*Part{parts[0], parts[2]})
	require.ErrorIs(t, err, ErrCoverage)
	require.ErrorContains(t, err, "2 of 6 points missing: shard 2/3's 2 points (t30ms/d20%, t90ms/d10%)")
}

func TestMergeRefusesADuplicateShard(t *testing.T) {
	parts := splitPart(t, fakePart(smallGrid()), 3)
	again := *parts[1]
	again.File = "copy.json"
	_, err := Merge([]*Part{parts[0], parts[1], &again, parts[2]})
	require.ErrorIs(t, err, ErrCoverage)
	require.ErrorContains(t, err, "part2.json and copy.json are both shard 2/3")

	// Parts of two shardings overlap point by point.
	halves := splitPart(t, fakePart(smallGrid()), 2)
	halves[0].File = "half1.json"
	_, err = Merge([]*Part{parts[0], parts[1], parts[2], halves[0]})
	require.ErrorIs(t, err, ErrCoverage)
	require.ErrorContains(t, err, "3 points twice: t30ms/d10% (in part1.json and half1.json)")
}

func TestMergeRefusesPartsOfAnotherGrid(t *testing.T) {
	parts := splitPart(t, fakePart(smallGrid()), 2)
	other := smallGrid()
	other.Seeds = []uint64{1, 3}
	parts[1].Grid = other
	_, err := Merge(parts)
	require.ErrorIs(t, err, ErrGrid)
	require.ErrorContains(t, err, "part1.json and part2.json: the grids differ in seeds [1,2] vs [1,3]")
}

func TestMergeRefusesAPartWithSessionsMissing(t *testing.T) {
	full := fakePart(smallGrid())
	full.Points[4].Runs = full.Points[4].Runs[:3]
	_, err := Merge([]*Part{full})
	require.ErrorContains(t, err, "point t90ms/d10% has 3 sessions: expected 4 (2 scenarios x 2 seeds)")
}

func TestPartFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := fakePart(smallGrid())
	file, err := WritePart(dir, p)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "sweep-part-1of1.json"), file)
	back, err := ReadPart(file)
	require.NoError(t, err)
	require.Equal(t, file, back.File)
	back.File = ""
	require.Equal(t, p, back)

	writeFile(t, filepath.Join(dir, "old.json"), `{"schema": "latencylab.sweep/v0"}`)
	_, err = ReadPart(filepath.Join(dir, "old.json"))
	require.ErrorContains(t, err, `schema "latencylab.sweep/v0": expected "latencylab.sweep/v1"`)
}
