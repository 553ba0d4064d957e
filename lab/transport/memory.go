package transport

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/quicpair"
)

// Memory is the plain set-up, and a session's transport when it names
// none: the two PCs on one in-memory network (virtual time inside a
// synctest bubble), joined by the session's links, QUIC straight between
// them. It carries every kind of traffic the lab's flow generators run.
type Memory struct{}

// Check implements Transport: bbr needs the kernel's TCP.
func (Memory) Check(fl []traffic.Flow) error { return traffic.CheckModels(fl) }

// Open implements Transport: it makes the network and its two links (or
// its path of hops, Network.Hops) and connects the PCs.
func (Memory) Open(ctx context.Context, nw Network) (_ *Conn, err error) {
	n := netem.NewNetwork(nw.Seed)
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	var stats func() (netem.Stats, netem.Stats)
	var hops *hopPath
	if len(nw.Hops) > 0 {
		if hops, err = openHops(n, nw.Hops); err != nil {
			return nil, err
		}
		stats = hops.bottleneck(nw)
	} else {
		up, err := n.SetLink(ViewerAddr.Addr(), AgentAddr.Addr(), nw.Uplink)
		if err != nil {
			return nil, fmt.Errorf("lab: uplink: %w", err)
		}
		down, err := n.SetLink(AgentAddr.Addr(), ViewerAddr.Addr(), nw.Downlink)
		if err != nil {
			return nil, fmt.Errorf("lab: downlink: %w", err)
		}
		stats = linkStats(up, down)
	}
	agentConn, err := n.Listen(AgentAddr)
	if err != nil {
		return nil, err
	}
	viewerConn, err := n.Listen(ViewerAddr)
	if err != nil {
		return nil, err
	}
	agentConn.PassECN(nw.ECN)
	viewerConn.PassECN(nw.ECN)
	pair, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, nil, quicConfig(nw.Recorder), keyLog(nw.Recorder))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	marked := func() int64 { return int64(viewerConn.MarkedArrivals()) }
	conn := &Conn{Agent: pair.Server, Viewer: pair.Client, Stats: stats, Traffic: memoryFlows{n, hops}, Marked: marked, Close: func() {
		pair.Close()
		n.Close()
	}}
	if hops != nil {
		conn.Hops = hops.stats
	}
	return conn, nil
}

// memoryFlows runs the flows on the in-memory network: their endpoints
// share the hosts, and so the links, of the session's two PCs, or on a
// path of hops the hosts before and after the flow's hops.
type memoryFlows struct {
	n    *netem.Network
	hops *hopPath
}

// Run implements traffic.Network.
func (m memoryFlows) Run(ctx context.Context, f traffic.Flow, i int, env traffic.Env) (flows.Stats, []groundtruth.Frame, error) {
	return traffic.RunBetween(ctx, f, i, env, m)
}

// Ends implements traffic.Ends: it binds port traffic.PortBase+i at both
// hosts.
func (m memoryFlows) Ends(f traffic.Flow, i int) (net.PacketConn, net.PacketConn, error) {
	port := uint16(traffic.PortBase + i)
	agentRole, viewerRole := f.Roles()
	agentHost, viewerHost, err := m.hops.ends(f)
	if err != nil {
		return nil, nil, err
	}
	a, err := m.endpoint(agentHost, port, f.Delay, "traffic/"+f.Name+"/"+agentRole)
	if err != nil {
		return nil, nil, err
	}
	v, err := m.endpoint(viewerHost, port, f.Delay, "traffic/"+f.Name+"/"+viewerRole)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	if f.QUICECN() {
		// traffic.Check refuses ECN with a delay, so both are endpoints.
		for _, c := range []net.PacketConn{a, v} {
			if e, ok := c.(*netem.PacketConn); ok {
				e.PassECN(true)
			}
		}
	}
	return a, v, nil
}

// endpoint binds port at host, its datagrams delayed by delay before the
// shared links.
func (m memoryFlows) endpoint(host netip.Addr, port uint16, delay time.Duration, name string) (net.PacketConn, error) {
	c, err := m.n.Listen(netip.AddrPortFrom(host, port))
	if err != nil {
		return nil, err
	}
	if delay == 0 {
		return c, nil
	}
	d, err := flows.Delayed(m.n, c, delay, name)
	if err != nil {
		c.Close()
		return nil, err
	}
	return d, nil
}
