package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// kinds lists the kinds of a set of impairments, in order.
func kinds(imps []netem.Impairment) []string {
	var out []string
	for _, imp := range imps {
		out = append(out, imp.Kind())
	}
	return out
}

// find returns the impairment of type T in imps.
func find[T netem.Impairment](t *testing.T, imps []netem.Impairment) T {
	t.Helper()
	for _, imp := range imps {
		if v, ok := imp.(T); ok {
			return v
		}
	}
	var zero T
	require.Failf(t, "impairment missing", "no %T in %v", zero, kinds(imps))
	return zero
}

// Every network feature of a phase reaches netem with its parameters, and
// the phases after the first become the link's timeline at their instants.
func TestConvertNetworkReachesNetem(t *testing.T) {
	sc := &scenarios.Scenario{Name: "net", Seed: 3, Duration: 30 * time.Second,
		Network: scenarios.Network{
			Down: []scenarios.Phase{
				{
					Delay:  25 * time.Millisecond,
					Jitter: &scenarios.Jitter{Spread: 5 * time.Millisecond, Distribution: "normal", Correlation: 0.3},
					Loss:   0.01, Rate: 5_000_000, Overhead: 28,
					Queue:  scenarios.Queue{Bytes: 256 << 10, Packets: 500, Delay: 200 * time.Millisecond, CoDel: true},
					Spikes: &scenarios.Spikes{Min: 150 * time.Millisecond, Max: 600 * time.Millisecond, Every: 5 * time.Second, Duration: 300 * time.Millisecond, Offset: time.Second, Random: true},
				},
				{
					At:        10 * time.Second,
					Delay:     40 * time.Millisecond,
					Gilbert:   &scenarios.Gilbert{P: 0.01, R: 0.3, OneMinusH: 0.9, OneMinusK: 0.01},
					Duplicate: 0.02, Corrupt: 0.001,
					Trace:   &scenarios.Trace{File: "testdata/traces/cellular-steady.down"},
					Outages: &scenarios.Outages{Windows: []scenarios.Window{{Start: 12 * time.Second, Duration: 500 * time.Millisecond}}, Hold: true},
				},
				{At: 20 * time.Second, BlockUDP: true, Outages: &scenarios.Outages{Every: 3 * time.Second, Duration: time.Second, Offset: 21 * time.Second}},
			},
			Up: []scenarios.Phase{{Delay: 25 * time.Millisecond}},
		}}
	p, err := Convert(sc)
	require.NoError(t, err)
	s := p

	require.Equal(t, []string{"loss", "rate", "spikes", "jitter"}, kinds(s.Downlink))
	require.Equal(t, 0.01, find[*netem.Loss](t, s.Downlink).Probability)
	rate := find[*netem.Rate](t, s.Downlink)
	require.Equal(t, int64(5_000_000), rate.Rate)
	require.Equal(t, 28, rate.Overhead)
	require.Equal(t, netem.QueueLimit{Bytes: 256 << 10, Packets: 500, Delay: 200 * time.Millisecond, CoDel: &netem.CoDelParams{}}, rate.Queue)
	sp := find[*netem.Spikes](t, s.Downlink)
	require.Equal(t, netem.Spikes{Min: 150 * time.Millisecond, Max: 600 * time.Millisecond, Every: 5 * time.Second, Duration: 300 * time.Millisecond, Offset: time.Second, Random: true}, *sp)
	j := find[*netem.Jitter](t, s.Downlink)
	require.Equal(t, 25*time.Millisecond, j.Delay, "the jitter carries the mean delay, as tc's 'delay 25ms 5ms'")
	require.Equal(t, 5*time.Millisecond, j.Jitter)
	require.Equal(t, "normal", j.Distribution)
	require.Equal(t, 0.3, j.Correlation)

	require.Len(t, s.DownlinkTimeline, 2)
	ph := s.DownlinkTimeline[0]
	require.Equal(t, 10*time.Second, ph.At)
	require.Equal(t, []string{"outage", "gilbert", "duplicate", "corrupt", "trace", "delay"}, kinds(ph.Impairments))
	require.Equal(t, netem.GilbertElliott{P: 0.01, R: 0.3, OneMinusH: 0.9, OneMinusK: 0.01}, *find[*netem.GilbertElliott](t, ph.Impairments))
	require.Equal(t, 0.02, find[*netem.Duplicate](t, ph.Impairments).Probability)
	require.Equal(t, 0.001, find[*netem.Corrupt](t, ph.Impairments).Probability)
	out := find[*netem.Outage](t, ph.Impairments)
	require.Equal(t, netem.OutageHold, out.Mode)
	require.Equal(t, []netem.OutageWindow{{Start: 12 * time.Second, Duration: 500 * time.Millisecond}}, out.Windows)
	tr := find[*netem.TraceLink](t, ph.Impairments)
	require.NotNil(t, tr.Trace, "the trace is loaded when the scenario is converted")
	require.True(t, strings.HasSuffix(filepath.ToSlash(tr.Path), "testdata/traces/cellular-steady.down"), tr.Path)
	require.Equal(t, 40*time.Millisecond, find[*netem.Delay](t, ph.Impairments).Delay)

	ph = s.DownlinkTimeline[1]
	require.Equal(t, 20*time.Second, ph.At)
	require.Equal(t, []string{"block", "outage"}, kinds(ph.Impairments))
	out = find[*netem.Outage](t, ph.Impairments)
	require.Equal(t, netem.OutageDrop, out.Mode)
	require.Equal(t, [3]time.Duration{3 * time.Second, time.Second, 21 * time.Second}, [3]time.Duration{out.Every, out.Duration, out.Offset})

	require.Equal(t, []string{"delay"}, kinds(s.Uplink))
	require.Empty(t, s.UplinkTimeline)

	// The result's description of the network and its capacity.
	require.Equal(t, []time.Duration{0, 10 * time.Second, 20 * time.Second}, []time.Duration{p.Network.Down[0].At, p.Network.Down[1].At, p.Network.Down[2].At})
	require.Equal(t, "loss 1%, rate 5 Mbit/s, queue 262144 B 500 packets 200ms CoDel, spikes 150ms-600ms every 5s, delay 25ms ± 5ms (normal)", p.Network.Down[0].Description)
	bits, capped := p.DownlinkCapacity.Between(9*time.Second, 10*time.Second)
	require.Equal(t, 5e6, bits)
	require.Equal(t, time.Second, capped)
	bits, capped = p.DownlinkCapacity.Between(10*time.Second, 20*time.Second)
	require.Equal(t, 10*time.Second, capped)
	require.InDelta(t, tr.Trace.AverageRate()*10, bits, tr.Trace.AverageRate()*10*0.3, "a trace's capacity over 10 s is near its average")
	_, capped = p.DownlinkCapacity.Between(20*time.Second, 30*time.Second)
	require.Zero(t, capped, "the last phase has no bottleneck")
}

