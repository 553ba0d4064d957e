package plan

import (
	"errors"
	"fmt"

	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Links turns a scenario's network into the two links the lab would give a
// session: up (viewer to agent) and down (agent to viewer), each with its
// first phase's impairments and the later phases as a timeline counted from
// the links' epoch. It is how the real-time proxy applies a scenario's
// network to any program's traffic. Traces are read as lab.Run reads them. A
// scenario with traffic is refused (laberr.ErrUnsupported): its flows would not
// run, and the programs would meet an emptier network than the scenario
// says.
func Links(sc *scenarios.Scenario) (up, down netem.LinkConfig, err error) {
	if sc != nil && len(sc.Traffic) > 0 {
		return up, down, fmt.Errorf("scenario %q: %w: its traffic (%d flows) cannot run beside another program's packets: they run beside the lab's own session (go test, lab run), every kind in virtual and real time, tcp-bulk in the kernel mode", sc.Name, laberr.ErrUnsupported, len(sc.Traffic))
	}
	p, err := Convert(sc)
	if err == nil {
		err = p.errHops()
	}
	if err != nil {
		return up, down, fmt.Errorf("scenario %q: %w", nameOf(sc), err)
	}
	up, down = p.links()
	return up, down, nil
}

// ShellLinks is Links for lab shell, which runs a scenario's traffic
// itself beside the user's program (transport.StartShellTraffic): the
// scenario's two links and its flows, which must be ones the kernel mode
// runs (tcp-bulk, without an extra delay; the others are refused with
// laberr.ErrUnsupported).
func ShellLinks(sc *scenarios.Scenario) (up, down netem.LinkConfig, flows []traffic.Flow, err error) {
	p, err := Convert(sc)
	if err != nil {
		return up, down, nil, fmt.Errorf("scenario %q: %w", nameOf(sc), err)
	}
	err = errors.Join(p.errHops(), traffic.Check(p.Traffic, p.Duration))
	if err == nil {
		err = transport.CheckKernelFlows(p.Traffic)
	}
	if err != nil {
		return up, down, nil, fmt.Errorf("scenario %q: %w", nameOf(sc), err)
	}
	up, down = p.links()
	return up, down, p.Traffic, nil
}

// errHops refuses a path of several hops where only two links can be
// given: the proxy's, lab shell's.
func (p *Plan) errHops() error {
	if len(p.Hops) > 0 {
		return fmt.Errorf("%w: network.hops: a path of %d hops runs in the in-memory network only; here the scenario's network must be one pair of links (down, up)", laberr.ErrUnsupported, len(p.Hops))
	}
	return nil
}

// links are the plan's two links for a program that is not the lab's:
// "up" and "down", each with the plan's seed, counted from their own
// creation.
func (p *Plan) links() (up, down netem.LinkConfig) {
	up = netem.LinkConfig{Name: "up", Seed: p.Seed, Impairments: p.Uplink, Timeline: p.UplinkTimeline, MTU: p.UplinkMTU}
	down = netem.LinkConfig{Name: "down", Seed: p.Seed, Impairments: p.Downlink, Timeline: p.DownlinkTimeline, MTU: p.DownlinkMTU}
	return up, down
}

func nameOf(sc *scenarios.Scenario) string {
	if sc == nil {
		return ""
	}
	return sc.Name
}
