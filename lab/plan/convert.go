// Package plan turns a scenario (package scenarios) into what the lab
// runs: the session's links and their timelines as netem impairments, its
// screen, agent, viewer, clocks and flows of other traffic, its path as a
// transport (transport.Topology), and what the result needs to know of the
// network that the session does not keep (the phases' descriptions and
// capacities, the controller's decisions). Package lab makes the plan a
// session (lab.Run); the real-time proxy, lab shell and lab vnc take its
// links and screen for programs that are not the lab's (Links,
// ShellLinks, ScreenTimeline).
package plan

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/gcc"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/nat"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/nuvirahub/latencylab/viewer"
)

// Plan is a scenario made ready to run: the parts of its session (package
// lab makes them one), and what its result needs to know about the network
// that the session does not keep.
type Plan struct {
	// Seed seeds every random decision of the run; Duration is how long
	// the session runs after time zero.
	Seed     uint64
	Duration time.Duration
	// Uplink and Downlink are the impairments in force from time zero;
	// UplinkTimeline and DownlinkTimeline the later phases, at their
	// instants from time zero.
	Uplink, Downlink                 []netem.Impairment
	UplinkTimeline, DownlinkTimeline []netem.Phase
	// Screen is the agent PC's screen; nil is the documented full-screen
	// animation (N3).
	Screen *screen.Config
	// Agent and Viewer configure the two ends, the controller included.
	Agent  agent.Config
	Viewer viewer.Config
	// Clocks offset the PCs' clocks from true time.
	Clocks scenarios.Clocks
	// Traffic is the other traffic sharing the session's links.
	Traffic []traffic.Flow
	// Path is the scenario's path as the transport that connects by it;
	// nil for the plain link.
	Path *transport.Topology

	// Decisions reads an adaptive controller's decisions after the run,
	// counted from start; nil for a controller that makes none.
	Decisions func(start time.Time) []result.DecisionRecord
	// Refresh is the agent's display refresh, Hz.
	Refresh float64
	// UplinkCapacity and DownlinkCapacity are what each direction could
	// carry, phase by phase.
	UplinkCapacity, DownlinkCapacity Capacity
	// Network describes each direction's phases for the result.
	Network result.NetworkInfo
}

// Capacity is what a direction of the network can carry, phase by phase
// (Between).
type Capacity []capPhase

// capPhase is a direction's capacity from At on: a rate, a trace, or none.
type capPhase struct {
	at    time.Duration
	rate  int64
	trace *traceCap
}

// traceCap is a trace as a phase replays it: from an offset, wrapping or
// played once.
type traceCap struct {
	times  *traceTimes
	offset time.Duration
	once   bool
}

// traceTimes are a trace's opportunities in a form that can be counted;
// netem keeps them to itself.
type traceTimes struct {
	ms     []int64 // non-decreasing, the last is the period
	period int64   // ms
}

