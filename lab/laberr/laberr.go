// Package laberr holds the errors with which the lab's packages refuse a
// session: defined once, below every package that refuses (the traffic,
// the transports, the scenario's conversion, the session itself), so that
// errors.Is finds them whichever refused. Package lab exports them under
// its own names (lab.ErrScenario, lab.ErrUnsupported).
package laberr

import "errors"

var (
	// ErrScenario wraps every reason a scenario or session cannot be run
	// as written (an unknown preset, source or controller, a queue without
	// a bottleneck, parameters netem refuses, a flow without a name).
	ErrScenario = errors.New("lab: scenario cannot be run")
	// ErrUnsupported: the session asks for something the lab cannot do
	// (a kind of traffic a transport cannot carry, the kernel mode away
	// from Linux).
	ErrUnsupported = errors.New("lab: not supported yet")
)
