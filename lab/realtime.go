package lab

import (
	"context"
	"fmt"

	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/scenarios"
)

// RealTimeConfig is what a real-time run records beyond its result. Its
// zero value records nothing.
type RealTimeConfig struct {
	// Metrics, when set, is fed as the run goes (Session.Metrics), for a
	// /metrics endpoint that a dashboard scrapes while it runs.
	Metrics *metrics.Metrics
	// Capture records the run's packets, TLS secrets and qlogs
	// (Session.Capture). The kernel mode records no packets (Pcap).
	Capture Capture
	// Kernel, when set, runs the session across the kernel mode's two
	// network namespaces (transport.Kernel) rather than through the proxy
	// on loopback (transport.RealTime): the agent's and the viewer's
	// sockets, and the scenario's tcp-bulk flows, are the kernel's own,
	// their IP packets crossing the scenario's links. It needs Linux and
	// root (see kernel.Available); the traffic's other kinds are refused
	// there.
	Kernel *transport.Kernel
}

// RunRealTime runs a scenario as Run does, but in real time: the agent
// and the viewer talk QUIC over real UDP sockets on 127.0.0.1 through the
// real-time impairment proxy, which applies the scenario's network
// (transport.RealTime). The scenario's time zero is HandshakeLead after the
// call, as in Run, so that its instants are the same in both clocks; the
// run then lasts the scenario's duration of wall-clock time.
//
// It must not be called inside a testing/synctest bubble: its sockets and
// the proxy's timers are the kernel's, not the bubble's. The scenario's
// traffic runs beside the session, each flow between two loopback
// sockets of its own through the proxy's links. A scenario with a path is
// refused (ErrUnsupported). With cfg.Kernel the session runs across the
// kernel mode instead (RealTimeConfig.Kernel). When ctx ends during the
// session, the result measured so far comes back with an error wrapping
// ctx's cause.
func RunRealTime(ctx context.Context, sc *scenarios.Scenario, cfg RealTimeConfig) (*result.Run, error) {
	if sc != nil && !sc.Path.Plain() {
		return nil, fmt.Errorf("scenario %q: %w: a real-time run of a scenario with a path (the two-site topology exists only in the in-memory network)", sc.Name, ErrUnsupported)
	}
	var tr transport.Transport = transport.RealTime{}
	if cfg.Kernel != nil {
		tr = *cfg.Kernel
	}
	return runConfigured(ctx, sc, func(s *Session) {
		s.Transport = tr
		s.Metrics = cfg.Metrics
		s.Capture = cfg.Capture
	})
}