// Convert turns a scenario into a plan. Every reason a scenario cannot be
// run as written is an error wrapping laberr.ErrScenario, or
// laberr.ErrUnsupported for what the lab cannot do; a trace from ../shared
// that is not there is scenarios.ErrSharedAbsent, which tests skip on.
//
// It loads the traces the scenario
// replays, found as the loader finds them (scenarios.TracePath): a
// relative path from the scenario file's folder, or from the module root
// for the library and a scenario built in Go, "shared:NAME" from
// ../shared/traces/mahimahi beside the module root.
func Convert(sc *scenarios.Scenario) (*Plan, error) {
	if sc == nil {
		return nil, fmt.Errorf("%w: no scenario", laberr.ErrScenario)
	}
	if sc.Duration <= 0 {
		return nil, fmt.Errorf("%w: duration %v is not positive", laberr.ErrScenario, sc.Duration)
	}
	p := &Plan{Seed: sc.Seed, Duration: sc.Duration}
	if sc.Path.Plain() {
		// The plain link has no fallback: QUIC could never connect.
		for dir, phases := range map[string][]scenarios.Phase{"up": sc.Network.Up, "down": sc.Network.Down} {
			if len(phases) > 0 && phases[0].At == 0 && phases[0].BlockUDP {
				return nil, fmt.Errorf("%w: network.%s[0].block_udp: UDP is blocked from the start and the plain path has no fallback: give the scenario a path (path: auto) so that the PCs can reach each other in the WebSocket tunnel", laberr.ErrScenario, dir)
			}
		}
	} else {
		path, err := convertPath(sc.Path)
		if err != nil {
			return nil, err
		}
		p.Path = path
	}
	traces := map[string]*netem.Trace{}
	var err error
	s := p
	if s.Uplink, s.UplinkTimeline, p.UplinkCapacity, p.Network.Up, err = convertLink("up", sc.File, sc.Network.Up, traces); err != nil {
		return nil, err
	}
	if s.Downlink, s.DownlinkTimeline, p.DownlinkCapacity, p.Network.Down, err = convertLink("down", sc.File, sc.Network.Down, traces); err != nil {
		return nil, err
	}
	if s.Screen, err = convertScreen(sc.File, sc.Screen, sc.Agent.Refresh); err != nil {
		return nil, err
	}
	if s.Agent, err = convertAgent(sc); err != nil {
		return nil, err
	}
	p.Decisions = Decisions(s.Agent.Controller)
	p.Refresh = sc.Agent.Refresh
	if p.Refresh == 0 {
		p.Refresh = agent.DefaultRefresh
	}
	if s.Viewer.Decode, err = convertDist("viewer.decode", sc.Viewer.Decode); err != nil {
		return nil, err
	}
	switch r := sc.Viewer.Refresh; {
	case r < 0:
		return nil, fmt.Errorf("%w: viewer.refresh %v Hz is negative", laberr.ErrScenario, r)
	case r > 0:
		s.Viewer.Refresh = time.Duration(math.Round(1e9 / r))
	}
	s.Viewer.Present = sc.Viewer.Present
	s.Viewer.OldShowEveryFrame = sc.Switches.OldShowEveryFrame
	s.Viewer.Policy = viewer.Policy(sc.Viewer.Policy)
	s.Clocks = sc.Clocks
	if s.Traffic, err = convertTraffic(sc, s.Viewer); err != nil {
		return nil, err
	}
	return p, nil
}

// convertTraffic turns the scenario's flows into the session's. A session
// flow gets the scenario's agent and viewer models with its own
// controller and screen (the scenario's when it gives none), each built
// afresh: no state is shared with the scenario's own session.
func convertTraffic(sc *scenarios.Scenario, vw viewer.Config) ([]traffic.Flow, error) {
	var out []traffic.Flow
	for i, sf := range sc.Traffic {
		where := fmt.Sprintf("traffic[%d]", i)
		f := traffic.Flow{Name: sf.Name, Kind: sf.Kind, Start: sf.Start, Stop: sf.Stop, Up: sf.Direction == "up", Delay: sf.Delay,
			Congestion: sf.Congestion, Rate: sf.Rate, Size: sf.Size}
		if o := sf.Object; o != nil {
			f.Web = flows.WebConfig{Mean: int64(o.Mean), SD: int64(o.SD), Min: int64(o.Min), Max: int64(o.Max)}
		}
		f.Web.Think = sf.Think
		if f.Media() {
			own := *sc
			if sf.Controller != nil {
				own.Controller = *sf.Controller
			}
			if len(sf.Screen) > 0 {
				own.Screen = sf.Screen
			}
			var err error
			if f.Agent, err = convertAgent(&own); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if f.Screen, err = convertScreen(sc.File, own.Screen, own.Agent.Refresh); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			f.Viewer = vw
		}
		out = append(out, f)
	}
	return out, nil
}

