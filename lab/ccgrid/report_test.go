package ccgrid

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeReport is a whole run made by hand: utilisation falls with loss for
// the classic controllers and not for bbr, n11 sets the N11 column's.
func fakeReport(n11 map[string]float64) *Report {
	g := DefaultGrid()
	r := &Report{Schema: Schema, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), WallSeconds: 345.6,
		Machine: "linux/amd64, 2 CPUs", Kernel: "6.1.0", Grid: g}
	for ci, col := range g.Columns {
		for k, cc := range g.Rows() {
			u := 0.95 - float64(k)*col.LossPercent/12
			if v, ok := n11[cc]; ok && col.IsN11() {
				u = v
			}
			r.Cells = append(r.Cells, Cell{
				Controller: cc, Column: col.Name, CapacityBps: 5e6, GoodputBps: u * 5e6, Utilisation: u,
				QueueDelayMeanMS: float64(10*ci + k), RetransPercent: col.LossPercent * 1.1,
				Segments: 1000, Retransmits: uint32(col.LossPercent * 11), BaseRTTMS: 2 * col.DelayMS,
				WindowSeconds: 8,
			})
		}
	}
	return r
}

func TestN11Verdict(t *testing.T) {
	for _, tc := range []struct {
		util                    map[string]float64
		classic, bbr, reproduce bool
	}{
		{map[string]float64{"bbr": 0.9, "cubic": 0.4, "reno": 0.3}, true, true, true},
		{map[string]float64{"bbr": 0.9, "cubic": 0.6, "reno": 0.3}, false, true, false},
		{map[string]float64{"bbr": 0.45, "cubic": 0.4, "reno": 0.3}, true, false, false},
		{map[string]float64{"bbr": 0.5, "cubic": 0.49, "reno": 0.49}, true, true, true},
	} {
		n, err := fakeReport(tc.util).N11()
		require.NoError(t, err)
		require.Equal(t, "25 ms, 1%", n.Column)
		delete(n.Utilisation, QUICRow)
		require.Equal(t, tc.util, n.Utilisation)
		require.Equal(t, tc.classic, n.ClassicUnderHalf, tc.util)
		require.Equal(t, tc.bbr, n.BBRNot, tc.util)
		require.Equal(t, tc.reproduce, n.Reproduced, tc.util)
	}
	r := fakeReport(map[string]float64{"bbr": 0.931, "cubic": 0.31, "reno": 0.285, "quic": 0.7})
	n, err := r.N11()
	require.NoError(t, err)
	require.Equal(t, "N11 (25 ms, 1%, 5 Mbit/s, 1000-packet queue): utilisation bbr 93.1%, cubic 31.0%, reno 28.5%, QUIC (NewReno, quic-go) 70.0%. "+
		"CUBIC and Reno under half: yes; BBR not: yes. N11 **reproduced**.", n.Sentence(r.Grid.Rows()))

	// Without reno, the classic pair cannot be judged.
	r.Grid.Controllers = []string{"bbr", "cubic"}
	n, err = r.N11()
	require.NoError(t, err)
	require.False(t, n.ClassicUnderHalf)

	// A run stopped before the N11 column has no verdict.
	r = fakeReport(nil)
	r.Cells = r.Cells[:8]
	_, err = r.N11()
	require.ErrorIs(t, err, ErrNoN11)
}

