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
	"fmt"
	"math"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
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
	// UplinkMTU and DownlinkMTU are the links' MTUs (netem.LinkConfig.MTU;
	// 0 is netem's default, 1500).
	UplinkMTU, DownlinkMTU int
	// ECN makes the session's QUIC connection ECN-capable (the scenario's
	// ecn: classic).
	ECN bool
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
	// Hops is a path of several hops in place of the links above
	// (scenarios.Network.Hops), in the order the video crosses them;
	// UpBottleneck and DownBottleneck the places of the hops that carry
	// least over the session in each direction, whose counters stand for
	// the session's links. The capacities below are then the least of
	// the hops' at every instant.
	Hops                         []transport.Hop
	UpBottleneck, DownBottleneck int

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
	s.UplinkMTU, s.DownlinkMTU = sc.Network.UpMTU, sc.Network.DownMTU
	s.ECN = sc.ECN != ""
	if err := p.convertHops(sc, traces); err != nil {
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
			Congestion: sf.Congestion, ECN: sf.ECN, Rate: sf.Rate, Size: sf.Size, Hops: sf.Hops}
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