// convertLink turns a direction's timeline into the impairments in force
// from the start and the later phases, and notes each phase's capacity.
// file is the scenario's file, where its trace paths count from.
func convertLink(dir, file string, phases []scenarios.Phase, traces map[string]*netem.Trace) (initial []netem.Impairment, timeline []netem.Phase, caps Capacity, info []result.PhaseInfo, err error) {
	for i, ph := range phases {
		where := fmt.Sprintf("network.%s[%d]", dir, i)
		if ph.At < 0 || (i > 0 && ph.At <= phases[i-1].At) {
			return nil, nil, nil, nil, fmt.Errorf("%w: %s: at %v: phases must start at increasing instants from 0", laberr.ErrScenario, where, ph.At)
		}
		imps, c, err := convertPhase(where, file, ph, traces)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		caps = append(caps, c)
		pi := result.PhaseInfo{At: ph.At, Description: DescribePhase(ph), RateBps: ph.Rate}
		if ph.Trace != nil {
			pi.Trace = ph.Trace.File // its segment is in the description
		}
		info = append(info, pi)
		if i == 0 && ph.At == 0 {
			initial = imps
			continue
		}
		timeline = append(timeline, netem.Phase{At: ph.At, Impairments: imps})
	}
	return initial, timeline, caps, info, nil
}

// convertPhase builds one phase's impairments. The order inside a stage
// matters only for the delay stage: spikes come first so that a spike
// window judges a packet by the instant it reaches the delay stage, as the
// schedule of a radio stall would, not by an instant a jitter moved.
func convertPhase(where, file string, ph scenarios.Phase, traces map[string]*netem.Trace) ([]netem.Impairment, capPhase, error) {
	var imps []netem.Impairment
	c := capPhase{at: ph.At}
	if ph.BlockUDP {
		imps = append(imps, &netem.Block{})
	}
	if o := ph.Outages; o != nil {
		out := &netem.Outage{Every: o.Every, Duration: o.Duration, Offset: o.Offset, Mode: netem.OutageDrop}
		if o.Hold {
			out.Mode = netem.OutageHold
		}
		for _, w := range o.Windows {
			out.Windows = append(out.Windows, netem.OutageWindow{Start: w.Start, Duration: w.Duration})
		}
		imps = append(imps, out)
	}
	if ph.Loss > 0 {
		imps = append(imps, &netem.Loss{Probability: ph.Loss})
	}
	if g := ph.Gilbert; g != nil {
		imps = append(imps, &netem.GilbertElliott{P: g.P, R: g.R, OneMinusH: g.OneMinusH, OneMinusK: g.OneMinusK})
	}
	if ph.Duplicate > 0 {
		imps = append(imps, &netem.Duplicate{Probability: ph.Duplicate})
	}
	if ph.Corrupt > 0 {
		imps = append(imps, &netem.Corrupt{Probability: ph.Corrupt})
	}
	q := netem.QueueLimit{Bytes: ph.Queue.Bytes, Packets: ph.Queue.Packets, Delay: ph.Queue.Delay}
	if ph.Queue.CoDel {
		q.CoDel = &netem.CoDelParams{} // RFC 8289's defaults
	}
	switch {
	case ph.Trace != nil:
		tr, err := loadTrace(file, ph.Trace.File, traces)
		if err != nil {
			return nil, c, fmt.Errorf("%s: %w", where, err)
		}
		// The loaded trace is shared by every phase that names it, so a
		// timeline that keeps the trace (and its offset) keeps its
		// position (TraceLink's Inherit compares the traces).
		imps = append(imps, &netem.TraceLink{Path: tr.Name, Trace: tr, Offset: ph.Trace.Offset, NoLoop: ph.Trace.NoLoop,
			Overhead: ph.Overhead, Queue: q})
		tt, err := traceTimesOf(tr)
		if err != nil {
			return nil, c, fmt.Errorf("%s: %w", where, err)
		}
		c.trace = &traceCap{times: tt, offset: ph.Trace.Offset, once: ph.Trace.NoLoop}
	case ph.Rate > 0:
		imps = append(imps, &netem.Rate{Rate: ph.Rate, Overhead: ph.Overhead, Queue: q})
		c.rate = ph.Rate
	case ph.Rate < 0:
		return nil, c, fmt.Errorf("%w: %s: rate %d bit/s is negative", laberr.ErrScenario, where, ph.Rate)
	case ph.Queue != (scenarios.Queue{}) || ph.Overhead != 0:
		return nil, c, fmt.Errorf("%w: %s: a queue or overhead needs a rate or a trace (there is no bottleneck to queue at)", laberr.ErrScenario, where)
	}
	if s := ph.Spikes; s != nil {
		imps = append(imps, &netem.Spikes{Min: s.Min, Max: s.Max, Every: s.Every, Duration: s.Duration, Offset: s.Offset, Random: s.Random})
	}
	switch {
	case ph.Jitter != nil:
		// netem's jitter carries the mean delay itself: "delay 25ms
		// jitter 5ms" is one impairment, as in tc.
		j := ph.Jitter
		imps = append(imps, &netem.Jitter{Delay: ph.Delay, Jitter: j.Spread, Distribution: j.Distribution, Correlation: j.Correlation, Reorder: j.Reorder})
	case ph.Delay > 0:
		imps = append(imps, &netem.Delay{Delay: ph.Delay})
	case ph.Delay < 0:
		return nil, c, fmt.Errorf("%w: %s: delay %v is negative", laberr.ErrScenario, where, ph.Delay)
	}
	for _, imp := range imps {
		if v, ok := imp.(netem.Validator); ok {
			if err := v.Validate(); err != nil {
				return nil, c, fmt.Errorf("%w: %s: %s: %w", laberr.ErrScenario, where, imp.Kind(), err)
			}
		}
	}
	return imps, c, nil
}