// A phase that starts later than 0 leaves the link perfect until then.
func TestConvertFirstPhaseLater(t *testing.T) {
	sc := &scenarios.Scenario{Name: "late", Duration: time.Second,
		Network: scenarios.Network{Down: []scenarios.Phase{{At: 500 * time.Millisecond, Delay: time.Millisecond}}}}
	p, err := Convert(sc)
	require.NoError(t, err)
	require.Empty(t, p.Downlink)
	require.Len(t, p.DownlinkTimeline, 1)
	require.Equal(t, 500*time.Millisecond, p.DownlinkTimeline[0].At)
}

// Switches, encoders, probe list, refresh, clocks and the controller reach
// the agent's and viewer's models.
func TestConvertAgentViewerAndSwitches(t *testing.T) {
	sc := &scenarios.Scenario{Name: "models", Duration: time.Second,
		Agent: scenarios.Agent{
			Encoder:    encoder.PresetOpenH264,
			EncodeTime: &scenarios.Dist{Mean: 20 * time.Millisecond, SD: 2 * time.Millisecond, Min: 15 * time.Millisecond},
			Hardware:   []string{encoder.PresetQuickSync, encoder.PresetNVENC},
			Absent:     []string{encoder.PresetQuickSync},
			Failing:    []string{encoder.PresetNVENC},
			Refresh:    30, ConvertOnCPU: true, SendCap: 128 << 10,
			RefinePasses: 5, RefineEvery: 200 * time.Millisecond, NoRefine: true,
		},
		Viewer:     scenarios.Viewer{Decode: &scenarios.Dist{List: []time.Duration{2 * time.Millisecond, 4 * time.Millisecond}}, Refresh: 50, Present: 5 * time.Millisecond},
		Clocks:     scenarios.Clocks{Agent: scenarios.Clock{Offset: 3 * time.Second, DriftPPM: 50}, Viewer: scenarios.Clock{Offset: -time.Second, DriftPPM: -20}},
		Controller: scenarios.Controller{Kind: "steps", Bitrate: 3_000_000, Steps: []scenarios.Step{{At: 5 * time.Second, Bitrate: 2_000_000}}},
		Switches:   scenarios.Switches{OldWaitForFrame: true, OldCaptureFirst: true, OldShowEveryFrame: true, OldRestartOnBitrateChange: true},
		Screen: []scenarios.ScreenPhase{
			{Source: "animation", Rate: 30, Complexity: 0.7},
			{At: time.Second, Source: "still"},
			{At: 2 * time.Second, Source: "typing", Complexity: 0.5},
			{At: 3 * time.Second, Source: "scrolling", Rate: 20, Region: &scenarios.Region{X: 0.1, Y: 0.1, W: 0.5, H: 0.5}},
			{At: 4 * time.Second, Source: "video", Rate: 24, Complexity: 0.95},
			{At: 5 * time.Second, Source: "photo", Region: &scenarios.Region{X: 0, Y: 0, W: 1, H: 1}},
		},
	}
	p, err := Convert(sc)
	require.NoError(t, err)
	s := p
	a := s.Agent

	// N6, N7, N8, N16.
	require.True(t, a.Capture.OldWaitForFrame, "N6")
	require.True(t, a.OldCaptureFirst, "N7")
	require.True(t, s.Viewer.OldShowEveryFrame, "N8")
	require.True(t, a.Software.OldRestartOnBitrateChange, "N16")
	for _, h := range a.Hardware {
		require.True(t, h.OldRestartOnBitrateChange, "N16 on %s", h.Name)
		require.Equal(t, 3_000_000, h.Bitrate, "hardware encoders start at the controller's bitrate")
	}
	// N5: the probe list.
	require.Len(t, a.Hardware, 2)
	require.Equal(t, encoder.PresetQuickSync, a.Hardware[0].Name)
	require.True(t, a.Hardware[0].Absent)
	require.Equal(t, encoder.PresetNVENC, a.Hardware[1].Name)
	require.NotEmpty(t, a.Hardware[1].OpenFailure)
	require.Equal(t, encoder.PresetOpenH264, a.Software.Name)
	want := dist.Normal(20*time.Millisecond, 2*time.Millisecond)
	want.Min = 15 * time.Millisecond
	require.Equal(t, want, a.Software.EncodeTime)
	require.Equal(t, 3_000_000, a.Software.Bitrate)

	require.Equal(t, 30.0, a.Refresh)
	require.Equal(t, 30.0, p.Refresh)
	require.True(t, a.Capture.ConvertOnCPU)
	require.Equal(t, 128<<10, a.SendCap)
	require.Equal(t, 5, a.RefinePasses)
	require.Equal(t, 200*time.Millisecond, a.RefineEvery)
	require.True(t, a.NoRefine)
	steps, ok := a.Controller.(*agent.Steps)
	require.True(t, ok, "%T", a.Controller)
	require.Equal(t, int64(3_000_000), steps.Initial)
	require.Equal(t, []time.Duration{5 * time.Second}, steps.At)
	require.Equal(t, []int64{2_000_000}, steps.Bps)
	require.True(t, steps.Start.IsZero(), "steps count from the session's time zero, set when it starts")

	require.Equal(t, dist.List(2*time.Millisecond, 4*time.Millisecond), s.Viewer.Decode)
	require.Equal(t, 20*time.Millisecond, s.Viewer.Refresh)
	require.Equal(t, 5*time.Millisecond, s.Viewer.Present)
	require.Equal(t, scenarios.Clock{Offset: 3 * time.Second, DriftPPM: 50}, s.Clocks.Agent)
	require.Equal(t, scenarios.Clock{Offset: -time.Second, DriftPPM: -20}, s.Clocks.Viewer)

	require.Equal(t, 30.0, s.Screen.Refresh, "the screen refreshes at the agent's rate")
	require.Equal(t, []screen.Phase{
		{Source: screen.Animation{Rate: 30, Complexity: 0.7}},
		{At: time.Second, Source: screen.Still{}},
		{At: 2 * time.Second, Source: screen.Typing{Complexity: 0.5}},
		{At: 3 * time.Second, Source: screen.Scrolling{Rate: 20, Region: screen.Rect{X: 0.1, Y: 0.1, W: 0.5, H: 0.5}}},
		{At: 4 * time.Second, Source: screen.Video{FPS: 24, Complexity: 0.95}},
		{At: 5 * time.Second, Source: screen.Photo{Region: screen.Rect{X: 0, Y: 0, W: 1, H: 1}}},
	}, s.Screen.Timeline)
}

