package estimate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/scenarios"
)

func TestBitrateIsTheControllersCappedByTheDownlink(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 20 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 64_000_000}}
	require.Equal(t, int64(64_000_000), Bitrate(sc))
	sc.Network.Down = []scenarios.Phase{{Rate: 1_000_000_000}, {Rate: 10_000_000}}
	require.Equal(t, int64(10_000_000), Bitrate(sc), "the tightest cap")
	sc.Network.Down = nil
	sc.Controller.Steps = []scenarios.Step{{At: time.Second, Bitrate: 100_000_000}}
	require.Equal(t, int64(100_000_000), Bitrate(sc), "the highest step")
}

// 64 Mbit/s for 20 s in 1 200-byte packets is 133 333 down; with the
// acknowledgements, 201 333: the LAN animation's links counted 201 016.
func TestPacketsFromBitrateAndLength(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 20 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 64_000_000}}
	require.InDelta(t, 201_333, Packets(sc), 1)
}

func TestRunSpreadsSessionsOverCores(t *testing.T) {
	m := Model{Name: "test", Fixed: time.Second, PerSecond: 0, PerPacket: 0}
	scs := make([]*scenarios.Scenario, 8)
	for i := range scs {
		scs[i] = &scenarios.Scenario{Duration: time.Minute}
	}
	require.Equal(t, 8*time.Second, m.Run(scs, 1))
	require.Equal(t, 4*time.Second, m.Run(scs, 2))
	require.Equal(t, time.Second, m.Run(scs, 100), "never less than the longest session")
	require.Equal(t, "estimate: 8 sessions, 8m0s of session time, about 0 thousand packets: about 4s test on 2 cores (1s per session, 0s per session second, 0s per packet; docs/performance.md)", m.Line(scs, 2))
}

// A real encoder's session costs its frames' work on top of its packets:
// the twins of the real group (20 s at 720p) are seconds of CPU each, not
// the tenths the network alone would make of them.
func TestRealEncoderAddsItsWork(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 20 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 4_000_000}}
	model := Native.Session(sc)
	sc.Agent.Encoder = "openh264-real"
	require.Equal(t, model+20*Real720pPerSecond, Native.Session(sc))
	sc.Agent.Encoder = "openh264-real-1080p"
	require.Equal(t, model+20*Real1080pPerSecond, Native.Session(sc))
	sc.Agent.Encoder = "openh264-asm"
	require.Equal(t, model, Native.Session(sc), "a model's frames are sizes")
	// The estimate knows the real presets by name: every one OpenH264's
	// package registers costs its frames' work.
	for _, name := range openh264.Presets() {
		require.Positive(t, RealEncoderPerSecond(name), name)
	}
}
