package ccgrid

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// moduleRoot is where the tests find testdata/traces.
var moduleRoot = filepath.Join("..", "..")

// The default grid is the comparison's: three controllers and QUIC, five losses
// at two delays, then the cellular column; 44 cells of 10 s, then 11 media
// sessions.
func TestDefaultGrid(t *testing.T) {
	g := DefaultGrid()
	require.NoError(t, g.Validate())
	require.Equal(t, []string{"bbr", "cubic", "reno"}, g.Controllers)
	require.Equal(t, 10*time.Second, g.Duration())
	require.Equal(t, []string{"bbr", "cubic", "reno", "quic"}, g.Rows())
	require.Equal(t, 44, g.Cells())
	require.Equal(t, 11, g.Media.Sessions())
	g.N11Only()
	require.NoError(t, g.Validate())
	require.Len(t, g.Columns, 2)
	require.Equal(t, 8, g.Cells())
	g = DefaultGrid()
	var names []string
	for _, c := range g.Columns {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{
		"25 ms, 0%", "25 ms, 0.5%", "25 ms, 1%", "25 ms, 2%", "25 ms, 5%",
		"100 ms, 0%", "100 ms, 0.5%", "100 ms, 1%", "100 ms, 2%", "100 ms, 5%",
		"cellular-steady",
	}, names)
	var n11 []string
	for _, c := range g.Columns {
		if c.IsN11() {
			n11 = append(n11, c.Name)
		}
	}
	require.Equal(t, []string{"25 ms, 1%"}, n11)
	require.Equal(t, 50*time.Millisecond, g.Columns[2].BaseRTT())
}

// The N11 column is the write-up's bad link exactly, in both directions.
func TestN11ColumnIsTheDocumentedBadLink(t *testing.T) {
	col := DefaultGrid().Columns[2]
	for _, down := range []bool{true, false} {
		imps, err := col.Impairments("", down)
		require.NoError(t, err)
		require.Equal(t, netem.DocumentedBadLink(), imps)
	}
	// No loss, no loss impairment: a zero probability would still draw.
	imps, err := DefaultGrid().Columns[0].Impairments("", true)
	require.NoError(t, err)
	require.Len(t, imps, 2)
}

// The trace column plays the down trace from A to B and the up trace
// back, behind a 500 ms buffer and 40 ms of delay.
func TestTraceColumnImpairments(t *testing.T) {
	col := DefaultGrid().Columns[10]
	require.True(t, col.IsTrace())
	for _, dir := range []struct {
		down bool
		file string
	}{{true, CellularDown}, {false, CellularUp}} {
		imps, err := col.Impairments(moduleRoot, dir.down)
		require.NoError(t, err)
		require.Len(t, imps, 2)
		tl := imps[0].(*netem.TraceLink)
		require.Equal(t, filepath.Join(moduleRoot, dir.file), tl.Trace.Name)
		require.Equal(t, 500*time.Millisecond, tl.Queue.Delay)
		require.Equal(t, &netem.Delay{Delay: 40 * time.Millisecond}, imps[1])
		l, err := netem.NewLink(netem.LinkConfig{Impairments: imps}, func(*netem.Packet) {})
		require.NoError(t, err)
		require.NoError(t, l.Close())
	}
	_, err := col.Impairments(t.TempDir(), true)
	require.Error(t, err, "a root without the traces")
}

func TestParseControllers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "bbr,cubic,reno", want: []string{"bbr", "cubic", "reno"}},
		{in: " bbr , cubic", want: []string{"bbr", "cubic"}},
		{in: "bbr2", want: []string{"bbr2"}},
		{in: "", err: "empty name"},
		{in: "bbr,,reno", err: "empty name"},
		{in: "bbr,bbr", err: "given twice"},
		{in: "BBR", err: "not a TCP_CONGESTION name"},
		{in: "cubic;rm", err: "not a TCP_CONGESTION name"},
		{in: "averyveryverylongname", err: "not a TCP_CONGESTION name"},
	} {
		got, err := ParseControllers(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestGridValidate(t *testing.T) {
	bad := func(edit func(*Grid), want string) {
		t.Helper()
		g := DefaultGrid()
		edit(&g)
		require.ErrorContains(t, g.Validate(), want)
	}
	bad(func(g *Grid) { g.Controllers = nil }, "no controller")
	bad(func(g *Grid) { g.Columns = nil }, "no column")
	bad(func(g *Grid) { g.Controllers = []string{"bbr", "bbr"} }, `controller "bbr" given twice`)
	bad(func(g *Grid) { g.Columns = append(g.Columns, g.Columns[0]) }, `column "25 ms, 0%" given twice`)
	bad(func(g *Grid) { g.Seconds = 0.5 }, "too short")
	bad(func(g *Grid) { g.Columns[0].LossPercent = 100 }, "outside [0, 100)")
	bad(func(g *Grid) { g.Columns[0].RateBps = 0 }, "no bottleneck")
	bad(func(g *Grid) { g.Columns[10].TraceUp = "" }, "needs trace_down and trace_up")
	bad(func(g *Grid) { g.Columns[0].DelayMS = -1 }, "negative")
	bad(func(g *Grid) { g.Controllers = []string{"quic"} }, "clashes with the QUIC row")
	bad(func(g *Grid) { g.Media.Columns = []string{"nowhere"} }, `media column "nowhere" is not in the grid`)
	bad(func(g *Grid) { g.Media.Seconds = 1 }, "too short: at least 3 s")
	bad(func(g *Grid) { g.Columns = g.Columns[10:]; g.Media.Columns = []string{CellularName} }, "need the N11 column")
}