// The defaults: no network is perfect, no screen the animation (N3), the
// fixed controller at 4 Mbit/s, OpenH264 with assembly at its own encode
// time.
func TestConvertDefaults(t *testing.T) {
	p, err := Convert(&scenarios.Scenario{Name: "bare", Duration: time.Second})
	require.NoError(t, err)
	s := p
	require.Nil(t, s.Uplink)
	require.Nil(t, s.Downlink)
	require.Nil(t, s.Screen)

	require.Equal(t, agent.Fixed{Bps: agent.DefaultBitrate}, s.Agent.Controller)
	sw, err := encoder.Preset(encoder.PresetOpenH264Asm)
	require.NoError(t, err)
	sw.Bitrate = agent.DefaultBitrate
	require.Equal(t, sw, s.Agent.Software)
	require.Equal(t, agent.DefaultRefresh, p.Refresh)
	require.True(t, s.Viewer.Decode.IsZero(), "the viewer keeps its default decode time")

	// A refresh without a screen timeline keeps the animation, at that
	// refresh.
	p, err = Convert(&scenarios.Scenario{Name: "30Hz", Duration: time.Second, Agent: scenarios.Agent{Refresh: 30}})
	require.NoError(t, err)
	require.Equal(t, &screen.Config{Refresh: 30, Timeline: []screen.Phase{{Source: screen.Animation{}}}}, p.Screen)
}

