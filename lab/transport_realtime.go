package lab

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/scenarios"
)

// realTimeTransport is a session in real time (Session.RealTime): real
// UDP sockets on loopback through the real-time impairment proxy.
type realTimeTransport struct{}

// open is the real-time set-up: the two PCs as two UDP sockets on
// loopback, the viewer dialling the proxy, which forwards to the agent
// through the session's links. The links get the session's seed and the
// names the in-memory transport gives them, so their random decisions are the ones a
// virtual run of the same session draws.
func (realTimeTransport) open(ctx context.Context, s Session, epoch time.Time, capt *recording) (_ *opened, err error) {
	var closers []func() error
	closeAll := func() {
		// Last made, first closed: the QUIC connections before the proxy
		// that carries them, the proxy before the sockets it writes to.
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	agentConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: agent socket: %w", err)
	}
	closers = append(closers, agentConn.Close)
	capt.namePort(agentConn.LocalAddr().(*net.UDPAddr).AddrPort().Port(), scenarios.MainFlow)
	viewerConn, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return nil, fmt.Errorf("lab: viewer socket: %w", err)
	}
	closers = append(closers, viewerConn.Close)
	upTap, downTap := capt.taps()
	proxy, err := netem.NewProxy(netem.ProxyConfig{
		Target:  agentConn.LocalAddr().String(),
		Forward: netem.LinkConfig{Name: "uplink", Seed: s.Seed, Epoch: epoch, Impairments: s.Uplink, Timeline: s.UplinkTimeline, Tap: upTap},
		Reverse: netem.LinkConfig{Name: "downlink", Seed: s.Seed, Epoch: epoch, Impairments: s.Downlink, Timeline: s.DownlinkTimeline, Tap: downTap},
	})
	if err != nil {
		return nil, fmt.Errorf("lab: proxy: %w", err)
	}
	closers = append(closers, proxy.Close)
	pair, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, proxy.Addr(), capt.quicConfig(), capt.keyLog())
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	closers = append(closers, pair.Close)
	return &opened{
		agent: pair.Server, viewer: pair.Client,
		stats:   proxy.Stats, // forward is the viewer's up link, reverse its down link
		traffic: realTimeTraffic{proxy: proxy, capt: capt},
		close:   closeAll,
	}, nil
}

// realTimeTraffic is trafficNet through the real-time proxy: each flow's
// two endpoints are UDP sockets on loopback of their own, the one at the
// viewer's host a client of the proxy routed to the one at the agent's
// (netem.Proxy.Route), so that every flow crosses the session's two links,
// their queues and their bottleneck, as it does in the in-memory network.
type realTimeTraffic struct {
	proxy *netem.Proxy
	capt  *recording
}

func (r realTimeTraffic) run(ctx context.Context, f Flow, i int, env flowEnv) (flows.Stats, []groundtruth.Frame, error) {
	return runFlow(ctx, f, i, env, r)
}

// ends makes the flow's two sockets and routes the viewer's to the
// agent's through the proxy.
func (r realTimeTraffic) ends(f Flow, _ int) (_, _ net.PacketConn, err error) {
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
	r.capt.namePort(a.LocalAddr().(*net.UDPAddr).AddrPort().Port(), f.Name)
	via, err := r.proxy.Route(v.LocalAddr().(*net.UDPAddr).AddrPort(), a.LocalAddr().(*net.UDPAddr))
	if err != nil {
		return nil, nil, err
	}
	agentRole, viewerRole := f.roles()
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
