package estimate

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/scenarios"
)

// 64 Mbit/s for 20 s in 1 200-byte packets is 133 333 down; with the
// acknowledgements 201 333, and 2 000 for the session's 20 s: the LAN
// animation's links counted 201 016.
func TestPacketsFromBitrateAndLength(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 20 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 64_000_000}}
	require.InDelta(t, 203_333, Packets(sc), 1)
	require.Equal(t, 20.0, SessionSeconds(sc))
}

// perSecond is the packets one second of a media session sending bps
// adds.
func perSecond(bps float64) float64 { return bps/(8*PacketBytes)*AckShare + SessionPackets }

func TestPacketsFollowTheControllerAndTheCap(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 10 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 8_000_000}}
	sc.Network.Down = []scenarios.Phase{{Rate: 2_000_000}, {At: 5 * time.Second, Rate: 100_000_000}}
	require.InDelta(t, 5*perSecond(2e6)+5*perSecond(8e6), Packets(sc), 1, "the cap in force, phase by phase")

	sc.Network.Down = nil
	sc.Controller = scenarios.Controller{Kind: "steps", Bitrate: 1_000_000, Steps: []scenarios.Step{{At: 4 * time.Second, Bitrate: 3_000_000}}}
	require.InDelta(t, 4*perSecond(1e6)+6*perSecond(3e6), Packets(sc), 1, "each step in its time")

	// An adaptive controller climbs to its ceiling or the bottleneck's
	// rate; without a readable rate, or a ceiling, it stays where it
	// starts.
	sc.Controller = scenarios.Controller{Kind: "abr", Bitrate: 150_000, Max: 1_500_000}
	require.InDelta(t, 10*perSecond(150e3), Packets(sc), 1, "no cap: its start")
	sc.Network.Down = []scenarios.Phase{{Rate: 1_000_000}}
	require.InDelta(t, 10*perSecond(1e6), Packets(sc), 1, "the cap below its ceiling")
	sc.Network.Down = []scenarios.Phase{{Rate: 4_000_000}}
	require.InDelta(t, 10*perSecond(1.5e6), Packets(sc), 1, "its ceiling below the cap")
	sc.Network.Down = []scenarios.Phase{{Rate: 4_000_000, Trace: &scenarios.Trace{File: "x.down"}}}
	require.InDelta(t, 10*perSecond(150e3), Packets(sc), 1, "a trace's rate is not read")
}

func TestStillAndTypingScreensSendLittle(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 10 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 4_000_000},
		Screen: []scenarios.ScreenPhase{{Source: "animation"}, {At: 2 * time.Second, Source: "still"}, {At: 6 * time.Second, Source: "typing"}}}
	require.InDelta(t, 2*perSecond(4e6)+4*0.1*perSecond(4e6), Packets(sc), 1)
	require.Equal(t, 10.0, SessionSeconds(sc), "a still session still costs its seconds")
}

