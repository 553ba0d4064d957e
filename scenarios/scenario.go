// Package scenarios owns the lab's scenario format: a YAML file per
// scenario (network timeline per direction, screen timeline, encoder and
// viewer models, clocks, bitrate controller, switches restoring documented
// old behaviour, path, expectations), its strict loader, its JSON Schema and
// the scenario library embedded in the binary.
//
// This file is the format's data model: what a loaded, validated scenario
// holds, in Go units (durations, bits per second, fractions, bytes).
package scenarios

import "time"

// Scenario is one loaded, validated scenario.
type Scenario struct {
	// File is where the scenario was loaded from ("library/mobile.yaml").
	File string
	// Name is unique in a library; tests and results are named after it.
	Name string
	// Description says what the scenario shows, in a sentence or two.
	Description string
	// Findings lists the IDs of FINDINGS.md the scenario reproduces.
	Findings []string
	// Groups name the go test entry points that run it: "mobile", "lan",
	// "lossy", "pipeline", "encoder", "path", "cellular", "abr" (go test
	// ./lab -run Mobile).
	Groups []string
	// Duration is how long the session runs after the handshake.
	Duration time.Duration
	// Seed seeds every random decision of the run.
	Seed uint64
	// Network is the path's impairments per direction.
	Network Network
	// Screen is the agent PC's screen content over time.
	Screen []ScreenPhase
	// Agent, Viewer, Clocks, Controller, Switches and Path configure the
	// session; Expect lists what the run must show.
	Agent      Agent
	Viewer     Viewer
	Clocks     Clocks
	Controller Controller
	Switches   Switches
	Path       Path
	Expect     []Expectation
}

// Network is a path: Down carries agent -> viewer (the video), Up viewer ->
// agent (reports, acknowledgements). Each is a timeline of phases; a phase
// replaces the whole set of impairments at its instant.
type Network struct {
	Up, Down []Phase
}

// Phase is one step of a direction's timeline. Zero values mean "none".
type Phase struct {
	// At is when the phase starts, from the start of the session.
	At time.Duration
	// Delay is the fixed one-way delay.
	Delay time.Duration
	// Jitter adds random delay.
	Jitter *Jitter
	// Loss is independent random loss, a fraction in [0, 1].
	Loss float64
	// Gilbert is Gilbert-Elliott loss instead of independent loss.
	Gilbert *Gilbert
	// Duplicate and Corrupt are fractions of packets duplicated and corrupted.
	Duplicate, Corrupt float64
	// Rate caps the bottleneck in bits per second (0: no cap).
	Rate int64
	// Overhead is added to each packet's size for the rate cap, in bytes.
	Overhead int
	// Trace replaces Rate with a mahimahi trace's capacity: a path from the
	// repository's root (testdata/traces/...), or "shared:NAME" for
	// ../shared/traces/mahimahi/NAME.
	Trace string
	// Queue bounds the bottleneck's queue.
	Queue Queue
	// Spikes adds mobile-style latency spikes.
	Spikes *Spikes
	// Outages black the link out.
	Outages *Outages
	// BlockUDP drops every datagram (for the WebSocket fallback).
	BlockUDP bool
}

// Jitter is random delay (netem's jitter impairment).
type Jitter struct {
	Spread       time.Duration // ± range (uniform) or standard deviation
	Distribution string        // uniform, normal, pareto-normal
	Correlation  float64       // 0..1
	Reorder      bool
}

// Gilbert is the Gilbert-Elliott loss model with tc netem's parameters.
type Gilbert struct {
	P, R, OneMinusH, OneMinusK float64
}

// Queue bounds a bottleneck's queue; zero fields are unlimited.
type Queue struct {
	Bytes   int
	Packets int
	Delay   time.Duration
	CoDel   bool
}

// Spikes are extra delays every few seconds (finding N14).
type Spikes struct {
	Min, Max        time.Duration
	Every, Duration time.Duration
	Offset          time.Duration
	Random          bool
}

// Outages are blackout windows: periodic, or listed.
type Outages struct {
	Every, Duration, Offset time.Duration
	Windows                 []Window
	Hold                    bool // held and released at the end, instead of lost
}

// Window is one blackout.
type Window struct {
	Start, Duration time.Duration
}

// ScreenPhase is one step of the screen's timeline.
type ScreenPhase struct {
	// At is when the source takes over.
	At time.Duration
	// Source is animation, still, typing, scrolling, video or photo.
	Source string
	// Complexity (0..1) overrides the source's detail where it has one.
	Complexity float64
	// Rate is the animation's or scrolling's change rate, or the video's
	// frames per second (0: the source's default).
	Rate float64
	// Region is the part of the screen a video, photo or scroll covers, as
	// fractions of the screen (0: the source's default).
	Region *Region
}

// Region is a rectangle in fractions of the screen.
type Region struct {
	X, Y, W, H float64
}