// DescribePhase sums a scenario's phase up as the reports do: "delay
// 25ms, loss 1%, rate 5 Mbit/s", or "perfect". lab shell's status line
// names the phase in force with it.
func DescribePhase(ph scenarios.Phase) string {
	var parts []string
	add := func(format string, a ...any) { parts = append(parts, fmt.Sprintf(format, a...)) }
	if ph.BlockUDP {
		add("UDP blocked")
	}
	if o := ph.Outages; o != nil {
		mode := "lost"
		if o.Hold {
			mode = "held"
		}
		if len(o.Windows) > 0 {
			add("%d outages (%s)", len(o.Windows), mode)
		} else {
			add("outage %v every %v (%s)", o.Duration, o.Every, mode)
		}
	}
	if ph.Loss > 0 {
		add("loss %s%%", strconv.FormatFloat(ph.Loss*100, 'g', 4, 64))
	}
	if g := ph.Gilbert; g != nil {
		add("gilbert p %g r %g", g.P, g.R)
	}
	if ph.Duplicate > 0 {
		add("duplicate %g%%", ph.Duplicate*100)
	}
	if ph.Corrupt > 0 {
		add("corrupt %g%%", ph.Corrupt*100)
	}
	switch {
	case ph.Trace != nil:
		// The segment that ran: where the trace stood at time zero, and
		// whether it ended rather than wrapped.
		desc := "trace " + ph.Trace.File
		if ph.Trace.Offset > 0 {
			desc += " from " + scenarios.FormatDuration(ph.Trace.Offset)
		}
		if ph.Trace.NoLoop {
			desc += " (played once)"
		}
		add("%s", desc)
	case ph.Rate > 0:
		add("rate %s Mbit/s", strconv.FormatFloat(float64(ph.Rate)/1e6, 'g', 6, 64))
	}
	if q := ph.Queue; q != (scenarios.Queue{}) {
		var lim []string
		if q.Bytes > 0 {
			lim = append(lim, fmt.Sprintf("%d B", q.Bytes))
		}
		if q.Packets > 0 {
			lim = append(lim, fmt.Sprintf("%d packets", q.Packets))
		}
		if q.Delay > 0 {
			lim = append(lim, q.Delay.String())
		}
		if q.CoDel {
			lim = append(lim, "CoDel")
		}
		add("queue %s", strings.Join(lim, " "))
	}
	if s := ph.Spikes; s != nil {
		add("spikes %v-%v every %v", s.Min, s.Max, s.Every)
	}
	switch {
	case ph.Jitter != nil:
		add("delay %v ± %v (%s)", ph.Delay, ph.Jitter.Spread, cmp.Or(ph.Jitter.Distribution, netem.DistUniform))
	case ph.Delay > 0:
		add("delay %v", ph.Delay)
	}
	if len(parts) == 0 {
		return "perfect"
	}
	return strings.Join(parts, ", ")
}

