package scenarios

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func ptr(f float64) *float64 { return &f }

// absPath is the absolute form of a path from the package's folder: a
// scenario file's trace path, as the loader writes it.
func absPath(t testing.TB, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	require.NoError(t, err)
	return abs
}

// TestEveryKey loads testdata/good/every-key.yaml, which uses every key of
// the format, into exactly the Scenario it describes.
func TestEveryKey(t *testing.T) {
	const file = "testdata/good/every-key.yaml"
	s, err := LoadFile(file)
	require.NoError(t, err)
	used := map[string]bool{}
	// up, down and both cannot all be in one file: directions.yaml has down;
	// nor can steps go beside the ABR: steps.yaml has them; nor hops beside
	// the network's own links: hops.yaml has them.
	for _, f := range []string{file, "testdata/good/directions.yaml", "testdata/good/steps.yaml", "testdata/good/hops.yaml"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, d, err := decodeFile(f, data, "", nil)
		require.NoError(t, err)
		maps.Copy(used, d.used)
	}
	for kind, keys := range objects {
		for _, key := range keys {
			require.True(t, used[kind+"."+key], "testdata/good does not use %s.%s", kind, key)
		}
	}

	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var expectLines []int
	for i, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "  - {measure:") {
			expectLines = append(expectLines, i+1)
		}
	}
	require.Len(t, expectLines, 12)

	want := &Scenario{
		File:        file,
		Name:        "every-key",
		Description: "A phone on a cellular link that hands over at 10 s, used by the tests to show every key of the format at least once.",
		Findings:    []string{"N13", "N14"},
		Groups:      []string{"mobile", "cellular"},
		Duration:    30 * time.Second,
		Seed:        7,
		Network: Network{
			Up: []Phase{{Delay: 25 * time.Millisecond, Rate: 1_000_000, Queue: Queue{PIE: true}}},
			Down: []Phase{
				{
					Delay:     25 * time.Millisecond,
					Jitter:    &Jitter{Spread: 5 * time.Millisecond, Distribution: "normal", Correlation: 0.25},
					Loss:      0.01,
					Duplicate: percentOf(0.1),
					Corrupt:   percentOf(0.1),
					Rate:      5_000_000,
					Overhead:  28,
					Queue:     Queue{Bytes: 256 << 10, Packets: 1000, Delay: 100 * time.Millisecond, CoDel: true},
					Spikes: &Spikes{Min: 150 * time.Millisecond, Max: 600 * time.Millisecond, Every: 3 * time.Second,
						Duration: 200 * time.Millisecond, Offset: time.Second, Random: true},
				},
				{
					At:      10 * time.Second,
					Delay:   40 * time.Millisecond,
					Gilbert: &Gilbert{P: 0.01, R: 0.3, OneMinusH: 1, OneMinusK: 0},
					Trace:   &Trace{File: absPath(t, "testdata/traces/cellular-a.down"), Offset: 5 * time.Second, NoLoop: true},
					Outages: &Outages{Every: 10 * time.Second, Duration: 500 * time.Millisecond, Offset: 5 * time.Second, Hold: true},
				},
				{
					At:      20 * time.Second,
					Delay:   25 * time.Millisecond,
					Outages: &Outages{Windows: []Window{{Start: 22 * time.Second, Duration: 2 * time.Second}}},
				},
			},
		},
		Screen: []ScreenPhase{
			{Source: "animation", Complexity: 0.8, Rate: 30},
			{At: 10 * time.Second, Source: "photo", Complexity: 0.9, Region: &Region{X: 0.1, Y: 0.1, W: 0.5, H: 0.5}},
			{At: 20 * time.Second, Source: "recording", File: absPath(t, tinyRecording), Offset: 100 * time.Millisecond, NoLoop: true},
		},
		Agent: Agent{
			Encoder: "openh264-asm",
			EncodeTime: &Dist{Mean: 9 * time.Millisecond, SD: time.Millisecond,
				Min: 7 * time.Millisecond, Max: 12 * time.Millisecond},
			FrameSizes:   "budget",
			Hardware:     []string{"quicksync", "nvenc"},
			Absent:       []string{"quicksync"},
			Failing:      []string{"nvenc"},
			Refresh:      60,
			SendCap:      256 << 10,
			RefinePasses: 15,
			RefineEvery:  100 * time.Millisecond,
		},
		Viewer: Viewer{Decode: &Dist{List: []time.Duration{3 * time.Millisecond, 4 * time.Millisecond}},
			Refresh: 60, Present: 8 * time.Millisecond, Policy: "wait"},
		Clocks: Clocks{Agent: Clock{Offset: 3 * time.Second, DriftPPM: 50},
			Viewer: Clock{Offset: -time.Second, DriftPPM: -20}},
		Controller: Controller{Kind: "abr", Bitrate: 4_000_000, Min: 500_000, Max: 8_000_000,
			Window: time.Second, Baseline: 10 * time.Second, Threshold: 60 * time.Millisecond,
			Sustain: time.Second, Close: 20 * time.Millisecond, Hold: 2 * time.Second,
			Decrease: 0.2, Increase: 0.15, Guard: 0.5},
		Switches: Switches{OldWaitForFrame: true, OldCaptureFirst: true, OldShowEveryFrame: true,
			OldRestartOnBitrateChange: true, OldABRTotalLatency: true, OldABRIgnoresUtilisation: true,
			OldABRSinglePeaks: true},
		Path: Path{Connect: "auto", AgentNAT: "symmetric", ViewerNAT: "full-cone", RelayDelay: 2500 * time.Microsecond,
			IgnoreLANCandidates: true, ForceRelay: true},
		ECN: "classic",
		Traffic: []Flow{
			{Name: "download", Kind: "tcp-bulk", Start: 10 * time.Second, Stop: 25 * time.Second, Direction: "down",
				Congestion: "reno", ECN: "classic", Delay: 20 * time.Millisecond},
			{Name: "backup", Kind: "quic-bulk", Start: 5 * time.Second, Direction: "up"},
			{Name: "voice", Kind: "cbr", Rate: 64_000, Size: 160},
			{Name: "browsing", Kind: "web", Object: &ObjectSizes{Mean: 10710, SD: 25032, Min: 100, Max: 2 << 20}, Think: 5 * time.Second},
			{Name: "colleague", Kind: "session", Controller: &Controller{Kind: "gcc", Max: 8_000_000},
				Screen: []ScreenPhase{{Source: "typing"}}},
			{Name: "camera", Kind: "reverse-media", Start: 2 * time.Second},
		},
		Expect: []Expectation{
			{Measure: "latency.median", Max: ptr(0.150), From: 5 * time.Second, Line: expectLines[0]},
			{Measure: "latency.p95", Min: ptr(0.020), Max: ptr(1.5), From: time.Second, To: 10 * time.Second, Band: true, Line: expectLines[1]},
			{Measure: "frames.dropped", Max: ptr(0), Line: expectLines[2]},
			{Measure: "bitrate.mean", Min: ptr(500_000), Line: expectLines[3]},
			{Measure: "quality.final", Min: ptr(0.95), Line: expectLines[4]},
			{Measure: "fps", Min: ptr(29.5), Required: "the display's 30 Hz, a frame at most skipped now and then", Line: expectLines[5]},
			{Measure: "recovery.under", Latency: 200 * time.Millisecond, Max: ptr(5), From: 10 * time.Second, Line: expectLines[6]},
			{Measure: "bitrate.target", At: 12 * time.Second, Max: ptr(4_000_000), Line: expectLines[7]},
			{Measure: "bitrate.capacity-correlation", Every: time.Second, Min: ptr(0.5), To: 20 * time.Second, Line: expectLines[8]},
			{Measure: "flow.share", Flow: "download", Max: ptr(0.8), From: 10 * time.Second, To: 25 * time.Second, Line: expectLines[9]},
			{Measure: "fairness.jain", Min: ptr(0.8), Line: expectLines[10]},
			{Measure: "latency.median", Max: ptr(0.020), From: 10 * time.Second, ExpectedFailure: "the handover's queue takes longer to drain", Line: expectLines[11]},
		},
	}
	require.Equal(t, want, s)
	requireRoundTrip(t, s)

	steps, err := LoadFile("testdata/good/steps.yaml")
	require.NoError(t, err)
	require.Equal(t, Controller{Kind: "steps", Bitrate: 4_000_000,
		Steps: []Step{{At: 5 * time.Second, Bitrate: 3_200_000}}}, steps.Controller)
	requireRoundTrip(t, steps)
}

