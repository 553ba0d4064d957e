package transport

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/scenarios"
)

// RealTime runs a session in real time, over real UDP sockets on
// 127.0.0.1, the viewer's and the agent's, through the real-time
// impairment proxy (netem.Proxy, the uplink as its forward link and the
// downlink as its reverse one), rather than over the in-memory network:
// for a live dashboard, at the pace of the wall clock. Real sockets live
// outside any testing/synctest bubble, so a real-time session must not
// run inside one. It carries every kind of traffic the lab's flow
// generators run, each flow between two loopback sockets of its own
// through the proxy's links (netem.Proxy.Route).
type RealTime struct{}

// Check implements Transport: bbr needs the kernel's TCP.
func (RealTime) Check(fl []traffic.Flow) error { return traffic.CheckModels(fl) }

// FlowSockets implements NamedPorts.
func (RealTime) FlowSockets() string { return "sockets of its own on loopback" }

// Open implements Transport: the two PCs as two UDP sockets on loopback,
// the viewer dialling the proxy, which forwards to the agent through the
// session's links. The links get the session's seed and the names the
// in-memory transport gives them, so their random decisions are the ones
// a virtual run of the same session draws.
func (RealTime) Open(ctx context.Context, nw Network) (_ *Conn, err error) {
	// Last made, first closed: the QUIC connections before the proxy
	// that carries them, the proxy before the sockets it writes to.
	var made closers
	defer func() {
		if err != nil {
			made.close()
		}
	}()
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	agentConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: agent socket: %w", err)
	}
	made.add(agentConn.Close)
	namePort(nw.Recorder, agentConn.LocalAddr().(*net.UDPAddr).AddrPort().Port(), scenarios.MainFlow)
	viewerConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: viewer socket: %w", err)
	}
	made.add(viewerConn.Close)
	forward, reverse := nw.Uplink, nw.Downlink
	forward.Seed, reverse.Seed = nw.Seed, nw.Seed
	// With ECN the proxy carries the bits quic-go sets on its real sockets;
	// without, it clears them, and quic-go stops marking.
	proxy, err := netem.NewProxy(netem.ProxyConfig{Target: agentConn.LocalAddr().String(), Forward: forward, Reverse: reverse, ECN: nw.ECN})
	if err != nil {
		return nil, fmt.Errorf("lab: proxy: %w", err)
	}
	made.add(proxy.Close)
	pair, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, proxy.Addr(), quicConfig(nw.Recorder), keyLog(nw.Recorder))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	made.add(pair.Close)
	return &Conn{
		Agent: pair.Server, Viewer: pair.Client,
		Stats:   proxy.Stats, // forward is the viewer's up link, reverse its down link
		Traffic: realTimeFlows{proxy: proxy, rec: nw.Recorder},
		Close:   made.close,
	}, nil
}

// namePort names a port in a recorder that may be nil.
func namePort(r Recorder, port uint16, flow string) {
	if r != nil {
		r.NamePort(port, flow)
	}
}

// realTimeFlows runs the flows through the real-time proxy: each flow's
// two endpoints are UDP sockets on loopback of their own, the one at the
// viewer's host a client of the proxy routed to the one at the agent's
// (netem.Proxy.Route), so that every flow crosses the session's two links,
// their queues and their bottleneck, as it does in the in-memory network.
type realTimeFlows struct {
	proxy *netem.Proxy
	rec   Recorder
}

// Run implements traffic.Network.
func (r realTimeFlows) Run(ctx context.Context, f traffic.Flow, i int, env traffic.Env) (flows.Stats, []groundtruth.Frame, error) {
	return traffic.RunBetween(ctx, f, i, env, r)
}