func TestConvertErrors(t *testing.T) {
	base := func() *scenarios.Scenario {
		return &scenarios.Scenario{Name: "bad", Duration: time.Second}
	}
	for _, tc := range []struct {
		name   string
		change func(*scenarios.Scenario)
		want   error
		says   string
	}{
		{"strategy", func(s *scenarios.Scenario) { s.Path = scenarios.Path{Connect: "carrier-pigeon"} }, laberr.ErrUnsupported, `path strategy "carrier-pigeon"`},
		{"blocked plain", func(s *scenarios.Scenario) {
			s.Network.Up = []scenarios.Phase{{BlockUDP: true}}
		}, laberr.ErrScenario, "network.up[0].block_udp: UDP is blocked from the start and the plain path has no fallback"},
		{"router", func(s *scenarios.Scenario) { s.Path = scenarios.Path{Connect: "auto", ViewerNAT: "cgnat"} }, laberr.ErrScenario, `path.viewer_nat: unknown router "cgnat"`},
		{"unknown controller", func(s *scenarios.Scenario) { s.Controller.Kind = "bbr" }, laberr.ErrUnsupported, `controller kind "bbr"`},
		{"abr refuses", func(s *scenarios.Scenario) {
			s.Controller = scenarios.Controller{Kind: "abr", Min: 5_000_000, Max: 1_000_000}
		}, laberr.ErrScenario, "controller:"},
		{"preset", func(s *scenarios.Scenario) { s.Agent.Encoder = "x264" }, laberr.ErrScenario, "agent.encoder"},
		{"absent not probed", func(s *scenarios.Scenario) { s.Agent.Absent = []string{"nvenc"} }, laberr.ErrScenario, `agent.absent: "nvenc" is not in agent.hardware`},
		{"source", func(s *scenarios.Scenario) { s.Screen = []scenarios.ScreenPhase{{Source: "fireworks"}} }, laberr.ErrScenario, `screen[0]: unknown source "fireworks"`},
		{"queue without bottleneck", func(s *scenarios.Scenario) {
			s.Network.Down = []scenarios.Phase{{Queue: scenarios.Queue{Packets: 10}}}
		}, laberr.ErrScenario, "network.down[0]: a queue or overhead needs a rate or a trace"},
		{"netem refuses", func(s *scenarios.Scenario) {
			s.Network.Up = []scenarios.Phase{{Spikes: &scenarios.Spikes{Min: time.Second, Max: time.Millisecond, Every: time.Second}}}
		}, laberr.ErrScenario, "network.up[0]: spikes: min 1s is greater than max 1ms"},
		{"phases out of order", func(s *scenarios.Scenario) {
			s.Network.Down = []scenarios.Phase{{At: time.Second}, {At: time.Second}}
		}, laberr.ErrScenario, "network.down[1]: at 1s"},
		{"trace missing", func(s *scenarios.Scenario) {
			s.Network.Down = []scenarios.Phase{{Trace: &scenarios.Trace{File: "testdata/traces/none.down"}}}
		}, laberr.ErrScenario, `trace "testdata/traces/none.down"`},
		{"shared name", func(s *scenarios.Scenario) {
			s.Network.Down = []scenarios.Phase{{Trace: &scenarios.Trace{File: "shared:../x"}}}
		}, laberr.ErrScenario, `"shared:../x" is not a shared trace`},
		{"netem refuses the trace's offset", func(s *scenarios.Scenario) {
			s.Network.Down = []scenarios.Phase{{Trace: &scenarios.Trace{File: "testdata/traces/cellular-steady.down", Offset: time.Hour, NoLoop: true}}}
		}, laberr.ErrScenario, "network.down[0]: trace: trace offset 1h0m0s is not below the trace's length 1m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := base()
			tc.change(sc)
			_, err := Convert(sc)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.says)
		})
	}
}

