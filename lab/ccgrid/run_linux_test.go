//go:build linux

package ccgrid

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/timerprobe"
	"github.com/nuvirahub/latencylab/netem"
)

// requireKernel skips with the reason the grid cannot run here, or fails
// when LAB_REQUIRE_KERNEL=1 says it must (CI as root), as netem/kernel's
// tests do.
func requireKernel(t *testing.T, g Grid) {
	t.Helper()
	err := Check(g)
	if err == nil {
		return
	}
	if os.Getenv("LAB_REQUIRE_KERNEL") == "1" {
		t.Fatalf("LAB_REQUIRE_KERNEL=1 but %v", err)
	}
	t.Skipf("skipping: %v (set LAB_REQUIRE_KERNEL=1 to make this a failure)", err)
}

// One short real cell, N11's link with cubic: the flow runs, the link
// counts its queueing, TCP retransmits what the 1% loss takes, and the
// report renders.
func TestRunOneCell(t *testing.T) {
	g := DefaultGrid()
	g.Controllers, g.Columns, g.Seconds = []string{"cubic"}, g.Columns[2:3], 2
	g.QUIC, g.Media = false, nil // TestRunQUICCell and TestRunOneMediaCell run those
	requireKernel(t, g)
	var progress strings.Builder
	r, err := Run(context.Background(), g, moduleRoot, &progress)
	require.NoError(t, err)
	require.Len(t, r.Cells, 1)
	require.Regexp(t, `^\[ 1/1\] cubic  25 ms, 1% .* about 0s left\n$`, progress.String())
	c := r.Cells[0]
	t.Logf("%+v", c)
	require.Equal(t, "cubic", c.Controller)
	require.Equal(t, float64(Rate), c.CapacityBps)
	require.Greater(t, c.Utilisation, 0.05)
	require.Less(t, c.Utilisation, 1.0)
	require.InDelta(t, 1.5, c.WindowSeconds, 0.05)
	require.Equal(t, 50.0, c.BaseRTTMS)
	require.GreaterOrEqual(t, c.MinRTTMS, 50.0)
	require.Positive(t, c.Retransmits)
	require.Positive(t, c.Drops["loss"])
	require.GreaterOrEqual(t, c.QueueDelayMaxMS, c.QueueDelayMeanMS)
	require.Empty(t, r.Incomplete)
	require.NoError(t, WriteReport(t.TempDir(), r))
}

// A context that ends stops the run and keeps the cells done.
func TestRunStopsWithItsContext(t *testing.T) {
	g := DefaultGrid()
	g.Controllers, g.Columns, g.Seconds = []string{"reno"}, g.Columns[:1], 5
	g.Media = nil
	requireKernel(t, g)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := Run(ctx, g, moduleRoot, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, r.Cells)
	require.Contains(t, r.Incomplete, "stopped at reno on 25 ms, 0%")
}

// traceCapacity counts the opportunities in a window, the trace repeating.
func TestTraceCapacity(t *testing.T) {
	// Ten opportunities every 100 ms: 100 a second.
	const bits = netem.TraceMTU * 8
	tr, err := netem.ParseTrace(strings.NewReader("10\n20\n30\n40\n50\n60\n70\n80\n90\n100\n"), "t")
	require.NoError(t, err)
	require.InDelta(t, 100*bits, traceCapacity(tr, 5*time.Millisecond, time.Second+5*time.Millisecond), 1e-6)
	// The trace starts at its epoch: its first opportunity is at 10 ms,
	// and 1000 ms is outside [0, 1 s).
	require.InDelta(t, 99*bits, traceCapacity(tr, 0, time.Second), 1e-6)
	require.InDelta(t, 100*bits, traceCapacity(tr, 3*time.Second+5*time.Millisecond, 4*time.Second+5*time.Millisecond), 1e-6)
	require.Zero(t, traceCapacity(tr, time.Second, time.Second))
	// Uneven: 10, 20 and 100 (= the next period's 0) ms.
	tr, err = netem.ParseTrace(strings.NewReader("10\n20\n100\n"), "u")
	require.NoError(t, err)
	require.InDelta(t, 3*bits/0.1, traceCapacity(tr, 15*time.Millisecond, 115*time.Millisecond), 1e-6)
	require.Zero(t, traceCapacity(tr, 25*time.Millisecond, 95*time.Millisecond))
	require.InDelta(t, 2*bits/0.02, traceCapacity(tr, 1010*time.Millisecond, 1030*time.Millisecond), 1e-6)
}

// One short real QUIC bulk cell on N11's link: quic-go's losses are
// counted, and the window follows the same warm-up as TCP's.
func TestRunQUICCell(t *testing.T) {
	g := DefaultGrid()
	g.Columns, g.Seconds, g.Media = g.Columns[2:3], 2, nil
	requireKernel(t, g)
	// A window of 1.5 s within 0.1 s and some goodput: 20 ms.
	timerprobe.Require(t, 20*time.Millisecond)
	c, err := runQUICCell(context.Background(), g, g.Columns[0], moduleRoot, nil)
	require.NoError(t, err)
	t.Logf("%+v", c)
	require.Equal(t, QUICRow, c.Controller)
	require.Greater(t, c.Utilisation, 0.05)
	require.Less(t, c.Utilisation, 1.0)
	require.InDelta(t, 1.5, c.WindowSeconds, 0.1)
	require.Positive(t, c.Retransmits, "1% loss on the data")
	require.Positive(t, c.Drops["loss"])
}

// One short real media session, QUIC with the ABR on N11's link: frames
// are displayed, the latency is measured, the media goodput counted.
func TestRunOneMediaCell(t *testing.T) {
	g := DefaultGrid()
	g.Columns = g.Columns[2:3]
	g.Media = &MediaPlan{Columns: []string{g.Columns[0].Name}, Seconds: 3}
	require.NoError(t, g.Validate())
	requireKernel(t, g)
	c, err := runMediaCell(context.Background(), g, mediaCase{col: g.Columns[0]}, moduleRoot)
	require.NoError(t, err)
	t.Logf("%+v", c)
	require.Equal(t, "quic", c.Transport)
	require.Positive(t, c.Displayed)
	require.Positive(t, c.LatencyMedianMS)
	require.GreaterOrEqual(t, c.LatencyP95MS, c.LatencyMedianMS)
	require.Positive(t, c.MediaGoodputBps)
	require.Positive(t, c.MediaUtilisation)
	require.Less(t, c.MediaUtilisation, 1.0)
	require.Empty(t, c.Competing)
}

// p95 is the nearest-rank 95th percentile.
func TestP95(t *testing.T) {
	require.Zero(t, p95(nil))
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i))
	}
	require.Equal(t, time.Duration(95), p95(ds))
	require.Equal(t, time.Duration(1), p95(ds[:1]))
}