// Competing traffic carries most of the RFC 8867 cases' packets: a bulk
// transfer fills the bottleneck beside the video, a session flow sends
// its own video and costs its own seconds, cbr its rate, web little.
func TestFlowsAddTheirTraffic(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 10 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 1_000_000}}
	sc.Network.Down = []scenarios.Phase{{Rate: 4_000_000}}
	sc.Network.Up = []scenarios.Phase{{Rate: 2_000_000}}
	alone := Packets(sc)

	sc.Traffic = []scenarios.Flow{{Name: "download", Kind: "tcp-bulk", Start: 5 * time.Second}}
	require.InDelta(t, 5*perSecond(1e6)+5*(perSecond(4e6)), Packets(sc), 1, "from its start the link is full")

	sc.Traffic = []scenarios.Flow{{Name: "upload", Kind: "quic-bulk", Direction: "up"}}
	require.InDelta(t, alone+10*2e6/(8*PacketBytes)*AckShare, Packets(sc), 1, "up, it fills the uplink")

	sc.Traffic = []scenarios.Flow{{Name: "other", Kind: "session", Start: 2 * time.Second, Stop: 6 * time.Second,
		Controller: &scenarios.Controller{Kind: "fixed", Bitrate: 500_000}}}
	require.InDelta(t, alone+4*perSecond(500e3), Packets(sc), 1)
	require.Equal(t, 14.0, SessionSeconds(sc), "its 4 s beside the session's 10")

	sc.Traffic = []scenarios.Flow{{Name: "camera", Kind: "reverse-media"}}
	require.InDelta(t, alone+10*perSecond(1e6), Packets(sc), 1, "the scenario's controller, up")
	require.Equal(t, 20.0, SessionSeconds(sc))

	sc.Traffic = []scenarios.Flow{{Name: "voice", Kind: "cbr", Rate: 64_000}}
	require.InDelta(t, alone+10*64e3/(8*PacketBytes)*AckShare, Packets(sc), 1)

	sc.Traffic = []scenarios.Flow{{Name: "browse", Kind: "web", Think: 10 * time.Second, Object: &scenarios.ObjectSizes{Mean: 100_000}}}
	require.InDelta(t, alone+10*80e3/(8*PacketBytes)*AckShare, Packets(sc), 1, "a mean object per think time")
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
	require.Equal(t, "estimate: 8 sessions, 8m0s of session time, about 48 thousand packets: about 4s test on 2 cores (1s per session, 0s per session second, 0s per packet; docs/performance.md)", m.Line(scs, 2))
}

// A real encoder's session costs its frames' work on top of its packets:
// the twins of the real group (20 s at 720p) are seconds of CPU each, not
// the tenths the network alone would make of them. The figures are
// docs/performance.md's, measured by TestRealSpeed: 0.62 s of CPU for each
// second at 720p, 0.75 s at 1080p.
func TestRealEncoderAddsItsWork(t *testing.T) {
	sc := &scenarios.Scenario{Duration: 20 * time.Second, Controller: scenarios.Controller{Kind: "fixed", Bitrate: 4_000_000}}
	model := Native.Session(sc)
	sc.Agent.Encoder = "openh264-real"
	require.Equal(t, model+20*620*time.Millisecond, Native.Session(sc))
	sc.Agent.Encoder = "openh264-real-1080p"
	require.Equal(t, model+20*750*time.Millisecond, Native.Session(sc))
	sc.Agent.Encoder = "openh264-asm"
	require.Equal(t, model, Native.Session(sc), "a model's frames are sizes")
	// The estimate knows the real presets by name: every one OpenH264's
	// package registers costs its frames' work.
	for _, name := range openh264.Presets() {
		require.Positive(t, RealEncoderPerSecond(name), name)
	}
}

// docs/performance.md's table of the models is the models: a coefficient
// fitted again changes both, or this fails.
func TestModelsAreTheDocumentedOnes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/performance.md")
	require.NoError(t, err)
	figure := func(d time.Duration) string {
		switch {
		case d == 0:
			return "0"
		case d >= time.Millisecond:
			return fmt.Sprintf("%g ms", float64(d)/float64(time.Millisecond))
		}
		return fmt.Sprintf("%g µs", float64(d)/float64(time.Microsecond))
	}
	for _, m := range []Model{Native, Exact} {
		var row []string
		for line := range strings.Lines(string(doc)) {
			if strings.HasPrefix(line, "| "+m.Name+" (") {
				require.Nil(t, row, "two rows for the %s model", m.Name)
				row = strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
			}
		}
		require.Len(t, row, 4, "docs/performance.md's row for the %s model", m.Name)
		for i, d := range []time.Duration{m.Fixed, m.PerSecond, m.PerPacket} {
			require.Equal(t, figure(d), strings.TrimSpace(row[i+1]), "%s model, column %d", m.Name, i+2)
		}
	}
}
