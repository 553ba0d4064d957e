package lab

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/scenarios"
)

// RealTimeConfig is what a real-time run records beyond its result. Its
// zero value records nothing.
type RealTimeConfig struct {
	// Metrics, when set, is fed as the run goes (Session.Metrics), for a
	// /metrics endpoint that a dashboard scrapes while it runs.
	Metrics *metrics.Metrics
	// Capture records the run's packets, TLS secrets and qlogs
	// (Session.Capture).
	Capture Capture
}

// RunRealTime runs a scenario as Run does, but in real time: the agent
// and the viewer talk QUIC over real UDP sockets on 127.0.0.1 through the
// real-time impairment proxy, which applies the scenario's network
// (Session.RealTime). The scenario's time zero is HandshakeLead after the
// call, as in Run, so that its instants are the same in both clocks; the
// run then lasts the scenario's duration of wall-clock time.
//
// It must not be called inside a testing/synctest bubble: its sockets and
// the proxy's timers are the kernel's, not the bubble's. A scenario with a
// path is refused (ErrUnsupported). When ctx ends during the session, the
// result measured so far comes back with an error wrapping ctx's cause.
func RunRealTime(ctx context.Context, sc *scenarios.Scenario, cfg RealTimeConfig) (*ScenarioResult, error) {
	return runConfigured(ctx, sc, func(s *Session) {
		s.RealTime = true
		s.Metrics = cfg.Metrics
		s.Capture = cfg.Capture
	})
}

// openRealTime is the real-time set-up: the two PCs as two UDP sockets on
// loopback, the viewer dialling the proxy, which forwards to the agent
// through the session's links. The links get the session's seed and the
// names openPlain gives them, so their random decisions are the ones a
// virtual run of the same session draws.
func openRealTime(ctx context.Context, s Session, epoch time.Time, capt *recording) (_ *opened, err error) {
	var closers []func() error
	closeAll := func() {
		// Last made, first closed: the QUIC connections before the proxy
		// that carries them, the proxy before the sockets it writes to.
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	agentConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: agent socket: %w", err)
	}
	closers = append(closers, agentConn.Close)
	viewerConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: viewer socket: %w", err)
	}
	closers = append(closers, viewerConn.Close)
	upTap, downTap := capt.taps()
	proxy, err := netem.NewProxy(netem.ProxyConfig{
		Target:  agentConn.LocalAddr().String(),
		Forward: netem.LinkConfig{Name: "uplink", Seed: s.Seed, Epoch: epoch, Impairments: s.Uplink, Timeline: s.UplinkTimeline, Tap: upTap},
		Reverse: netem.LinkConfig{Name: "downlink", Seed: s.Seed, Epoch: epoch, Impairments: s.Downlink, Timeline: s.DownlinkTimeline, Tap: downTap},
	})
	if err != nil {
		return nil, fmt.Errorf("lab: proxy: %w", err)
	}
	closers = append(closers, proxy.Close)
	pair, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, proxy.Addr(), capt.quicConfig(), capt.keyLog())
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	closers = append(closers, pair.Close)
	return &opened{
		agent: pair.Server, viewer: pair.Client,
		stats: proxy.Stats, // forward is the viewer's up link, reverse its down link
		close: closeAll,
	}, nil
}