// requireRoundTrip writes s back in the format and checks that it reads
// back as s (but for the file and the expectations' lines).
func requireRoundTrip(t testing.TB, s *Scenario) {
	t.Helper()
	out, err := yaml.Marshal(s)
	require.NoError(t, err)
	back, err := Parse(s.File, out, nil)
	require.NoError(t, err, "%s", out)
	require.Equal(t, withoutLines(s), withoutLines(back), "%s", out)
}

func withoutLines(s *Scenario) *Scenario {
	c := *s
	c.Expect = slices.Clone(s.Expect)
	for i := range c.Expect {
		c.Expect[i].Line = 0
	}
	return &c
}

// TestForms checks the other ways of writing a value: the short forms, the
// alternatives, and what a left-out value becomes.
func TestForms(t *testing.T) {
	const head = "name: t\ndescription: d\nduration: 20s\n"
	for _, tc := range []struct {
		name, body string
		check      func(t *testing.T, s *Scenario)
	}{
		{"defaults of a bare scenario", "", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Scenario{File: "f.yaml", Name: "t", Description: "d", Duration: 20 * time.Second,
				Controller: Controller{Kind: "fixed"}}, s)
		}},
		{"refine off, convert cpu", "agent: {refine: off, convert: cpu}", func(t *testing.T, s *Scenario) {
			require.Equal(t, Agent{NoRefine: true, ConvertOnCPU: true}, s.Agent)
		}},
		{"constant dist", "agent: {encode_time: 130ms}", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Dist{Mean: 130 * time.Millisecond}, s.Agent.EncodeTime)
		}},
		{"uniform dist", "viewer: {decode: {min: 3ms, max: 4ms}}", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Dist{Min: 3 * time.Millisecond, Max: 4 * time.Millisecond}, s.Viewer.Decode)
		}},
		{"normal dist", "agent: {encode_time: {mean: 130ms, sd: 10ms}}", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Dist{Mean: 130 * time.Millisecond, SD: 10 * time.Millisecond}, s.Agent.EncodeTime)
		}},
		{"one phase, one direction", "network: {down: {delay: 500µs}}", func(t *testing.T, s *Scenario) {
			require.Nil(t, s.Network.Up)
			require.Equal(t, []Phase{{Delay: 500 * time.Microsecond}}, s.Network.Down)
		}},
		{"gilbert with tc's defaults", "network: {down: {gilbert: {p: 5%}}}", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Gilbert{P: 0.05, R: 0.95, OneMinusH: 1}, s.Network.Down[0].Gilbert)
		}},
		{"jitter with the default distribution", "network: {down: {jitter: {spread: 5ms}}}", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Jitter{Spread: 5 * time.Millisecond, Distribution: "uniform"}, s.Network.Down[0].Jitter)
		}},
		{"one screen phase, rate in Hz", "screen: {source: video, rate: 24Hz}", func(t *testing.T, s *Scenario) {
			require.Equal(t, []ScreenPhase{{Source: "video", Rate: 24}}, s.Screen)
		}},
		{"one expectation, to an instant", "expect: {measure: utilisation, min: 80%, to: 15s}", func(t *testing.T, s *Scenario) {
			require.Equal(t, []Expectation{{Measure: "utilisation", Min: ptr(0.8), To: 15 * time.Second, Line: 4}}, s.Expect)
		}},
		{"a share above 100%, a negative correlation", "expect:\n  - {measure: utilisation.sent, max: 120%}\n  - {measure: bitrate.capacity-correlation, every: 1s, min: -0.25, max: 1}", func(t *testing.T, s *Scenario) {
			require.Equal(t, []Expectation{{Measure: "utilisation.sent", Max: ptr(1.2), Line: 5},
				{Measure: "bitrate.capacity-correlation", Every: time.Second, Min: ptr(-0.25), Max: ptr(1), Line: 6}}, s.Expect)
		}},
		{"an instant, a latency bound", "expect: [{measure: bitrate.sent, at: 20s, min: 1Mbit/s}, {measure: latency.time-above, latency: 150ms, max: 5%, from: 1s}]", func(t *testing.T, s *Scenario) {
			require.Equal(t, []Expectation{{Measure: "bitrate.sent", At: 20 * time.Second, Min: ptr(1_000_000), Line: 4},
				{Measure: "latency.time-above", Latency: 150 * time.Millisecond, Max: ptr(0.05), From: time.Second, Line: 4}}, s.Expect)
		}},
		{"steps without kind", "controller: {steps: [{at: 0s, bitrate: 1Mbit/s}]}", func(t *testing.T, s *Scenario) {
			require.Equal(t, Controller{Kind: "steps", Steps: []Step{{Bitrate: 1_000_000}}}, s.Controller)
		}},
		{"gcc with bounds", "controller: {kind: gcc, bitrate: 2Mbit/s, min: 300kbit/s, max: 20Mbit/s}", func(t *testing.T, s *Scenario) {
			require.Equal(t, Controller{Kind: "gcc", Bitrate: 2_000_000, Min: 300_000, Max: 20_000_000}, s.Controller)
		}},
		{"abr with its defaults", "controller: {kind: abr}", func(t *testing.T, s *Scenario) {
			require.Equal(t, Controller{Kind: "abr"}, s.Controller, "the loader fills in no defaults: the controller has them")
		}},
		{"abr, some parameters, an increase above 100%", "controller: {kind: abr, max: 6Mbit/s, baseline: 1s, increase: 150%, guard: 100%}\nswitches: {old_abr_single_peaks: true}", func(t *testing.T, s *Scenario) {
			require.Equal(t, Controller{Kind: "abr", Max: 6_000_000, Baseline: time.Second, Increase: 1.5, Guard: 1}, s.Controller)
			require.Equal(t, Switches{OldABRSinglePeaks: true}, s.Switches)
		}},
		{"abr, baseline as long as the window, bitrate at a bound", "controller: {kind: abr, bitrate: 1Mbit/s, min: 1Mbit/s, window: 2s, baseline: 2s, decrease: 99.5%}", func(t *testing.T, s *Scenario) {
			require.Equal(t, Controller{Kind: "abr", Bitrate: 1_000_000, Min: 1_000_000, Window: 2 * time.Second,
				Baseline: 2 * time.Second, Decrease: percentOf(99.5)}, s.Controller)
		}},
		{"null is absent", "seed: ~\nagent: null\nnetwork: {down: {loss: }}", func(t *testing.T, s *Scenario) {
			require.Equal(t, uint64(0), s.Seed)
			require.Equal(t, []Phase{{}}, s.Network.Down)
		}},
		{"aliases", "network:\n  up: &lan {delay: 1ms, rate: 1Gbit/s}\n  down: *lan", func(t *testing.T, s *Scenario) {
			require.Equal(t, s.Network.Up, s.Network.Down)
			require.Equal(t, []Phase{{Delay: time.Millisecond, Rate: 1_000_000_000}}, s.Network.Down)
		}},
		{"largest seed", "seed: 18446744073709551615", func(t *testing.T, s *Scenario) {
			require.Equal(t, uint64(18446744073709551615), s.Seed)
		}},
		{"empty timeline", "network: {down: []}", func(t *testing.T, s *Scenario) {
			require.Nil(t, s.Network.Down)
		}},
		{"a trace, its path alone", "network: {down: {trace: testdata/traces/cellular-a.down}}", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Trace{File: absPath(t, "testdata/traces/cellular-a.down")}, s.Network.Down[0].Trace,
				"from the file's folder (f.yaml: the working directory), from 0s, wrapping")
		}},
		{"a trace from an offset, played once", "network: {both: {trace: {file: testdata/traces/cellular-a.down, offset: 19.5s, loop: false}}}", func(t *testing.T, s *Scenario) {
			want := &Trace{File: absPath(t, "testdata/traces/cellular-a.down"), Offset: 19500 * time.Millisecond, NoLoop: true}
			require.Equal(t, want, s.Network.Down[0].Trace)
			require.Equal(t, want, s.Network.Up[0].Trace)
		}},
		{"a trace looping, said so", "network: {down: {trace: {file: testdata/traces/cellular-a.down, loop: true}}}", func(t *testing.T, s *Scenario) {
			require.Equal(t, &Trace{File: absPath(t, "testdata/traces/cellular-a.down")}, s.Network.Down[0].Trace)
		}},
		{"a session flow's controller without a kind", "traffic: [{name: s, kind: session, controller: {bitrate: 2Mbit/s}}]", func(t *testing.T, s *Scenario) {
			require.Equal(t, []Flow{{Name: "s", Kind: "session", Controller: &Controller{Kind: "fixed", Bitrate: 2_000_000}}}, s.Traffic,
				"fixed, as the scenario's own")
		}},
		{"a flow measurement of the main session", "traffic: [{name: s, kind: session}]\nexpect: [{measure: flow.latency.p95, flow: main, max: 100ms}, {measure: fairness.jain, min: 0.9, from: 5s}]", func(t *testing.T, s *Scenario) {
			require.Equal(t, []Expectation{{Measure: "flow.latency.p95", Flow: "main", Max: ptr(0.1), Line: 5},
				{Measure: "fairness.jain", Min: ptr(0.9), From: 5 * time.Second, Line: 5}}, s.Expect)
		}},
		{"outage windows back to back", "network: {down: {outages: {windows: [{start: 1s, duration: 1s}, {start: 2s, duration: 1s}]}}}", func(t *testing.T, s *Scenario) {
			require.Len(t, s.Network.Down[0].Outages.Windows, 2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("f.yaml", []byte(head+tc.body+"\n"), nil)
			require.NoError(t, err)
			tc.check(t, s)
			require.NoError(t, s.Validate())
			requireRoundTrip(t, s)
		})
	}
}