// loadTrace finds the trace ref that the scenario file names and loads it
// once per run.
func loadTrace(file, ref string, traces map[string]*netem.Trace) (*netem.Trace, error) {
	path, err := resolveTrace(file, ref)
	if err != nil {
		return nil, err
	}
	if tr, ok := traces[path]; ok {
		return tr, nil
	}
	tr, err := netem.LoadTrace(path)
	if err != nil {
		return nil, fmt.Errorf("%w: trace %q: %w", laberr.ErrScenario, ref, err)
	}
	traces[path] = tr
	return tr, nil
}

// resolveTrace finds a trace file by the loader's rule (scenarios.TracePath).
// An absent shared folder is scenarios.ErrSharedAbsent, for the tests to skip; any
// other reason is laberr.ErrScenario, a shared trace not in a folder that is there
// included: a misspelled name fails rather than skips.
func resolveTrace(file, ref string) (string, error) {
	path, err := scenarios.TracePath(file, ref)
	switch {
	case errors.Is(err, scenarios.ErrSharedAbsent):
		return "", fmt.Errorf("lab: trace %q: %w", ref, err)
	case err != nil:
		return "", fmt.Errorf("%w: trace %q: %w", laberr.ErrScenario, ref, err)
	}
	return path, nil
}

// traceTimesOf reads a trace's opportunities back through its mahimahi
// form, the only way netem exposes them.
func traceTimesOf(tr *netem.Trace) (*traceTimes, error) {
	var buf bytes.Buffer
	if _, err := tr.WriteTo(&buf); err != nil {
		return nil, err
	}
	tt := &traceTimes{ms: make([]int64, 0, tr.Opportunities())}
	for line := range bytes.Lines(buf.Bytes()) {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("lab: trace %s: %w", tr.Name, err)
		}
		tt.ms = append(tt.ms, v)
	}
	tt.period = tt.ms[len(tt.ms)-1]
	return tt, nil
}

// before counts the opportunities at instants in [0, t) from the link's
// epoch, the trace repeating with its period.
func (tt *traceTimes) before(t time.Duration) int64 {
	if t <= 0 {
		return 0
	}
	n := int64(len(tt.ms))
	period := time.Duration(tt.period) * time.Millisecond
	q := int64(t / period)
	// Only the last two repetitions can be partly before t: every
	// opportunity of earlier ones is at most one period after its start.
	count := max(0, q-1) * n
	for rep := max(0, q-1); rep <= q; rep++ {
		rel := t - time.Duration(rep)*period
		count += int64(sort.Search(len(tt.ms), func(i int) bool {
			return time.Duration(tt.ms[i])*time.Millisecond >= rel
		}))
	}
	return count
}

// between counts the opportunities the phase's trace offers at the
// session's instants [a, b), 0 <= a <= b: the trace stands at offset at
// time zero, and played once it offers none after its end.
func (tc *traceCap) between(a, b time.Duration) int64 {
	count := tc.times.before
	if tc.once {
		count = tc.times.once
	}
	return count(tc.offset+b) - count(tc.offset+a)
}

// once counts the opportunities of the trace's first repetition at
// instants in [0, t): a trace played once has no other.
func (tt *traceTimes) once(t time.Duration) int64 {
	return int64(sort.Search(len(tt.ms), func(i int) bool {
		return time.Duration(tt.ms[i])*time.Millisecond >= t
	}))
}