// A shared trace resolves beside the module root; where the shared folder
// is absent the error is scenarios.ErrSharedAbsent, saying where it looked, and
// where it is there a name it does not hold fails: a misspelled name is
// not a reason to skip.
func TestSharedTraceResolution(t *testing.T) {
	root, err := modroot.Find()
	require.NoError(t, err)
	path, err := resolveTrace("", "shared:Verizon-LTE-short.down")
	if errors.Is(err, scenarios.ErrSharedAbsent) {
		t.Logf("shared folder absent here: %v", err)
		if os.Getenv(needs.Shared) == "1" {
			t.Fatalf("%s=1 requires the shared folder: %v", needs.Shared, err)
		}
	} else {
		require.NoError(t, err)
		require.Equal(t, filepath.Join(filepath.Dir(root), "shared", "traces", "mahimahi", "Verizon-LTE-short.down"), path)
	}

	// A module of its own without a shared folder beside it.
	dir := t.TempDir()
	mod := filepath.Join(dir, "mod")
	require.NoError(t, os.MkdirAll(filepath.Join(mod, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module x\n"), 0o644))
	t.Chdir(filepath.Join(mod, "sub"))
	shared := filepath.Join(dir, "shared", "traces", "mahimahi")
	sc := &scenarios.Scenario{Name: "cellular", Duration: time.Second,
		Network: scenarios.Network{Down: []scenarios.Phase{{Trace: &scenarios.Trace{File: "shared:Verizon-LTE-short.down"}}}}}
	_, err = Convert(sc)
	require.ErrorIs(t, err, scenarios.ErrSharedAbsent)
	require.ErrorContains(t, err, shared+" does not exist (the shared folder sits beside the repository)")
	p, err := resolveTrace("", "testdata/traces/x.down")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(mod, "testdata", "traces", "x.down"), p, "relative paths count from the module root")

	// With the folder, a name it does not hold is the scenario's mistake.
	require.NoError(t, os.MkdirAll(shared, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(shared, "Verizon-LTE-short.down"), []byte("1\n"), 0o644))
	_, err = Convert(sc)
	require.NoError(t, err)
	sc.Network.Down[0].Trace.File = "shared:Verizon-LTE-shrot.down"
	_, err = Convert(sc)
	require.ErrorIs(t, err, laberr.ErrScenario)
	require.NotErrorIs(t, err, scenarios.ErrSharedAbsent)
	require.ErrorContains(t, err, `no shared trace "Verizon-LTE-shrot.down" in `+shared+": did you mean Verizon-LTE-short.down?")
}

// A trace from an offset, played once: netem gets both, the result's
// description of the phase says which segment ran, and the capacity counts
// the opportunities from the offset, none after the end.
func TestConvertTraceSegment(t *testing.T) {
	dir := t.TempDir()
	// 10 s: one opportunity every 10 ms for 5 s, then one a millisecond.
	var b strings.Builder
	for ms := 0; ms < 5000; ms += 10 {
		fmt.Fprintln(&b, ms)
	}
	for ms := 5000; ms < 10000; ms++ {
		fmt.Fprintln(&b, ms)
	}
	fmt.Fprintln(&b, 10000)
	file := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "t.down"), []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(file, []byte(`name: segment
description: d
duration: 20s
network:
  down:
    - {delay: 10ms, trace: {file: t.down, offset: 5s, loop: false}}
    - {at: 10s, trace: t.down}
`), 0o644))
	sc, err := scenarios.LoadFile(file)
	require.NoError(t, err)
	p, err := Convert(sc)
	require.NoError(t, err)

	tl := find[*netem.TraceLink](t, p.Downlink)
	require.Equal(t, 5*time.Second, tl.Offset)
	require.True(t, tl.NoLoop)
	tl = find[*netem.TraceLink](t, p.DownlinkTimeline[0].Impairments)
	require.Zero(t, tl.Offset)
	require.False(t, tl.NoLoop)

	trace := filepath.Join(dir, "t.down")
	require.Equal(t, result.PhaseInfo{Description: "trace " + trace + " from 5s (played once), delay 10ms", Trace: trace}, p.Network.Down[0])
	require.Equal(t, result.PhaseInfo{At: 10 * time.Second, Description: "trace " + trace, Trace: trace}, p.Network.Down[1])

	// From the offset, the fast half (1000 opportunities a second), then
	// the end: nothing from 5 s to 10 s; then the trace again, wrapping,
	// which at 10 s of the session is at its start.
	bits, capped := p.DownlinkCapacity.Between(0, time.Second)
	require.Equal(t, float64(1000*netem.TraceMTU*8), bits)
	require.Equal(t, time.Second, capped)
	bits, _ = p.DownlinkCapacity.Between(4*time.Second, 5*time.Second)
	require.Equal(t, float64(1000*netem.TraceMTU*8), bits)
	bits, _ = p.DownlinkCapacity.Between(5*time.Second, 5*time.Second+time.Millisecond)
	require.Equal(t, float64(netem.TraceMTU*8), bits, "the trace's last line, at its end (10000 ms)")
	bits, capped = p.DownlinkCapacity.Between(5*time.Second+time.Millisecond, 10*time.Second)
	require.Zero(t, bits, "played once: the link is dark after the end")
	require.Equal(t, 5*time.Second-time.Millisecond, capped)
	bits, _ = p.DownlinkCapacity.Between(10*time.Second, 11*time.Second)
	require.Equal(t, float64(101*netem.TraceMTU*8), bits, "the first repetition's last line and the second's first second")
}

