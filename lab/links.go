package lab

import (
	"fmt"

	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Links turns a scenario's network into the two links the lab would give a
// session: up (viewer to agent) and down (agent to viewer), each with its
// first phase's impairments and the later phases as a timeline counted from
// the links' epoch. It is how the real-time proxy applies a scenario's
// network to any program's traffic. Traces are read as Run reads them. A
// scenario with traffic is refused (ErrUnsupported): its flows would not
// run, and the programs would meet an emptier network than the scenario
// says.
func Links(sc *scenarios.Scenario) (up, down netem.LinkConfig, err error) {
	if sc != nil && len(sc.Traffic) > 0 {
		return up, down, fmt.Errorf("scenario %q: %w: its traffic (%d flows) cannot run beside another program's packets: they run beside the lab's own session (go test, lab run), every kind in virtual and real time, tcp-bulk in the kernel mode", sc.Name, ErrUnsupported, len(sc.Traffic))
	}
	p, err := convert(sc)
	if err != nil {
		return up, down, fmt.Errorf("scenario %q: %w", nameOf(sc), err)
	}
	s := p.session
	up = netem.LinkConfig{Name: "up", Seed: s.Seed, Impairments: s.Uplink, Timeline: s.UplinkTimeline}
	down = netem.LinkConfig{Name: "down", Seed: s.Seed, Impairments: s.Downlink, Timeline: s.DownlinkTimeline}
	return up, down, nil
}

// DescribePhase sums a scenario's phase up as the reports do: "delay 25ms,
// loss 1%, rate 5 Mbit/s", or "perfect". lab shell's status line names the
// phase in force with it.
func DescribePhase(ph scenarios.Phase) string { return describePhase(ph) }

// ShellLinks is Links for lab shell, which runs a scenario's traffic
// itself beside the user's program (transport.StartShellTraffic): the
// scenario's two links and its flows, which must be ones the kernel mode
// runs (tcp-bulk, without an extra delay; the others are refused with
// ErrUnsupported).
func ShellLinks(sc *scenarios.Scenario) (up, down netem.LinkConfig, flows []traffic.Flow, err error) {
	p, err := convert(sc)
	if err != nil {
		return up, down, nil, fmt.Errorf("scenario %q: %w", nameOf(sc), err)
	}
	s := p.session
	err = traffic.Check(s.Traffic, s.Duration)
	if err == nil {
		err = transport.CheckKernelFlows(s.Traffic)
	}
	if err != nil {
		return up, down, nil, fmt.Errorf("scenario %q: %w", nameOf(sc), err)
	}
	up = netem.LinkConfig{Name: "up", Seed: s.Seed, Impairments: s.Uplink, Timeline: s.UplinkTimeline}
	down = netem.LinkConfig{Name: "down", Seed: s.Seed, Impairments: s.Downlink, Timeline: s.DownlinkTimeline}
	return up, down, s.Traffic, nil
}
