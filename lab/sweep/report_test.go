package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// handMade is a table of four points with known fronts:
//
//	point  latency  bitrate  quality
//	0      50 ms    4 Mbit/s 0.5   bitrate front
//	1      40 ms    3 Mbit/s 0.6   both fronts
//	2      60 ms    3.5      0.7   quality front (0 beats it on bitrate)
//	3      30 ms    1 Mbit/s 0.4   both fronts (lowest latency)
//	4      n/a                      on neither: no latency
func handMade() *Table {
	g := grid.Grid{Threshold: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond, 50 * time.Millisecond},
		Scenarios: []string{"abr-lossy"}, Warmup: time.Second}
	t := &Table{Grid: g, Parts: []PartInfo{{Shard: ShardID{I: 1, N: 1}, Wall: 2 * time.Second, Virtual: 100 * time.Second, Parallel: 2, Sessions: 5}}}
	figures := [][3]float64{{0.050, 4e6, 0.5}, {0.040, 3e6, 0.6}, {0.060, 3.5e6, 0.7}, {0.030, 1e6, 0.4}}
	for i, p := range g.Points() {
		r := Row{Point: p, Runs: []RunResult{{Scenario: "abr-lossy", Seed: 1, Measures: map[string]float64{}}}, Values: map[string]float64{}, Missing: map[string]string{}}
		if i < len(figures) {
			f := figures[i]
			r.Values = map[string]float64{"latency.median": f[0], "latency.p95": f[0] * 2, "bitrate.mean": f[1], "quality.final": f[2], "freezes": 0}
			r.Runs[0].Measures = r.Values
		} else {
			for _, m := range Measures {
				r.Missing[m] = "abr-lossy seed 1: nothing to measure"
			}
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

func TestParetoFrontsOfAHandMadeSet(t *testing.T) {
	pts, front, rows := handMade().Fronts()
	label := func(k int) []string {
		var out []string
		for _, i := range front[k] {
			out = append(out, pts[k][i].Label)
		}
		return out
	}
	require.Len(t, pts[0], 4, "the point without figures is left out")
	require.Equal(t, []int{0, 1, 2, 3}, rows[0])
	require.Equal(t, []string{"#4", "#2", "#1"}, label(0), "bitrate: by latency, point 2 dominated")
	require.Equal(t, []string{"#4", "#2", "#3"}, label(1), "quality: point 0 dominated by 1")
	require.Equal(t, 30.0, pts[0][3].X, "latency in ms")
	require.Equal(t, 1.0, pts[0][3].Y, "bitrate in Mbit/s")
	require.Equal(t, []string{"bitrate", "bitrate, quality", "quality", "bitrate, quality", ""}, handMade().onFront())
}

func TestMainTable(t *testing.T) {
	tab := handMade().MainTable()
	require.Equal(t, []string{"#", "threshold", "latency median (ms)", "latency p95 (ms)", "bitrate (Mbit/s)", "quality", "freezes", "Pareto front"}, tab.Header)
	require.Equal(t, []string{"1", "10ms", "50.0", "100.0", "4.00", "0.500", "0", "bitrate"}, tab.Rows[0])
	require.Equal(t, []string{"5", "50ms", "n/a", "n/a", "n/a", "n/a", "n/a", ""}, tab.Rows[4])
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, handMade()))
	for _, f := range []string{"sweep.md", "sweep.html", TableFile, BitratePlot, QualityPlot} {
		info, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		require.Positive(t, info.Size(), f)
	}
	md, err := os.ReadFile(filepath.Join(dir, "sweep.md"))
	require.NoError(t, err)
	for _, want := range []string{
		"# ABR sweep: 5 points over 1 scenario",
		"threshold 10ms, 20ms, 30ms, 40ms, 50ms",
		"100 scenario seconds in 2.0 wall seconds, 50 scenario seconds per wall second",
		"on the front: #4 t40ms, #2 t20ms, #1 t10ms.",
		"## Missing figures",
		"](" + BitratePlot + ")",
	} {
		require.Contains(t, string(md), want)
	}
	table, err := os.ReadFile(filepath.Join(dir, TableFile))
	require.NoError(t, err)
	require.NotContains(t, string(table), "wall", "the table says nothing of how the sweep ran")
	require.Equal(t, 2+5, strings.Count(string(table), "\n|"), "header, rule and 5 rows")
}