// A trace's capacity counts its opportunities in a window, across its
// repetitions.
func TestTraceCapacityCountsOpportunities(t *testing.T) {
	// Period 10 ms; the opportunity at 10 ms and the next repetition's at 0
	// are two, at the same instant.
	tr, err := netem.ParseTrace(strings.NewReader("0\n3\n3\n10\n"), "t")
	require.NoError(t, err)
	tt, err := traceTimesOf(tr)
	require.NoError(t, err)
	ms := time.Millisecond
	for _, tc := range []struct {
		t    time.Duration
		want int64
	}{{0, 0}, {ms / 2, 1}, {3 * ms, 1}, {4 * ms, 3}, {10 * ms, 3}, {11 * ms, 5}, {20 * ms, 7}, {21 * ms, 9}, {1000 * ms, 399}} {
		require.Equal(t, tc.want, tt.before(tc.t), "opportunities before %v", tc.t)
	}
	bits, capped := Capacity{{trace: &traceCap{times: tt}}}.Between(0, time.Second)
	require.Equal(t, time.Second, capped)
	require.Equal(t, float64(399*netem.TraceMTU*8), bits)
}

func TestConvertQueueKinds(t *testing.T) {
	for _, c := range []struct {
		queue scenarios.Queue
		want  netem.QueueLimit
		desc  string
	}{
		{scenarios.Queue{Packets: 100, PIE: true}, netem.QueueLimit{Packets: 100, PIE: &netem.PIEParams{}}, "queue 100 packets PIE"},
		{scenarios.Queue{Packets: 100, FQCoDel: true}, netem.QueueLimit{Packets: 100, FQCoDel: &netem.FQCoDelParams{}}, "queue 100 packets FQ-CoDel"},
		{scenarios.Queue{DualPI2: true}, netem.QueueLimit{DualPI2: &netem.DualPI2Params{}}, "queue DualPI2"},
		{scenarios.Queue{Bytes: 256 << 10, Cake: "dual-dsthost"}, netem.QueueLimit{Bytes: 256 << 10, Cake: &netem.CakeParams{Hosts: netem.CakeDualDstHost}}, "queue 262144 B CAKE dual-dsthost"},
		{scenarios.Queue{Cake: "triple-isolate"}, netem.QueueLimit{Cake: &netem.CakeParams{Hosts: netem.CakeTripleIsolate}}, "queue CAKE triple-isolate"},
		{scenarios.Queue{Cake: "dual-srchost"}, netem.QueueLimit{Cake: &netem.CakeParams{Hosts: netem.CakeDualSrcHost}}, "queue CAKE dual-srchost"},
	} {
		sc := &scenarios.Scenario{Name: "net", Seed: 3, Duration: 30 * time.Second,
			Network: scenarios.Network{Up: []scenarios.Phase{{Rate: 1_000_000, Queue: c.queue}}}}
		p, err := Convert(sc)
		require.NoError(t, err)
		require.Equal(t, c.want, find[*netem.Rate](t, p.Uplink).Queue)
		require.Contains(t, p.Network.Up[0].Description, c.desc)
	}
}
