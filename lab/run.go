package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The errors with which the lab refuses a scenario or a session, defined
// where every package that refuses can reach them (laberr, scenarios).
var (
	// ErrSharedAbsent: the scenario replays a trace from ../shared, the
	// folder beside the repository that holds recordings which are not
	// the project's to ship, and it is not there. Tests skip on it. It is
	// the loader's own (scenarios.ErrSharedAbsent): a scenario that names
	// a shared trace loads without the folder, and its run says this.
	ErrSharedAbsent = scenarios.ErrSharedAbsent
	// ErrScenario wraps every other reason a scenario cannot be run as
	// written (an unknown preset, source or controller, a queue without a
	// bottleneck, parameters netem refuses, a flow without a name).
	ErrScenario = laberr.ErrScenario
	// ErrUnsupported: the session asks for something the lab cannot do
	// (a kind of traffic a transport cannot carry, a real-time run of a
	// scenario with a path, the kernel mode away from Linux).
	ErrUnsupported = laberr.ErrUnsupported
)

// HandshakeLead is how long before a scenario's time zero its network is
// made and QUIC starts connecting (Session.Lead): the handshake of a
// clean link takes a millisecond, of a 25 ms link about 100 ms, of a lossy
// one a few hundred; time zero stays put whatever it took.
const HandshakeLead = 2 * time.Second

// PathLead is HandshakeLead for a scenario with a path: connecting may
// fall back through the direct attempt (1 s to register, 2 s to punch),
// the relay (2 s) and the WebSocket tunnel (5 s) before QUIC is up.
const PathLead = 12 * time.Second

// Run runs a scenario and measures it: it turns the scenario into a
// session (network timelines per direction, screen, agent, viewer, clocks,
// controller, switches: package plan), runs it with RunSessionContext, and
// evaluates the scenario's expectations on the result.
//
// Run takes the time of the session: called inside a testing/synctest
// bubble, virtual time; it does not make one itself, because only a test
// can (synctest.Test takes a *testing.T). Traces are found as the loader
// finds them (scenarios.TracePath): "shared:NAME" in
// ../shared/traces/mahimahi beside the module root, other relative paths
// from the scenario file's folder, or from the module root for the
// library and a scenario built in Go; a missing shared folder is an error
// wrapping ErrSharedAbsent, for tests to skip on (a name that folder does
// not hold is ErrScenario).
//
// When ctx ends during the session, Run returns the result measured so far
// (result.Run.Interrupted says so) with an error wrapping ctx's cause.
func Run(ctx context.Context, sc *scenarios.Scenario) (*result.Run, error) {
	return RunWithMetrics(ctx, sc, nil)
}

// sessionOf is the session a scenario's plan runs as, before what the
// scenario does not say (the lead, the sampling, metrics, capture, the
// transport's clock) is set on it.
func sessionOf(p *plan.Plan) Session {
	s := Session{
		Seed: p.Seed, Duration: p.Duration,
		Uplink: p.Uplink, Downlink: p.Downlink,
		UplinkTimeline: p.UplinkTimeline, DownlinkTimeline: p.DownlinkTimeline,
		UplinkMTU: p.UplinkMTU, DownlinkMTU: p.DownlinkMTU, ECN: p.ECN,
		Screen: p.Screen, Agent: p.Agent, Viewer: p.Viewer,
		AgentClock:  HostClock{Offset: p.Clocks.Agent.Offset, DriftPPM: p.Clocks.Agent.DriftPPM},
		ViewerClock: HostClock{Offset: p.Clocks.Viewer.Offset, DriftPPM: p.Clocks.Viewer.DriftPPM},
		Traffic:     p.Traffic,
		Hops:        p.Hops, UpBottleneck: p.UpBottleneck, DownBottleneck: p.DownBottleneck,
	}
	if p.Path != nil {
		s.Transport = *p.Path
	}
	return s
}

// moduleRoot walks up from the working directory to the folder holding
// go.mod: go test runs in the package's folder, a command anywhere inside.
func moduleRoot() (string, error) {
	root, err := modroot.Find()
	if err != nil {
		return "", fmt.Errorf("lab: module root: %w", err)
	}
	return root, nil
}

func nameOf(sc *scenarios.Scenario) string {
	if sc == nil {
		return ""
	}
	return sc.Name
}