// Ends implements traffic.Ends: it makes the flow's two sockets and
// routes the viewer's to the agent's through the proxy.
func (r realTimeFlows) Ends(f traffic.Flow, _ int) (_, _ net.PacketConn, err error) {
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	a, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, nil, err
	}
	v, err := net.ListenUDP("udp", loopback)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			a.Close()
			v.Close()
		}
	}()
	for _, c := range []*net.UDPConn{a, v} {
		// A bulk flow's bursts must not overflow a default buffer
		// before its reader runs on a busy machine.
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
	}
	namePort(r.rec, a.LocalAddr().(*net.UDPAddr).AddrPort().Port(), f.Name)
	via, err := r.proxy.Route(v.LocalAddr().(*net.UDPAddr).AddrPort(), a.LocalAddr().(*net.UDPAddr))
	if err != nil {
		return nil, nil, err
	}
	agentRole, viewerRole := f.Roles()
	agentEnd, err := newRoutedConn(a, via, v.LocalAddr(), f.Delay, "traffic/"+f.Name+"/"+agentRole)
	if err != nil {
		return nil, nil, err
	}
	viewerEnd, err := newRoutedConn(v, r.proxy.Addr(), a.LocalAddr(), f.Delay, "traffic/"+f.Name+"/"+viewerRole)
	if err != nil {
		agentEnd.Close()
		return nil, nil, err
	}
	return agentEnd, viewerEnd, nil
}

// routedConn is one end of a real-time flow: a UDP socket that sends
// everything to the address its datagrams take to the peer (the proxy, or
// the proxy's socket for this flow) and reads everything as from the
// peer's own address, so the flow, which addresses its peer by the peer's
// LocalAddr, never sees the proxy in between. With a delay, what it sends
// waits in a link of its own first, as flows.Delayed does in memory.
type routedConn struct {
	// The socket as an interface: quic-go must not find the batch and
	// control-message methods of *net.UDPConn, which would bypass
	// WriteTo and ReadFrom.
	net.PacketConn
	to, peer net.Addr
	delay    *netem.Link // nil without a delay
}

func newRoutedConn(c *net.UDPConn, to, peer net.Addr, delay time.Duration, name string) (*routedConn, error) {
	rc := &routedConn{PacketConn: c, to: to, peer: peer}
	if delay > 0 {
		var err error
		rc.delay, err = netem.NewLink(netem.LinkConfig{Name: name, Precise: true, Impairments: []netem.Impairment{&netem.Delay{Delay: delay}}},
			func(p *netem.Packet) { _, _ = c.WriteTo(p.Data, to) }) // a write error loses the datagram, as the network would
		if err != nil {
			c.Close()
			return nil, err
		}
	}
	return rc, nil
}

// WriteTo implements net.PacketConn: to the peer, whatever addr says.
func (c *routedConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	if c.delay == nil {
		return c.PacketConn.WriteTo(b, c.to)
	}
	if err := c.delay.Send(&netem.Packet{Data: slices.Clone(b), From: c.LocalAddr(), To: c.to}); err != nil {
		return 0, &net.OpError{Op: "write", Net: "udp", Addr: c.to, Err: net.ErrClosed}
	}
	return len(b), nil
}

// ReadFrom implements net.PacketConn: every datagram is the peer's.
func (c *routedConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, _, err := c.PacketConn.ReadFrom(b)
	if err != nil {
		return n, nil, err
	}
	return n, c.peer, nil
}

// SetReadBuffer and SetWriteBuffer size the socket's kernel buffers, as
// quic-go asks of every connection it is given.
func (c *routedConn) SetReadBuffer(n int) error {
	return c.PacketConn.(*net.UDPConn).SetReadBuffer(n)
}

// SetWriteBuffer: see SetReadBuffer.
func (c *routedConn) SetWriteBuffer(n int) error {
	return c.PacketConn.(*net.UDPConn).SetWriteBuffer(n)
}

// Close implements net.PacketConn: the delay first, so that nothing more
// leaves it, then the socket.
func (c *routedConn) Close() error {
	if c.delay != nil {
		c.delay.Close()
	}
	return c.PacketConn.Close()
}
