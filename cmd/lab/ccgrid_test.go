package main

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/ccgrid"
)

func TestParseCCGrid(t *testing.T) {
	opt, err := parseCCGrid(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, ccgrid.DefaultGrid(), opt.grid)
	require.Equal(t, "out/ccgrid", opt.out)

	opt, err = parseCCGrid([]string{"-seconds", "3", "-controllers", "cubic,bbr", "-out", "x", "-seed", "7"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"cubic", "bbr"}, opt.grid.Controllers)
	require.Equal(t, 3*time.Second, opt.grid.Duration())
	require.Equal(t, uint64(7), opt.grid.Seed)
	require.Equal(t, 33, opt.grid.Cells(), "two controllers and quic")
	require.Equal(t, []string{"cubic", "bbr"}, opt.grid.Media.Competing)
	require.Equal(t, 10.0, opt.grid.Media.Seconds)

	opt, err = parseCCGrid([]string{"-n11-only", "-media-seconds", "3", "-quic=false"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 6, opt.grid.Cells(), "three controllers on N11's column and the trace")
	require.Equal(t, 3.0, opt.grid.Media.Seconds)
	opt, err = parseCCGrid([]string{"-media=false"}, io.Discard)
	require.NoError(t, err)
	require.Nil(t, opt.grid.Media)

	for _, args := range [][]string{
		{"-seconds", "0.2"},
		{"-controllers", "bbr,,reno"},
		{"-controllers", "Cubic"},
		{"extra"},
		{"-media-seconds", "1"},
		{"-from", "a.json", "-merge", "b.json"},
	} {
		_, err := parseCCGrid(args, io.Discard)
		require.Error(t, err, args)
	}
}

// -from renders a run's JSON again, with no kernel needed: the report's
// files, the N11 sentence and the tables on stdout.
func TestCCGridFrom(t *testing.T) {
	g := ccgrid.DefaultGrid()
	r := &ccgrid.Report{Schema: ccgrid.Schema, Started: time.Unix(0, 0).UTC(), WallSeconds: 340, Grid: g}
	for _, col := range g.Columns {
		for i, cc := range g.Controllers {
			u := []float64{0.93, 0.31, 0.28}[i]
			r.Cells = append(r.Cells, ccgrid.Cell{Controller: cc, Column: col.Name, Utilisation: u, CapacityBps: 5e6, GoodputBps: u * 5e6})
		}
	}
	in := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, r.WriteJSON(in))
	dir := t.TempDir()
	var out bytes.Buffer
	require.NoError(t, ccgridCmd([]string{"-from", in, "-out", dir}, &out, io.Discard))
	require.Contains(t, out.String(), "N11 (25 ms, 1%, 5 Mbit/s, 1000-packet queue): utilisation bbr 93.0%, cubic 31.0%, reno 28.0%.")
	require.Contains(t, out.String(), "| bbr | 93.0 | 93.0 | 93.0 |")
	require.Contains(t, out.String(), "33 cells and 0 media sessions in 5m40s wall")
	require.Contains(t, out.String(), "| quic | — |", "a v2 grid's QUIC row, not run")
	for _, f := range []string{"report.md", "report.html", ccgrid.JSONFile, ccgrid.TableFile, "ccgrid-utilisation.png"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	require.ErrorContains(t, ccgridCmd([]string{"-from", filepath.Join(dir, "missing.json")}, io.Discard, io.Discard), "missing.json")
}