// Agent configures the controlled PC.
type Agent struct {
	// Encoder is the software encoder's preset (default openh264-asm).
	Encoder string
	// EncodeTime overrides the preset's encode time.
	EncodeTime *Dist
	// Hardware lists hardware encoder presets to probe first (N5);
	// Absent and Failing name those that are missing or fail to open.
	Hardware, Absent, Failing []string
	// Refresh is the display refresh in Hz (default 60).
	Refresh float64
	// ConvertOnCPU converts colours on the processor (N4).
	ConvertOnCPU bool
	// SendCap bounds bytes sent and unacknowledged (N8; default 256 KB).
	SendCap int
	// RefinePasses and RefineEvery shape still-image refinement (N15);
	// NoRefine turns it off.
	RefinePasses int
	RefineEvery  time.Duration
	NoRefine     bool
}

// Dist is a duration distribution: a constant, normal(mean, sd),
// uniform(min, max) or a list.
type Dist struct {
	Mean, SD, Min, Max time.Duration
	List               []time.Duration
}

// Viewer configures the viewing PC.
type Viewer struct {
	// Decode is the decode time (default 3 ms).
	Decode *Dist
	// Refresh is the display refresh in Hz (0: present when decoded).
	Refresh float64
	// Present is how long a present takes.
	Present time.Duration
}

// Clocks offset the two PCs' clocks from true time (N1).
type Clocks struct {
	Agent, Viewer Clock
}

// Clock is one PC's clock error.
type Clock struct {
	Offset   time.Duration
	DriftPPM float64
}

// Controller is the bitrate controller and its parameters. Zero values mean
// the controller's defaults (for the ABR, those of finding N10).
type Controller struct {
	// Kind is "fixed", "steps", "abr" (NuviraHub's adaptive bitrate, N10)
	// or "gcc" (the delay-based part of Google Congestion Control).
	Kind string
	// Bitrate is the fixed bitrate, or the initial one, in bits/s.
	Bitrate int64
	// Steps change the bitrate at given instants.
	Steps []Step
	// Min and Max bound an adaptive controller's bitrate, in bits/s.
	Min, Max int64
	// The ABR's rule (N10): when the median latency over Window exceeds
	// the minimum over Baseline by more than Threshold, sustained for
	// Sustain, the bitrate falls by Decrease; when it stays within Close of
	// it, it rises by Increase; Hold is the pause after each change; Guard
	// is the share of the target the video must use for a change (N13).
	Window, Baseline, Threshold, Sustain, Close, Hold time.Duration
	Decrease, Increase, Guard                         float64
}

// Step is one scripted bitrate change.
type Step struct {
	At      time.Duration
	Bitrate int64
}

// Switches restore documented old behaviour; all off is the fixed product.
type Switches struct {
	OldWaitForFrame           bool // N6
	OldCaptureFirst           bool // N7
	OldShowEveryFrame         bool // N8
	OldRestartOnBitrateChange bool // N16
	// The ABR's documented mistakes: judging total latency instead of its
	// network part (N12), changing the bitrate whatever share of it the
	// video uses (N13), reacting to single peaks instead of a queue that
	// lasts a whole second (N14).
	OldABRTotalLatency       bool
	OldABRIgnoresUtilisation bool
	OldABRSinglePeaks        bool
}

// Expectation bounds a named measurement over a time window.
type Expectation struct {
	// Measure names the measurement (see Measurements).
	Measure string
	// From and To bound the window from the session start; To 0 is the end.
	From, To time.Duration
	// Min and Max bound the value (nil: no bound), in the measurement's
	// unit: seconds for durations, bits/s for rates, a count or a fraction.
	Min, Max *float64
	// Line is the expectation's line in File, for reports.
	Line int
}

// Unit is what a measurement's value is.
type Unit string

// Measurement units.
const (
	UnitDuration Unit = "duration" // seconds
	UnitCount    Unit = "count"
	UnitRate     Unit = "rate"     // bits per second
	UnitFraction Unit = "fraction" // 0..1, written as a percentage ("95%")
	UnitRatio    Unit = "ratio"    // a plain number
)

// Measurement describes one named measurement a scenario may bound.
type Measurement struct {
	Name string
	Unit Unit
	Doc  string
}