// Between is the bits the direction can carry in [a, b), instants from
// time zero, and the part of that interval with a bottleneck at all.
func (phases Capacity) Between(a, b time.Duration) (bits float64, capped time.Duration) {
	for i, ph := range phases {
		lo, hi := max(a, ph.at), b
		if i+1 < len(phases) {
			hi = min(hi, phases[i+1].at)
		}
		if hi <= lo {
			continue
		}
		switch {
		case ph.trace != nil:
			bits += float64(ph.trace.between(lo, hi)) * netem.TraceMTU * 8
		case ph.rate > 0:
			bits += float64(ph.rate) * (hi - lo).Seconds()
		default:
			continue
		}
		capped += hi - lo
	}
	return bits, capped
}

// convertScreen turns the screen timeline into screen sources; the screen
// refreshes at the agent's rate (the capture polls the display it copies).
// A recording's index is read once per process and shared
// (scenarios.OpenRecording), found by the loader's rule from file, the
// scenario's file.
func convertScreen(file string, phases []scenarios.ScreenPhase, refresh float64) (*screen.Config, error) {
	if len(phases) == 0 {
		if refresh == 0 {
			return nil, nil // the documented full-screen animation (N3)
		}
		phases = []scenarios.ScreenPhase{{Source: "animation"}}
	}
	cfg := &screen.Config{Refresh: refresh}
	for i, ph := range phases {
		var region screen.Rect
		if r := ph.Region; r != nil {
			region = screen.Rect{X: r.X, Y: r.Y, W: r.W, H: r.H}
		}
		var src screen.Source
		switch ph.Source {
		case "animation":
			src = screen.Animation{Rate: ph.Rate, Complexity: ph.Complexity}
		case "still":
			src = screen.Still{}
		case "typing":
			src = screen.Typing{Complexity: ph.Complexity}
		case "scrolling":
			src = screen.Scrolling{Rate: ph.Rate, Region: region, Complexity: ph.Complexity}
		case "video":
			src = screen.Video{FPS: ph.Rate, Region: region, Complexity: ph.Complexity}
		case "photo":
			src = screen.Photo{Region: region, Complexity: ph.Complexity}
		case screen.SourceRecording:
			rec, err := scenarios.OpenRecording(file, ph.File)
			if err != nil {
				return nil, fmt.Errorf("%w: screen[%d]: recording %q: %w", laberr.ErrScenario, i, ph.File, err)
			}
			src = screen.Recording{Recording: rec, Offset: ph.Offset, Once: ph.NoLoop}
		default:
			return nil, fmt.Errorf("%w: screen[%d]: unknown source %q (animation, still, typing, scrolling, video, photo, recording)", laberr.ErrScenario, i, ph.Source)
		}
		cfg.Timeline = append(cfg.Timeline, screen.Phase{At: ph.At, Source: src})
	}
	return cfg, nil
}

// ScreenTimeline is a scenario's screen section as the screen model's
// timeline, as Convert makes it: the documented full-screen
// animation when the section is empty. lab vnc draws it on a real
// server's display.
func ScreenTimeline(sc *scenarios.Scenario) ([]screen.Phase, error) {
	cfg, err := convertScreen(sc.File, sc.Screen, 0)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return []screen.Phase{{Source: screen.Animation{}}}, nil
	}
	return cfg.Timeline, nil
}