func TestTables(t *testing.T) {
	r := fakeReport(map[string]float64{"bbr": 0.931, "cubic": 0.31, "reno": 0.285})
	r.Cells = r.Cells[:len(r.Cells)-2] // reno and quic never ran on the trace
	ts := r.Tables()
	require.Len(t, ts, len(Measures))
	u := ts[0]
	require.Equal(t, "Utilisation (goodput / bottleneck capacity) (%)", u.Caption)
	require.Equal(t, "controller", u.Header[0])
	require.Equal(t, "25 ms, 1%", u.Header[3])
	require.Equal(t, "cellular-steady", u.Header[11])
	require.Equal(t, []string{"bbr", "cubic", "reno", "quic"}, []string{u.Rows[0][0], u.Rows[1][0], u.Rows[2][0], u.Rows[3][0]})
	require.Equal(t, []string{"93.1", "31.0", "28.5"}, []string{u.Rows[0][3], u.Rows[1][3], u.Rows[2][3]})
	require.Equal(t, "—", u.Rows[2][11], "a cell that did not run")
	require.Equal(t, "4.66", ts[1].Rows[0][3], "goodput in Mbit/s")
	require.Equal(t, "1.10", ts[3].Rows[0][3], "retransmissions in %")

	md := r.TableMarkdown()
	require.True(t, strings.HasPrefix(md, "N11 (25 ms, 1%, 5 Mbit/s"), md)
	require.Contains(t, md, "| controller | 25 ms, 0% | 25 ms, 0.5% | 25 ms, 1% |")
	require.Contains(t, md, "| bbr | 95.0 | 95.0 | 93.1 |")
}

// WriteReport writes the JSON, the tables, both documents and the
// plots; the JSON reads back as the same report.
func TestWriteAndReadReport(t *testing.T) {
	r := fakeReport(map[string]float64{"bbr": 0.931, "cubic": 0.31, "reno": 0.285})
	r.Cells[0].Drops = map[string]uint64{"queue": 3}
	dir := t.TempDir()
	require.NoError(t, WriteReport(dir, r))
	for _, f := range []string{JSONFile, TableFile, "report.md", "report.html",
		"ccgrid-utilisation.png", "ccgrid-queueing.png", "ccgrid-retransmissions.png"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "## Finding N11")
	require.Contains(t, string(md), "N11 **reproduced**")
	require.Contains(t, string(md), "![Utilisation (goodput / bottleneck capacity) against random loss")
	require.Contains(t, string(md), "5m46s wall")

	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	require.NoError(t, err)
	require.Contains(t, string(b), `"schema": "latencylab.ccgrid/v2"`)
	require.Contains(t, string(b), `"queue_delay_mean_ms"`)
	back, err := ReadReport(filepath.Join(dir, JSONFile))
	require.NoError(t, err)
	require.Equal(t, r, back)

	// Another schema, a stray field or a cell outside the grid: refused.
	edit := func(f func(map[string]any)) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		f(m)
		out, err := json.Marshal(m)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), "x.json")
		require.NoError(t, os.WriteFile(p, out, 0o644))
		return p
	}
	_, err = ReadReport(edit(func(m map[string]any) { m["schema"] = "latencylab.ccgrid/v0" }))
	require.ErrorContains(t, err, `want "latencylab.ccgrid/v2" (or "latencylab.ccgrid/v1")`)
	_, err = ReadReport(edit(func(m map[string]any) { m["extra"] = 1 }))
	require.ErrorContains(t, err, "unknown field")
	_, err = ReadReport(edit(func(m map[string]any) {
		m["cells"].([]any)[0].(map[string]any)["controller"] = "vegas"
	}))
	require.ErrorContains(t, err, "not in the grid")
}

// The plots are PNGs, the same bytes every time, and an incomplete run
// (no cell of the 100 ms columns) still draws.
func TestFigures(t *testing.T) {
	r := fakeReport(nil)
	a, err := r.Figures()
	require.NoError(t, err)
	b, err := r.Figures()
	require.NoError(t, err)
	require.Len(t, a, 3)
	for i := range a {
		require.Equal(t, a[i].PNG, b[i].PNG, a[i].Name)
		img, err := png.Decode(bytes.NewReader(a[i].PNG))
		require.NoError(t, err)
		require.Greater(t, img.Bounds().Dx(), img.Bounds().Dy())
	}
	r.Cells = r.Cells[:12]
	_, err = r.Figures()
	require.NoError(t, err)
	r.Cells = nil
	r.Grid.Columns = r.Grid.Columns[10:] // only the trace: no panel has a loss axis
	_, err = r.Figures()
	require.NoError(t, err)
}
