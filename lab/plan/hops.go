package plan

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// convertHops turns a path of several hops into the plan's Hops, each
// direction of each hop as convertLink turns the network's, and sets the
// session's capacities and bottleneck hops from them.
func (p *Plan) convertHops(sc *scenarios.Scenario, traces map[string]*netem.Trace) error {
	if len(sc.Network.Hops) == 0 {
		return nil
	}
	if p.Path != nil {
		return fmt.Errorf("%w: network.hops with a path: the two-site topology has its own links (the viewer's access, the relay's legs)", laberr.ErrUnsupported)
	}
	var ups, downs []Capacity
	for i, h := range sc.Network.Hops {
		hop := transport.Hop{Name: h.Name, Up: netem.LinkConfig{MTU: h.UpMTU}, Down: netem.LinkConfig{MTU: h.DownMTU}}
		var upCaps, downCaps Capacity
		var err error
		if hop.Up.Impairments, hop.Up.Timeline, upCaps, _, err = convertLink(fmt.Sprintf("hops[%d].up", i), sc.File, h.Up, traces); err != nil {
			return err
		}
		if hop.Down.Impairments, hop.Down.Timeline, downCaps, _, err = convertLink(fmt.Sprintf("hops[%d].down", i), sc.File, h.Down, traces); err != nil {
			return err
		}
		p.Hops = append(p.Hops, hop)
		ups, downs = append(ups, upCaps), append(downs, downCaps)
	}
	p.UplinkCapacity, p.UpBottleneck = leastOf(ups, p.Duration)
	p.DownlinkCapacity, p.DownBottleneck = leastOf(downs, p.Duration)
	return nil
}

// leastOf is what a path of hops can carry in one direction, given each
// hop's capacity: at every instant the least of the hops' rates, or a
// trace when a hop replays one (a trace's instants cannot be set against
// a rate cheaply; a path with a trace is taken at the trace). It also
// returns the place of the hop that carries least over the session, the
// first of those that tie.
func leastOf(caps []Capacity, duration time.Duration) (Capacity, int) {
	narrowest, least := 0, math.Inf(1)
	var instants []time.Duration
	for i, c := range caps {
		bits, capped := c.Between(0, duration)
		if capped > 0 && bits < least {
			narrowest, least = i, bits
		}
		for _, ph := range c {
			instants = append(instants, ph.at)
		}
	}
	slices.Sort(instants)
	var out Capacity
	for _, at := range slices.Compact(instants) {
		least := capPhase{at: at}
		for _, c := range caps {
			ph := c.at(at)
			switch {
			case ph.trace != nil:
				if least.trace == nil {
					least = capPhase{at: at, trace: ph.trace}
				}
			case ph.rate > 0 && least.trace == nil && (least.rate == 0 || ph.rate < least.rate):
				least.rate = ph.rate
			}
		}
		out = append(out, least)
	}
	return out, narrowest
}

// at is the phase in force at instant t; no capacity before the first.
func (phases Capacity) at(t time.Duration) capPhase {
	var in capPhase
	for _, ph := range phases {
		if ph.at > t {
			break
		}
		in = ph
	}
	return in
}