// convertAgent builds the agent's configuration: encoders (with the probe
// list and the N16 switch on every one of them), capture, controller,
// send cap, refinement and the N7 switch.
func convertAgent(sc *scenarios.Scenario) (agent.Config, error) {
	a := sc.Agent
	cfg := agent.Config{
		Refresh:         a.Refresh,
		SendCap:         a.SendCap,
		RefinePasses:    a.RefinePasses,
		RefineEvery:     a.RefineEvery,
		NoRefine:        a.NoRefine,
		OldCaptureFirst: sc.Switches.OldCaptureFirst,
	}
	cfg.Capture.ConvertOnCPU = a.ConvertOnCPU
	cfg.Capture.OldWaitForFrame = sc.Switches.OldWaitForFrame

	var err error
	var initial int64
	if cfg.Controller, initial, err = convertController(sc.Controller, sc.Switches); err != nil {
		return cfg, err
	}

	sw, err := encoder.Preset(cmp.Or(a.Encoder, encoder.PresetOpenH264Asm))
	if err != nil {
		return cfg, fmt.Errorf("%w: agent.encoder: %w", laberr.ErrScenario, err)
	}
	if a.EncodeTime != nil {
		if sw.EncodeTime, err = convertDist("agent.encode_time", a.EncodeTime); err != nil {
			return cfg, err
		}
	}
	if a.FrameSizes == "budget" {
		sw = encoder.Budgeted(sw)
	}
	// Every encoder starts at the controller's first bitrate. The agent
	// sets it itself only on the software fallback: a hardware encoder left
	// at its own default would see a bitrate change at its first frame,
	// which under the N16 switch is a one-second restart nobody asked for.
	sw.Bitrate = int(initial)
	sw.OldRestartOnBitrateChange = sc.Switches.OldRestartOnBitrateChange
	cfg.Software = sw

	known := map[string]bool{}
	for _, h := range a.Hardware {
		hc, err := encoder.Preset(h)
		if err != nil {
			return cfg, fmt.Errorf("%w: agent.hardware: %w", laberr.ErrScenario, err)
		}
		known[h] = true
		hc.Bitrate = int(initial)
		hc.OldRestartOnBitrateChange = sc.Switches.OldRestartOnBitrateChange
		for _, x := range a.Absent {
			if x == h {
				hc.Absent = true
			}
		}
		for _, x := range a.Failing {
			if x == h {
				hc.OpenFailure = "the driver refused the session (scenario: failing)"
			}
		}
		cfg.Hardware = append(cfg.Hardware, hc)
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"absent", a.Absent}, {"failing", a.Failing}} {
		for _, x := range list.names {
			if !known[x] {
				return cfg, fmt.Errorf("%w: agent.%s: %q is not in agent.hardware %v", laberr.ErrScenario, list.field, x, a.Hardware)
			}
		}
	}
	return cfg, nil
}

// convertController builds the bitrate controller and says its first
// bitrate.
func convertController(c scenarios.Controller, sw scenarios.Switches) (agent.Controller, int64, error) {
	initial := c.Bitrate
	if initial == 0 {
		initial = agent.DefaultBitrate
	}
	if initial < 0 {
		return nil, 0, fmt.Errorf("%w: controller.bitrate %d is negative", laberr.ErrScenario, c.Bitrate)
	}
	switch c.Kind {
	case "", "fixed":
		if len(c.Steps) > 0 {
			return nil, 0, fmt.Errorf("%w: controller: steps need kind \"steps\"", laberr.ErrScenario)
		}
		return agent.Fixed{Bps: initial}, initial, nil
	case "steps":
		st := &agent.Steps{Initial: initial}
		for i, s := range c.Steps {
			if s.Bitrate <= 0 || (i > 0 && s.At <= c.Steps[i-1].At) {
				return nil, 0, fmt.Errorf("%w: controller.steps[%d]: need a positive bitrate at increasing instants", laberr.ErrScenario, i)
			}
			st.At = append(st.At, s.At)
			st.Bps = append(st.Bps, s.Bitrate)
		}
		if len(c.Steps) > 0 && c.Steps[0].At == 0 {
			return st, c.Steps[0].Bitrate, nil // in force from the start
		}
		return st, initial, nil
	case "abr":
		a, err := abr.New(abr.Config{
			Initial: c.Bitrate, Min: c.Min, Max: c.Max,
			Window: c.Window, Baseline: c.Baseline, Threshold: c.Threshold, Sustain: c.Sustain,
			Close: c.Close, Hold: c.Hold, Decrease: c.Decrease, Increase: c.Increase, Guard: c.Guard,
			OldTotalLatency:       sw.OldABRTotalLatency,
			OldIgnoresUtilisation: sw.OldABRIgnoresUtilisation,
			OldSinglePeaks:        sw.OldABRSinglePeaks,
		})
		if err != nil {
			return nil, 0, fmt.Errorf("%w: controller: %w", laberr.ErrScenario, err)
		}
		return a, a.Config().Initial, nil
	case "gcc":
		g, err := gcc.New(gcc.Config{Initial: c.Bitrate, Min: c.Min, Max: c.Max})
		if err != nil {
			return nil, 0, fmt.Errorf("%w: controller: %w", laberr.ErrScenario, err)
		}
		return g, g.Config().Initial, nil
	}
	return nil, 0, fmt.Errorf("%w: controller kind %q", laberr.ErrUnsupported, c.Kind)
}