// TestHopsFile loads a path of several hops into the hops it writes, each
// direction as a network's (both for the two, a single phase, a list), the
// defaults' network left unused, and writes it back.
func TestHopsFile(t *testing.T) {
	data, err := os.ReadFile("testdata/good/hops.yaml")
	require.NoError(t, err)
	defaults, err := os.ReadFile("library/defaults.yaml")
	require.NoError(t, err)
	s, err := parse("testdata/good/hops.yaml", data, "library/defaults.yaml", defaults)
	require.NoError(t, err)
	require.Empty(t, s.Network.Up, "the defaults' both is not used beside hops")
	require.Empty(t, s.Network.Down)
	require.Len(t, s.Network.Hops, 2)
	core, access := s.Network.Hops[0], s.Network.Hops[1]
	require.Equal(t, "core", core.Name)
	require.Equal(t, []Phase{{Delay: 10 * time.Millisecond, Rate: 10_000_000}}, core.Up)
	require.Equal(t, core.Up, core.Down, "both is each direction's")
	require.Equal(t, "access", access.Name)
	require.Equal(t, []Phase{{Delay: 5 * time.Millisecond, Rate: 1_000_000}}, access.Up)
	require.Equal(t, []Phase{
		{Delay: 5 * time.Millisecond, Rate: 4_000_000, Queue: Queue{Delay: 300 * time.Millisecond}},
		{At: 5 * time.Second, Delay: 5 * time.Millisecond, Rate: 2_000_000},
	}, access.Down)
	require.Equal(t, [2]int{1492, 1400}, [2]int{access.UpMTU, access.DownMTU})
	require.Equal(t, []string{"access"}, s.Traffic[0].Hops)
	requireRoundTrip(t, s)
}
