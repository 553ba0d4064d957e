package lab

import (
	"context"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
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
// controller, switches), runs it with RunSessionContext, and evaluates the
// scenario's expectations on the result.
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

func nameOf(sc *scenarios.Scenario) string {
	if sc == nil {
		return ""
	}
	return sc.Name
}
