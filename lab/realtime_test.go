package lab

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/timerprobe"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The same session in real time, over loopback sockets and the real-time
// proxy, outside any bubble: frames are displayed, and the proxy's links'
// counters reach the result and its samples.
func TestRealTimeSession(t *testing.T) {
	// Frames displayed within half a second: timers 50 ms late would
	// leave a handful.
	timerprobe.Require(t, 50*time.Millisecond)
	res, err := RunSession(Session{
		Seed: 1, Duration: 500 * time.Millisecond, SampleEvery: 100 * time.Millisecond,
		Uplink: lan(), Downlink: lan(), Transport: transport.RealTime{},
	})
	require.NoError(t, err)
	require.NotEmpty(t, res.Displayed())
	require.Positive(t, res.Downlink.Delivered.Packets)
	require.Positive(t, res.Uplink.Delivered.Packets)
	// One sample at time zero, then one per period to the end: a count
	// of instants, not of wall-clock time.
	require.Len(t, res.Samples, 6)
	require.Positive(t, res.Samples[5].Downlink.Delivered.Packets)
}

// The two-site topology lives only in the in-memory network: a scenario
// with a path run in real time, through the proxy or in the kernel mode,
// is refused before anything is opened.
func TestRealTimeRefusesPath(t *testing.T) {
	sc := &scenarios.Scenario{Name: "p", Description: "a path", Seed: 1, Duration: time.Second, Path: scenarios.Path{Connect: "auto"}}
	for _, cfg := range []RealTimeConfig{{}, {Kernel: &transport.Kernel{}}} {
		_, err := RunRealTime(context.Background(), sc, cfg)
		require.ErrorIs(t, err, ErrUnsupported)
		require.ErrorContains(t, err, "real-time")
	}
}