// Decisions reads an adaptive controller's decisions as records counted
// from start; nil for a controller that makes none.
func Decisions(c agent.Controller) func(start time.Time) []result.DecisionRecord {
	switch c := c.(type) {
	case *abr.ABR:
		return func(start time.Time) []result.DecisionRecord {
			var out []result.DecisionRecord
			for _, d := range c.Decisions() {
				out = append(out, result.DecisionRecord{At: d.At.Sub(start), Old: d.Old, New: d.New, Rule: d.Rule,
					Median: d.Median, Baseline: d.Baseline, Utilisation: d.Utilisation})
			}
			return out
		}
	case *gcc.GCC:
		return func(start time.Time) []result.DecisionRecord {
			var out []result.DecisionRecord
			for _, d := range c.Decisions() {
				out = append(out, result.DecisionRecord{At: d.At.Sub(start), Old: d.Old, New: d.New, Rule: d.Rule,
					Signal: d.Signal, Trend: d.Trend, Threshold: d.Threshold, Received: d.Received, Loss: d.Loss})
			}
			return out
		}
	}
	return nil
}

// convertDist turns a scenario's distribution into the models' one; nil
// is unset, so the model keeps its default.
func convertDist(field string, d *scenarios.Dist) (dist.Duration, error) {
	if d == nil {
		return dist.Duration{}, nil
	}
	var out dist.Duration
	switch {
	case d.List != nil:
		out = dist.List(d.List...)
	case d.SD > 0:
		out = dist.Normal(d.Mean, d.SD)
		out.Min, out.Max = d.Min, d.Max
	case d.Min != 0 || d.Max != 0:
		out = dist.Uniform(d.Min, d.Max)
	default:
		out = dist.Constant(d.Mean)
	}
	if err := out.Validate(); err != nil {
		return dist.Duration{}, fmt.Errorf("%w: %s: %w", laberr.ErrScenario, field, err)
	}
	return out, nil
}

// natPresets are the routers a scenario names (scenarios.NATs).
var natPresets = map[string]nat.Config{
	"full-cone":            nat.FullCone,
	"restricted-cone":      nat.RestrictedCone,
	"port-restricted-cone": nat.PortRestrictedCone,
	"symmetric":            nat.Symmetric,
}

// convertPath turns a scenario's path into the session's topology.
func convertPath(sp scenarios.Path) (*transport.Topology, error) {
	router := func(field, name string) (*nat.Config, error) {
		if name == "" || name == "none" {
			return nil, nil
		}
		c, ok := natPresets[name]
		if !ok {
			return nil, fmt.Errorf("%w: path.%s: unknown router %q", laberr.ErrScenario, field, name)
		}
		return &c, nil
	}
	p := &transport.Topology{Connect: sp.Connect, SameRouter: sp.SameRouter, RelayDelay: sp.RelayDelay,
		IgnoreLANCandidates: sp.IgnoreLANCandidates, ForceRelay: sp.ForceRelay}
	var err error
	if p.AgentNAT, err = router("agent_nat", sp.AgentNAT); err != nil {
		return nil, err
	}
	if p.ViewerNAT, err = router("viewer_nat", sp.ViewerNAT); err != nil {
		return nil, err
	}
	if _, err := p.Strategy(); err != nil {
		return nil, err
	}
	return p, nil
}
