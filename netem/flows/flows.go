// Package flows generates the traffic that competes with a session on the
// lab's links: a bulk QUIC flow (quic-go, its NewReno), a bulk TCP-like
// flow (netem/tcplike's Reno or CUBIC), constant-bitrate datagrams, and
// on/off web-like fetches whose object sizes and think times are drawn
// from a seeded source. Each runs between two endpoints of the in-memory
// network (any net.PacketConn pair), the sender's and the receiver's,
// until its context ends, and counts the payload its receiver got by
// period (Meter), so that a flow's throughput can be read over any window
// of the session. Delayed gives an endpoint an extra one-way delay of its
// own, so that flows sharing a bottleneck can differ in round-trip time.
//
// The remote-desktop sessions that compete (a second session, media in
// the reverse direction) are the lab's own agent and viewer: package lab
// runs those.
package flows

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nuvirahub/latencylab/netem"
)

// Meter counts bytes by period from a zero instant: bucket k holds what
// arrived in [zero + k*period, zero + (k+1)*period). It is safe for
// concurrent use.
type Meter struct {
	zero   time.Time
	period time.Duration

	mu      sync.Mutex
	buckets []int64
	total   int64
}

// NewMeter makes a meter with buckets of period from zero.
func NewMeter(zero time.Time, period time.Duration) *Meter {
	if period <= 0 {
		panic("flows: a meter's period must be positive")
	}
	return &Meter{zero: zero, period: period}
}

// Add counts n bytes at the instant at; an instant before zero counts in
// the first bucket.
func (m *Meter) Add(at time.Time, n int) {
	k := max(0, int(at.Sub(m.zero)/m.period))
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.buckets) <= k {
		m.buckets = append(m.buckets, 0)
	}
	m.buckets[k] += int64(n)
	m.total += int64(n)
}

// Buckets returns the bytes of each period so far.
func (m *Meter) Buckets() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int64(nil), m.buckets...)
}

// Total returns the bytes counted so far.
func (m *Meter) Total() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.total
}

// Stats is what a flow measured besides its meter.
type Stats struct {
	// Sent is the payload the sender handed to its transport (bytes);
	// Delivered what the receiver's application got.
	Sent, Delivered int64
	// Packets is the datagrams sent (cbr), or the data segments or QUIC
	// packets sent, retransmissions included.
	Packets int64
	// Lost is the datagrams that never arrived (cbr), or the packets the
	// sender declared lost (QUIC) or sent again (TCP-like).
	Lost int64
	// Marked is the data packets that arrived CE-marked (an ECN-capable
	// tcp-bulk flow).
	Marked int64
	// Objects are a web flow's fetches, in order.
	Objects []Object
}

// Object is one fetch of a web flow.
type Object struct {
	// Size is the object's size in bytes, as drawn.
	Size int64
	// Start is when its connection's SYN left, Done when its last byte
	// arrived (zero when the flow stopped first).
	Start, Done time.Time
}

// Delayed returns conn with an extra one-way delay on what it sends: each
// datagram waits d in a link of its own before it enters the network n,
// as if the endpoint sat further away (a longer access path before the
// shared bottleneck). Give both ends of a flow the same delay for a round
// trip longer by 2d. Closing the returned conn closes conn.
func Delayed(n *netem.Network, conn *netem.PacketConn, d time.Duration, name string) (net.PacketConn, error) {
	local, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("flows: %s: endpoint address %v", name, conn.LocalAddr())
	}
	from := local.AddrPort()
	link, err := netem.NewLink(netem.LinkConfig{Name: name, Impairments: []netem.Impairment{&netem.Delay{Delay: d}}},
		func(p *netem.Packet) {
			to, ok := p.To.(*net.UDPAddr)
			if !ok {
				return
			}
			// Fails only once the network is closed, with the packet
			// lost like everything in flight.
			_ = n.InjectECN(from, to.AddrPort(), p.Data, p.ECN)
		})
	if err != nil {
		return nil, fmt.Errorf("flows: %s: %w", name, err)
	}
	return &delayedConn{PacketConn: conn, endpoint: conn, link: link}, nil
}

// delayedConn is Delayed's conn: reads from the endpoint, writes through
// the delay. It holds the endpoint as a plain net.PacketConn: promoted, the
// endpoint's out-of-band methods (WriteMsgUDP, SyscallConn) would let
// quic-go write around the delay. Datagrams re-enter the network by
// Inject, which sets no DF, so QUIC over a delayed endpoint keeps its
// 1280-byte packets, without path MTU discovery.
type delayedConn struct {
	net.PacketConn
	endpoint *netem.PacketConn
	link     *netem.Link
	ecn      atomic.Uint32 // the ECN codepoint of what it sends
}

// SetECN sets the ECN codepoint of what the conn sends, through its delay.
func (c *delayedConn) SetECN(e netem.ECN) { c.ecn.Store(uint32(e)) }

// SetReadBuffer sets the endpoint's receive buffer (quic-go asks for one).
func (c *delayedConn) SetReadBuffer(bytes int) error { return c.endpoint.SetReadBuffer(bytes) }

// SetWriteBuffer is the endpoint's (accepted and ignored).
func (c *delayedConn) SetWriteBuffer(bytes int) error { return c.endpoint.SetWriteBuffer(bytes) }

// WriteTo implements net.PacketConn.
func (c *delayedConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	to, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: err}
	}
	if len(b) > netem.MaxDatagram {
		return 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: fmt.Errorf("message too long: %d bytes", len(b))}
	}
	p := &netem.Packet{Data: append([]byte(nil), b...), From: c.LocalAddr(), To: net.UDPAddrFromAddrPort(to), ECN: netem.ECN(c.ecn.Load())}
	if err := c.link.Send(p); err != nil {
		return 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: net.ErrClosed}
	}
	return len(b), nil
}

// Close implements net.PacketConn: the delay's link first, so that
// nothing more leaves it, then the endpoint.
func (c *delayedConn) Close() error {
	c.link.Close()
	return c.PacketConn.Close()
}

// ReadFromECN reads from the endpoint with the datagram's ECN codepoint.
func (c *delayedConn) ReadFromECN(b []byte) (int, net.Addr, netem.ECN, error) {
	return c.endpoint.ReadFromECN(b)
}
