package ccgrid

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeMedia adds the default plan's sessions, made by hand, to r: QUIC and
// the tunnel over each controller on N11's link and the trace, then QUIC
// beside each competing flow.
func fakeMedia(r *Report) {
	for _, col := range r.Grid.Media.Columns {
		r.Media = append(r.Media, MediaCell{Column: col, Transport: "quic", Controller: "newreno (quic-go)",
			LatencyMedianMS: 90, LatencyP95MS: 180, Frames: 600, Displayed: 590, MediaGoodputBps: 2e6, MediaUtilisation: 0.4, WindowSeconds: 8})
		for i, cc := range r.Grid.Media.Controllers {
			r.Media = append(r.Media, MediaCell{Column: col, Transport: "websocket", Controller: cc,
				LatencyMedianMS: 100 + 50*float64(i), LatencyP95MS: 300, Frames: 600, Displayed: 580, MediaGoodputBps: 1.5e6, MediaUtilisation: 0.3, WindowSeconds: 8})
		}
	}
	for i, cc := range r.Grid.Media.Competing {
		r.Media = append(r.Media, MediaCell{Column: "25 ms, 1%", Transport: "quic", Controller: "newreno (quic-go)", Competing: cc,
			LatencyMedianMS: 200, LatencyP95MS: 400, MediaGoodputBps: 1e6, CompetingGoodputBps: 3e6 - 1e6*float64(i),
			CompetingShare: (3 - float64(i)) / (4 - float64(i)), WindowSeconds: 8})
	}
}

// The media tables: latency and utilisation per transport and column, and
// the competing sessions' shares.
func TestMediaTables(t *testing.T) {
	r := fakeReport(nil)
	fakeMedia(r)
	ts := r.MediaTables()
	require.Len(t, ts, 3)
	require.Equal(t, []string{"transport", "25 ms, 1%", "cellular-steady"}, ts[0].Header)
	require.Equal(t, []string{"quic (newreno)", "90 / 180", "90 / 180"}, ts[0].Rows[0])
	require.Equal(t, []string{"websocket/cubic", "150 / 300", "150 / 300"}, ts[0].Rows[2])
	require.Equal(t, "2.00 (40.0%)", ts[1].Rows[0][1])
	require.Equal(t, []string{"bbr", "1.00", "3.00", "25%", "75%", "200 / 400"}, ts[2].Rows[0])

	md := r.TableMarkdown()
	require.Contains(t, md, "Media with the ABR: capture-to-display latency, median / p95 (ms)")
	require.Contains(t, md, "beside one long TCP flow on 25 ms, 1%")

	// Without media, no tables and no figures.
	r.Media = nil
	require.Empty(t, r.MediaTables())
	figs, err := r.MediaFigures()
	require.NoError(t, err)
	require.Empty(t, figs)
}

// The bar charts are deterministic PNGs, also with one session of a kind.
func TestMediaFigures(t *testing.T) {
	r := fakeReport(nil)
	fakeMedia(r)
	a, err := r.MediaFigures()
	require.NoError(t, err)
	b, err := r.MediaFigures()
	require.NoError(t, err)
	require.Len(t, a, 2)
	require.Equal(t, "ccgrid-media-latency.png", a[0].Name)
	require.Equal(t, "ccgrid-media-shares.png", a[1].Name)
	for i := range a {
		require.Equal(t, a[i].PNG, b[i].PNG)
		_, err := png.Decode(bytes.NewReader(a[i].PNG))
		require.NoError(t, err)
	}
	r.Media = []MediaCell{r.Media[0], r.Media[len(r.Media)-1]}
	a, err = r.MediaFigures()
	require.NoError(t, err)
	require.Len(t, a, 2)
}

// The report with media: its section, both figures, and the JSON reads
// back the same.
func TestWriteReportWithMedia(t *testing.T) {
	r := fakeReport(map[string]float64{"bbr": 0.93, "cubic": 0.31, "reno": 0.28, "quic": 0.6})
	fakeMedia(r)
	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, r))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "## Media with the ABR on top")
	require.Contains(t, string(md), "QUIC (NewReno, quic-go) 60.0%")
	for _, f := range []string{"ccgrid-media-latency.png", "ccgrid-media-shares.png"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	back, err := ReadReport(filepath.Join(dir, JSONFile))
	require.NoError(t, err)
	require.Equal(t, r, back)
}

// A v1 file (bulk only, no QUIC row, no media) still reads, as v2.
func TestReadReportV1(t *testing.T) {
	r := fakeReport(nil)
	r.Grid.QUIC, r.Grid.Media = false, nil
	r.Cells = slicesDeleteQUIC(r.Cells)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	b = bytes.Replace(b, []byte(Schema), []byte(SchemaV1), 1)
	require.NotContains(t, string(b), `"quic"`)
	p := filepath.Join(t.TempDir(), "v1.json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	back, err := ReadReport(p)
	require.NoError(t, err)
	require.Equal(t, Schema, back.Schema)
	require.Equal(t, r.Cells, back.Cells)
	require.NotContains(t, back.TableMarkdown(), "| quic |")
}

// Merge fills a short run's grid with an earlier run's columns and cells,
// keeping the short run's own; a different seed is refused.
func TestMerge(t *testing.T) {
	earlier := fakeReport(nil)
	earlier.Grid.QUIC, earlier.Grid.Media = false, nil
	earlier.Cells = slicesDeleteQUIC(earlier.Cells)
	short := fakeReport(map[string]float64{"bbr": 0.9, "cubic": 0.4, "reno": 0.3, "quic": 0.5})
	short.Grid.N11Only()
	var kept []Cell
	for _, c := range short.Cells {
		if c.Column == "25 ms, 1%" || c.Column == CellularName {
			kept = append(kept, c)
		}
	}
	short.Cells = kept
	require.NoError(t, short.Merge(earlier))
	require.Len(t, short.Grid.Columns, 11)
	require.Equal(t, "25 ms, 0%", short.Grid.Columns[0].Name)
	require.Len(t, short.Cells, 8+9*3)
	c, ok := short.Cell("cubic", "25 ms, 1%")
	require.True(t, ok)
	require.Equal(t, 0.4, c.Utilisation, "the short run's own cell")
	_, ok = short.Cell("quic", "25 ms, 0%")
	require.False(t, ok)
	require.True(t, strings.Contains(short.TableMarkdown(), "| quic | — |"))

	earlier.Grid.Seed = 3
	require.ErrorContains(t, fakeReport(nil).Merge(earlier), "differs")
}

// slicesDeleteQUIC drops the QUIC row's cells, making a v1-like run.
func slicesDeleteQUIC(cs []Cell) []Cell {
	var out []Cell
	for _, c := range cs {
		if c.Controller != QUICRow {
			out = append(out, c)
		}
	}
	return out
}