// Measurements is the catalogue of measurements expectations may name. The
// lab's runner computes every one of them; the loader refuses any other.
var Measurements = []Measurement{
	{"latency.median", UnitDuration, "median true capture-to-display latency of displayed frames"},
	{"latency.p95", UnitDuration, "95th percentile of the same"},
	{"latency.p99", UnitDuration, "99th percentile of the same"},
	{"latency.min", UnitDuration, "minimum of the same"},
	{"latency.max", UnitDuration, "maximum of the same"},
	{"network.median", UnitDuration, "median network part: end of encoding to arrival (N12)"},
	{"estimate.error.max", UnitDuration, "largest gap between the viewer's own latency estimate and the truth (N1)"},
	{"frames.displayed", UnitCount, "frames displayed"},
	{"frames.skipped", UnitCount, "captures skipped by the agent, any reason"},
	{"frames.skipped.send-cap", UnitCount, "captures skipped because 256 KB were unacknowledged (N8)"},
	{"frames.skipped.encoder-unavailable", UnitCount, "captures skipped while the encoder restarted (N16)"},
	{"frames.dropped", UnitCount, "frames dropped by the viewer, any reason"},
	{"frames.dropped.overtaken", UnitCount, "frames dropped because a newer one was decoded first (N8)"},
	{"fps", UnitRatio, "displayed frames per second"},
	{"freezes", UnitCount, "pauses between displayed frames longer than max(150 ms, 3 frame intervals)"},
	{"freeze.longest", UnitDuration, "the longest pause between two displayed frames"},
	{"bitrate.mean", UnitRate, "mean bitrate of the video sent"},
	{"bitrate.min", UnitRate, "lowest target bitrate of the controller"},
	{"quality.final", UnitFraction, "quality figure of the last frame displayed (N15)"},
	{"refinements", UnitCount, "refinement passes sent (N15)"},
	{"utilisation", UnitFraction, "video bytes delivered / link capacity over the window (rate-capped links)"},
	{"recovery", UnitDuration, "longest time after a network phase change until the latency median of a second is back within 20% of its level before"},
	{"time-to-low-latency", UnitDuration, "from the window's start, until the first second whose latency median is under 100 ms (N2's threshold)"},
	{"time-to-full-use", UnitDuration, "from the window's start, until the first second in which the video uses at least 90% of the downlink's capacity"},
	{"connect.time", UnitDuration, "from the viewer's first connection attempt to its QUIC connection (sessions with a path; not windowed)"},
	{"first-frame", UnitDuration, "connect.time plus the first displayed frame's display instant after time zero: what a user waits for the picture (sessions with a path; not windowed)"},
	{"path.direct-lan", UnitCount, "1 when the session went straight between the PCs' LAN addresses, else 0 (sessions with a path)"},
	{"path.direct-public", UnitCount, "1 when it went between public addresses through punched holes, else 0"},
	{"path.relay", UnitCount, "1 when the viewer reached the relay over UDP, else 0"},
	{"path.websocket", UnitCount, "1 when the viewer reached the relay in the WebSocket tunnel, else 0"},
}

// LookupMeasurement finds a measurement by name.
func LookupMeasurement(name string) (Measurement, bool) {
	for _, m := range Measurements {
		if m.Name == name {
			return m, true
		}
	}
	return Measurement{}, false
}

// Path is how the two PCs reach each other (N17-N19, E14). Its zero value,
// like `path: direct`, is the plain set-up: the two PCs joined by the
// network's links alone, no routers, no broker, no relay. Anything else
// builds the two-site topology (each PC on its own LAN, behind a router
// when it has a NAT, a broker and a relay on the internet) and puts the
// scenario's network on the viewer's access links, whichever path the
// packets take.
type Path struct {
	// Connect is the strategy: "direct" (hole punching only), "auto"
	// (direct, then the relay, then the WebSocket tunnel), or "relay" or
	// "websocket" to force that step.
	Connect string
	// AgentNAT and ViewerNAT are each PC's router: "none" (a public
	// address) or a NAT preset (NATs).
	AgentNAT, ViewerNAT string
	// SameRouter puts both PCs on one LAN behind the agent's router.
	SameRouter bool
	// RelayDelay is the one-way delay of each leg between a site and the
	// relay.
	RelayDelay time.Duration
	// IgnoreLANCandidates and ForceRelay are EvertyDesk's debug switches
	// (E14): never try the PCs' LAN addresses; go through the relay.
	IgnoreLANCandidates, ForceRelay bool
}

// Plain reports whether the path is the plain link between the PCs (no
// topology).
func (p Path) Plain() bool {
	return (p.Connect == "" || p.Connect == PathDirect) && (p.AgentNAT == "" || p.AgentNAT == "none") &&
		(p.ViewerNAT == "" || p.ViewerNAT == "none") && !p.SameRouter && p.RelayDelay == 0 &&
		!p.IgnoreLANCandidates && !p.ForceRelay
}

// ABRDuration is the ABR parameter a scenario names key (threshold,
// window, baseline, sustain, close, hold) as a field of c, or nil for
// another key: the one map from the format's names to the fields, for
// tools that set parameters by name (compare's settings, the sweep).
func (c *Controller) ABRDuration(key string) *time.Duration {
	switch key {
	case "threshold":
		return &c.Threshold
	case "window":
		return &c.Window
	case "baseline":
		return &c.Baseline
	case "sustain":
		return &c.Sustain
	case "close":
		return &c.Close
	case "hold":
		return &c.Hold
	}
	return nil
}

// ABRShare is ABRDuration for the parameters that are fractions
// (decrease, increase, guard).
func (c *Controller) ABRShare(key string) *float64 {
	switch key {
	case "decrease":
		return &c.Decrease
	case "increase":
		return &c.Increase
	case "guard":
		return &c.Guard
	}
	return nil
}
