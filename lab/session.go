// Package lab runs remote-desktop sessions against the impairment network
// and measures them: an agent and a viewer talking real QUIC over an
// in-memory network, in virtual time when called inside a testing/synctest
// bubble. It returns the ground truth of every frame beside what the agent
// and viewer themselves saw.
package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/viewer"
)

// The hosts of a session's network: the viewer dials the agent.
var (
	ViewerAddr = netip.MustParseAddrPort("10.0.0.1:40000")
	AgentAddr  = netip.MustParseAddrPort("10.0.0.2:4433")
)

// HostClock is a PC's clock relative to true time (N1).
type HostClock struct {
	Offset   time.Duration
	DriftPPM float64
}

// Session describes one session. Zero values mean defaults.
type Session struct {
	// Seed seeds every random decision of the run.
	Seed uint64
	// Duration is how long the session runs after the handshake.
	Duration time.Duration
	// Uplink carries viewer -> agent (reports, acks), Downlink agent ->
	// viewer (video). Nil is a perfect link.
	Uplink, Downlink []netem.Impairment
	// Screen is the agent PC's screen; nil is the documented full-screen
	// animation (N3).
	Screen *screen.Config
	// Agent and Viewer configure the two ends; their Seed, Clock, Recorder
	// and Screen are set by the lab.
	Agent  agent.Config
	Viewer viewer.Config
	// AgentClock and ViewerClock offset the PCs' clocks from true time.
	AgentClock, ViewerClock HostClock
}

// Result is what a session measured.
type Result struct {
	// Frames is the ground truth of every frame, by sequence number.
	Frames []groundtruth.Frame
	// Events are skips, drops and the like, in order.
	Events []groundtruth.Event
	// Agent and Viewer are the two ends' counters.
	Agent  agent.Counters
	Viewer viewer.Counters
	// Probe lists the encoders the agent tried (N5).
	Probe encoder.Attempts
	// Reports are the viewer's reports as the agent received them (N1).
	Reports []wire.Report
	// Uplink and Downlink are the links' counters.
	Uplink, Downlink netem.Stats
	// Start is the instant the agent started (time zero of the screen).
	Start time.Time
}

// Displayed returns the frames the viewer displayed.
func (r *Result) Displayed() []groundtruth.Frame {
	var out []groundtruth.Frame
	for _, f := range r.Frames {
		if !f.Displayed.IsZero() {
			out = append(out, f)
		}
	}
	return out
}

// Latencies returns the true capture-to-display latency of every displayed
// frame whose capture is at or after from (counted from Start).
func (r *Result) Latencies(from time.Duration) []time.Duration {
	var out []time.Duration
	for _, f := range r.Displayed() {
		if f.Captured.Sub(r.Start) >= from {
			out = append(out, f.Latency())
		}
	}
	return out
}

// Median returns the median of ds (the lower middle for an even count), or
// 0 for none.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// RunSession runs a session. Inside a synctest bubble it runs in virtual time.
func RunSession(s Session) (*Result, error) {
	if s.Duration <= 0 {
		return nil, errors.New("lab: session duration must be positive")
	}
	n := netem.NewNetwork(s.Seed)
	defer n.Close()
	if _, err := n.SetLink(ViewerAddr.Addr(), AgentAddr.Addr(), netem.LinkConfig{Name: "uplink", Impairments: s.Uplink}); err != nil {
		return nil, fmt.Errorf("lab: uplink: %w", err)
	}
	if _, err := n.SetLink(AgentAddr.Addr(), ViewerAddr.Addr(), netem.LinkConfig{Name: "downlink", Impairments: s.Downlink}); err != nil {
		return nil, fmt.Errorf("lab: downlink: %w", err)
	}
	agentConn, err := n.Listen(AgentAddr)
	if err != nil {
		return nil, err
	}
	viewerConn, err := n.Listen(ViewerAddr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pair, err := quicpair.Open(ctx, agentConn, viewerConn, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	defer pair.Close()

	start := time.Now()
	rec := groundtruth.New()
	scfg := screen.Config{Timeline: []screen.Phase{{Source: screen.Animation{}}}}
	if s.Screen != nil {
		scfg = *s.Screen
	}
	scr, err := screen.New(s.Seed, scfg)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	acfg := s.Agent
	acfg.Seed, acfg.Recorder, acfg.Screen = s.Seed, rec, scr
	acfg.Clock = clock.New(s.AgentClock.Offset, s.AgentClock.DriftPPM, start)
	acfg.Capture.Epoch = start
	ag, err := agent.New(acfg)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	vcfg := s.Viewer
	vcfg.Seed, vcfg.Recorder = s.Seed, rec
	vcfg.Clock = clock.New(s.ViewerClock.Offset, s.ViewerClock.DriftPPM, start)
	vw, err := viewer.New(vcfg)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}

	var wg sync.WaitGroup
	var agentErr, viewerErr error
	wg.Go(func() { agentErr = ag.Run(ctx, pair.Server) })
	wg.Go(func() { viewerErr = vw.Run(ctx, pair.Client) })
	timer := time.NewTimer(s.Duration)
	<-timer.C
	cancel()
	wg.Wait()
	if err := errors.Join(agentErr, viewerErr); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return &Result{
		Frames:   rec.Frames(),
		Events:   rec.Events(),
		Agent:    ag.Counters(),
		Viewer:   vw.Counters(),
		Probe:    ag.Probe(),
		Reports:  ag.Reports(),
		Uplink:   n.Link(ViewerAddr.Addr(), AgentAddr.Addr()).Stats(),
		Downlink: n.Link(AgentAddr.Addr(), ViewerAddr.Addr()).Stats(),
		Start:    start,
	}, nil
}
