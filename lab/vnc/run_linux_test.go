//go:build linux

package vnc

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/scenarios"
)

// libraryScenario is a scenario of the library by name.
func libraryScenario(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, sc := range lib {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q in the library", name)
	return nil
}

// measureRun runs one measurement and logs its figures.
func measureRun(t *testing.T, cfg Config) *result.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := Run(ctx, cfg)
	require.NoError(t, err)
	require.Empty(t, r.Interrupted)
	s := r.Summary
	t.Logf("%s through %s, %q screen %v: %d of %d versions displayed, latency median %v p95 %v max %v; %.2f MB received",
		r.Encoder, r.Scenario, cfg.Screen, r.Duration, s.Displayed, s.Frames, s.Latency.Median, s.Latency.P95, s.Latency.Max,
		float64(r.Links.Down.DeliveredBytes)/1e6)
	return r
}

// x11vnc's update latency on a clean LAN, and on the documented bad
// network (25 ms each way, 1% loss, 5 Mbit/s): the run completes, and the
// median grows by at least the round trip the network adds.
func TestX11vncLatency(t *testing.T) {
	requireVNC(t, true, X11vnc)
	lan := measureRun(t, Config{Scenario: libraryScenario(t, "lan-animation"), Server: X11vnc, Encoding: rfb.EncodingZRLE,
		Duration: 5 * time.Second, Screen: "mix"})
	require.Greater(t, lan.Summary.Displayed, 20, "a mixed screen shows dozens of versions in 5 s")
	bad := measureRun(t, Config{Scenario: libraryScenario(t, "lossy-fixed-bitrate"), Server: X11vnc, Encoding: rfb.EncodingZRLE,
		Duration: 5 * time.Second, Screen: "mix"})
	require.Greater(t, bad.Summary.Displayed, 5)
	require.GreaterOrEqual(t, bad.Summary.Latency.Median-lan.Summary.Latency.Median, 50*time.Millisecond,
		"25 ms each way adds at least 50 ms of round trip to every update (the client asks, the server answers)")
}
