package transport

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/netem"
)

// Hop is one hop of a path of several (Network.Hops): its name and its
// two links, Down carrying agent -> viewer and Up viewer -> agent.
type Hop struct {
	Name     string
	Up, Down netem.LinkConfig
}

// HopStats are a hop's links' counters.
type HopStats struct {
	Name     string
	Up, Down netem.Stats
}

// hopPath is a path of hops on the in-memory network: the hops' links,
// and the hosts at the routers between them, where flows on part of the
// path join it and leave it.
type hopPath struct {
	names    []string
	up, down []*netem.Link
	// points are the path's hosts in the video's order: the agent's
	// host, a router's address between each two hops, the viewer's host.
	points []netip.Addr
}

// routerAddr is the address of the router after hop i (0-based), a host
// of the in-memory network where a flow crossing part of the path has its
// end.
func routerAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 1, byte(i + 1)}) }

// openHops makes the hops' links on n and a route between every two
// points of the path: down from the nearer point to the agent, across the
// hops between them, and up the other way.
func openHops(n *netem.Network, hops []Hop) (*hopPath, error) {
	if len(hops) > 254 {
		return nil, fmt.Errorf("%w: a path of %d hops (254 at most)", laberr.ErrScenario, len(hops))
	}
	hp := &hopPath{points: []netip.Addr{AgentAddr.Addr()}}
	for i, h := range hops {
		down, err := n.AddLink(h.Down)
		if err != nil {
			return nil, fmt.Errorf("lab: hop %s down: %w", h.Name, err)
		}
		up, err := n.AddLink(h.Up)
		if err != nil {
			return nil, fmt.Errorf("lab: hop %s up: %w", h.Name, err)
		}
		hp.names, hp.down, hp.up = append(hp.names, h.Name), append(hp.down, down), append(hp.up, up)
		if i+1 < len(hops) {
			hp.points = append(hp.points, routerAddr(i))
		}
	}
	hp.points = append(hp.points, ViewerAddr.Addr())
	for a := range hp.points {
		for b := a + 1; b < len(hp.points); b++ {
			if err := n.SetRoute(hp.points[a], hp.points[b], hp.down[a:b]...); err != nil {
				return nil, err
			}
			back := slices.Clone(hp.up[a:b])
			slices.Reverse(back)
			if err := n.SetRoute(hp.points[b], hp.points[a], back...); err != nil {
				return nil, err
			}
		}
	}
	return hp, nil
}

// ends are the hosts of a flow's two ends: before the first of its hops
// (on the agent's side) and after the last; the whole path when it names
// none.
func (hp *hopPath) ends(f traffic.Flow) (agentSide, viewerSide netip.Addr, err error) {
	if len(f.Hops) == 0 {
		return AgentAddr.Addr(), ViewerAddr.Addr(), nil
	}
	if hp == nil {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: flow %s crosses hops %v of a path with no hops", laberr.ErrScenario, f.Name, f.Hops)
	}
	first := slices.Index(hp.names, f.Hops[0])
	for k, name := range f.Hops {
		if first < 0 || first+k >= len(hp.names) || hp.names[first+k] != name {
			return netip.Addr{}, netip.Addr{}, fmt.Errorf("%w: flow %s: hops %v: expected consecutive hops of the path %v, in its order", laberr.ErrScenario, f.Name, f.Hops, hp.names)
		}
	}
	return hp.points[first], hp.points[first+len(f.Hops)], nil
}

// stats reads every hop's counters, in the path's order.
func (hp *hopPath) stats() []HopStats {
	out := make([]HopStats, len(hp.names))
	for i, name := range hp.names {
		out[i] = HopStats{Name: name, Up: hp.up[i].Stats(), Down: hp.down[i].Stats()}
	}
	return out
}

// bottleneck is the session's up and down links' counters on a path of
// hops: those of the hops Network.UpBottleneck and DownBottleneck name.
func (hp *hopPath) bottleneck(nw Network) func() (up, down netem.Stats) {
	u, d := hp.up[nw.UpBottleneck], hp.down[nw.DownBottleneck]
	return func() (netem.Stats, netem.Stats) { return u.Stats(), d.Stats() }
}
