package netem

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nuvirahub/latencylab/netem/internal/wait"
)

// Network is an in-memory IP network: hosts are addresses, every ordered
// pair of hosts is joined by a Link, and endpoints are net.PacketConns bound
// to an address and port. Packets from host A to host B cross the link A->B
// set with SetLink; a pair without one gets a perfect link on first use, so
// asymmetric paths are two SetLink calls.
type Network struct {
	seed  uint64
	epoch time.Time

	mu       sync.Mutex
	conns    map[netip.AddrPort]*PacketConn
	links    map[route]*Link
	nextPort uint16
	noRoute  Counter
	gateway  Gateway
	// hostOut and hostIn are the access links of hosts that have them
	// (SetHostLinks): every packet from the host crosses its out link
	// before the route's link, every packet to it its in link after.
	hostOut, hostIn map[netip.Addr]*Link
	// hopLinks are the links made by AddLink, in order; routes lists the
	// links of each route set with SetRoute (hops.go), made by the first:
	// a network without hops allocates nothing more, so that exact
	// sessions, whose maps draw their hash seeds from one deterministic
	// source, draw the same seeds as before hops existed.
	hopLinks []*Link
	routes   map[route][]*Link
	closed   bool
}

// Gateway takes the packets a Network cannot deliver itself: those that
// leave their link and find no endpoint bound at their destination. It is
// how a network reaches beyond itself, as a LAN reaches the internet through
// its router (see package netem/nat).
type Gateway interface {
	// Forward takes ownership of p (and of p.Data). It is called from the
	// delivering link's goroutine, one packet at a time per link, so it must
	// not block: the link delivers nothing else until it returns.
	Forward(p *Packet)
}

type route struct{ from, to netip.Addr }

// MaxDatagram is the largest payload a PacketConn sends, as for UDP over IPv4.
const MaxDatagram = 65507

// recvBufferBytes bounds what waits unread in one endpoint, like a socket's
// receive buffer; beyond it packets are dropped (DropRecvBuf).
const recvBufferBytes = 4 << 20

// NewNetwork makes an empty network. seed is the run's seed; every link's
// random sources derive from it and the link's name. The network's epoch
// (time zero of every link's timeline) is the instant it is made.
func NewNetwork(seed uint64) *Network {
	return &Network{
		seed:     seed,
		epoch:    time.Now(),
		conns:    map[netip.AddrPort]*PacketConn{},
		links:    map[route]*Link{},
		hostOut:  map[netip.Addr]*Link{},
		hostIn:   map[netip.Addr]*Link{},
		nextPort: 49152,
	}
}

// Epoch is the network's time zero.
func (n *Network) Epoch() time.Time { return n.epoch }

// SetLink installs the link carrying packets from host from to host to,
// replacing (and closing) any previous one, and any route of several
// links set with SetRoute. Zero Name, Seed and Epoch in cfg
// take "from->to", the network's seed and the network's epoch.
func (n *Network) SetLink(from, to netip.Addr, cfg LinkConfig) (*Link, error) {
	if cfg.Name == "" {
		cfg.Name = from.String() + "->" + to.String()
	}
	if cfg.Seed == 0 {
		cfg.Seed = n.seed
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = n.epoch
	}
	l, err := NewLink(cfg, n.arrive)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		l.Close()
		return nil, net.ErrClosed
	}
	old := n.links[route{from, to}]
	n.links[route{from, to}] = l
	delete(n.routes, route{from, to})
	n.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return l, nil
}

// Link returns the link from host from to host to, or nil if none was set
// or used yet.
func (n *Network) Link(from, to netip.Addr) *Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[route{from, to}]
}

// linkFor returns the link for a route, the first of its links if it has
// several (SetRoute), making a perfect one if it has none.
func (n *Network) linkFor(from, to netip.Addr) (*Link, error) {
	n.mu.Lock()
	l := n.links[route{from, to}]
	if l == nil {
		if hops := n.routes[route{from, to}]; len(hops) > 0 {
			l = hops[0]
		}
	}
	n.mu.Unlock()
	if l != nil {
		return l, nil
	}
	l, err := NewLink(LinkConfig{Name: from.String() + "->" + to.String(), Seed: n.seed, Epoch: n.epoch}, n.arrive)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		l.Close()
		return nil, net.ErrClosed
	}
	if existing := n.links[route{from, to}]; existing != nil { // lost a race
		go l.Close()
		return existing, nil
	}
	n.links[route{from, to}] = l
	return l, nil
}

// PathMTU is the MTU of the path from host from to host to: the least of
// its links' (from's out link, the route's link or links, to's in link),
// DefaultMTU for a route whose perfect link is not made yet.
func (n *Network) PathMTU(from, to netip.Addr) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	mtu := DefaultMTU
	if l := n.links[route{from, to}]; l != nil {
		mtu = l.mtu
	}
	for _, l := range append([]*Link{n.hostOut[from], n.hostIn[to]}, n.routes[route{from, to}]...) {
		if l != nil {
			mtu = min(mtu, l.mtu)
		}
	}
	return mtu
}

// PathMTU is the MTU of the path from c to host to (Network.PathMTU).
func (c *PacketConn) PathMTU(to netip.Addr) int { return c.net.PathMTU(c.local.Addr(), to) }

// Listen binds an endpoint to addr. Port 0 picks a free port.
func (n *Network) Listen(addr netip.AddrPort) (*PacketConn, error) {
	if !addr.Addr().IsValid() {
		return nil, fmt.Errorf("netem: listen: invalid address %v", addr)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, net.ErrClosed
	}
	if addr.Port() == 0 {
		for range 1 << 16 {
			p := n.nextPort
			n.nextPort++
			if n.nextPort == 0 {
				n.nextPort = 49152
			}
			if _, used := n.conns[netip.AddrPortFrom(addr.Addr(), p)]; !used && p != 0 {
				addr = netip.AddrPortFrom(addr.Addr(), p)
				break
			}
		}
		if addr.Port() == 0 {
			return nil, fmt.Errorf("netem: listen %v: no free port", addr.Addr())
		}
	}
	if _, used := n.conns[addr]; used {
		return nil, fmt.Errorf("netem: listen %v: address already in use", addr)
	}
	c := &PacketConn{net: n, local: addr, addr: net.UDPAddrFromAddrPort(addr)}
	c.deadline = wait.Deadlines{Mu: &c.mu, Changed: &c.changed}
	n.conns[addr] = c
	return c, nil
}

// MustListen is Listen for tests and examples: it panics on error.
func (n *Network) MustListen(addr string) *PacketConn {
	c, err := n.Listen(netip.MustParseAddrPort(addr))
	if err != nil {
		panic(err)
	}
	return c
}

// SetGateway makes g the network's gateway; nil removes it. While a gateway
// is set, packets for destinations with no endpoint go to it and are not
// counted by NoRoute.
func (n *Network) SetGateway(g Gateway) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gateway = g
}

// Inject sends data into the network as if an endpoint at from had written it
// to to, across the link from host from.Addr() to host to.Addr(), made
// perfect on first use as for WriteTo. No endpoint need be bound at from: a
// gateway uses it to bring in packets from beyond the network, whose source
// is a remote address. The payload is copied. As with UDP, a destination
// with no endpoint is not an error.
func (n *Network) Inject(from, to netip.AddrPort, data []byte) error {
	return n.InjectECN(from, to, data, NotECT)
}

// InjectECN is Inject of a datagram carrying the ECN codepoint ecn.
func (n *Network) InjectECN(from, to netip.AddrPort, data []byte, ecn ECN) error {
	if !from.IsValid() || !to.IsValid() {
		return fmt.Errorf("netem: inject %v -> %v: invalid address", from, to)
	}
	if len(data) > MaxDatagram {
		return fmt.Errorf("netem: inject %v -> %v: message too long: %d bytes", from, to, len(data))
	}
	p := &Packet{Data: append([]byte(nil), data...), From: net.UDPAddrFromAddrPort(from), To: net.UDPAddrFromAddrPort(to), ECN: ecn}
	if err := n.send(from.Addr(), to.Addr(), p); err != nil {
		return fmt.Errorf("netem: inject %v -> %v: %w", from, to, err)
	}
	return nil
}

// NoRoute counts packets that reached a destination with no open
// endpoint: none bound there, one closing as they arrived, or one that
// closed with them unread (as a socket's close discards its receive
// queue). Every packet a link delivers is thus read, dropped by a full
// receive buffer (PacketConn.Dropped), or counted here.
func (n *Network) NoRoute() Counter {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.noRoute
}

// Close closes every endpoint and link, and waits for their goroutines.
func (n *Network) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	// Host out links first: they feed the route links, which feed the
	// host in links; closing upstream first loses nothing more than
	// closing at all does.
	links := make([]*Link, 0, len(n.links)+len(n.hostOut)+len(n.hostIn)+len(n.hopLinks))
	for _, l := range n.hostOut {
		links = append(links, l)
	}
	for _, l := range n.links {
		links = append(links, l)
	}
	links = append(links, n.hopLinks...)
	for _, l := range n.hostIn {
		links = append(links, l)
	}
	conns := make([]*PacketConn, 0, len(n.conns))
	for _, c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	for _, l := range links {
		l.Close()
	}
	return nil
}

// send puts a packet on its way from host from to host to: through from's
// out link when it has one, then the route's link. Errors are
// net.ErrClosed once the network is closed.
func (n *Network) send(from, to netip.Addr, p *Packet) error {
	n.mu.Lock()
	out := n.hostOut[from]
	n.mu.Unlock()
	if out != nil {
		if err := out.Send(p); err != nil {
			return net.ErrClosed
		}
		return nil
	}
	return n.route(from, to, p)
}

// route sends a packet across the link of its route.
func (n *Network) route(from, to netip.Addr, p *Packet) error {
	l, err := n.linkFor(from, to)
	if err != nil {
		return err
	}
	if err := l.Send(p); err != nil {
		return net.ErrClosed
	}
	return nil
}

// leftHost is where a host's out link delivers: on to the route's link.
func (n *Network) leftHost(p *Packet) {
	from, _ := p.From.(*net.UDPAddr)
	to, _ := p.To.(*net.UDPAddr)
	if from == nil || to == nil {
		return
	}
	// An error here means the network closed while the packet was on the
	// host's link: it is lost with everything else in flight.
	_ = n.route(from.AddrPort().Addr(), to.AddrPort().Addr(), p)
}

// arrive is where a route's link delivers: into the destination host's in
// link when it has one, else to the endpoint.
func (n *Network) arrive(p *Packet) {
	if to, _ := p.To.(*net.UDPAddr); to != nil {
		n.mu.Lock()
		in := n.hostIn[to.AddrPort().Addr()]
		n.mu.Unlock()
		if in != nil {
			_ = in.Send(p) // fails only once closed, like leftHost
			return
		}
	}
	n.deliver(p)
}

// SetHostLinks gives a host access links: out carries every packet the host
// sends, whatever its destination, before the route's own link; in carries
// every packet to the host after it. They model what all of a host's
// traffic shares (a PC's access line, a site's uplink), which per-route
// links cannot: one bottleneck queue, one loss process. Zero Name, Seed and
// Epoch take "host/out" or "host/in", the network's seed and epoch. Links set
// before are replaced (and closed).
func (n *Network) SetHostLinks(host netip.Addr, out, in LinkConfig) (outLink, inLink *Link, err error) {
	defaults := func(cfg *LinkConfig, dir string) {
		if cfg.Name == "" {
			cfg.Name = host.String() + "/" + dir
		}
		if cfg.Seed == 0 {
			cfg.Seed = n.seed
		}
		if cfg.Epoch.IsZero() {
			cfg.Epoch = n.epoch
		}
	}
	defaults(&out, "out")
	defaults(&in, "in")
	if outLink, err = NewLink(out, n.leftHost); err != nil {
		return nil, nil, fmt.Errorf("netem: %v out link: %w", host, err)
	}
	if inLink, err = NewLink(in, n.deliver); err != nil {
		outLink.Close()
		return nil, nil, fmt.Errorf("netem: %v in link: %w", host, err)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		outLink.Close()
		inLink.Close()
		return nil, nil, net.ErrClosed
	}
	oldOut, oldIn := n.hostOut[host], n.hostIn[host]
	n.hostOut[host], n.hostIn[host] = outLink, inLink
	n.mu.Unlock()
	for _, l := range []*Link{oldOut, oldIn} {
		if l != nil {
			l.Close()
		}
	}
	return outLink, inLink, nil
}

// deliver hands a packet that left a link to its destination endpoint, or
// to the gateway if there is none.
func (n *Network) deliver(p *Packet) {
	to, _ := p.To.(*net.UDPAddr)
	var c *PacketConn
	var g Gateway
	if to != nil {
		n.mu.Lock()
		c = n.conns[to.AddrPort()]
		if c == nil {
			g = n.gateway
			if g == nil {
				n.noRoute.add(p)
			}
		}
		n.mu.Unlock()
	}
	switch {
	case c != nil:
		c.enqueue(p)
	case g != nil:
		// Outside the lock: the gateway sends on, possibly into this network.
		g.Forward(p)
	}
}

// countNoRoute counts a packet that found no open endpoint.
func (n *Network) countNoRoute(p *Packet) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.noRoute.add(p)
}

func (n *Network) unbind(c *PacketConn) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.conns[c.local] == c {
		delete(n.conns, c.local)
	}
}

// PacketConn is an endpoint of a Network: a complete net.PacketConn whose
// datagrams cross the network's links. Reads block until a packet arrives,
// the read deadline passes (os.ErrDeadlineExceeded) or the conn is closed
// (net.ErrClosed); moving a deadline wakes blocked readers. Writes never
// block. Payloads are copied both ways.
type PacketConn struct {
	net   *Network
	local netip.AddrPort
	addr  *net.UDPAddr

	mu          sync.Mutex
	changed     wait.Signal
	deadline    wait.Deadlines // guarded by mu, broadcast on changed
	queue       []*Packet      // unread packets are queue[head:]
	head        int
	queuedBytes int
	recvLimit   int // bytes; 0 means recvBufferBytes
	dropped     Counter
	closed      bool
	ecn         atomic.Uint32 // the ECN codepoint of what c sends through WriteTo
	passECN     atomic.Bool   // see PassECN
	// markedArrivals counts the datagrams that arrived CE-marked.
	markedArrivals atomic.Uint64
	// df and recvTOS are the socket options the endpoint's owner set
	// through SyscallConn (oob_linux.go): DF on what it sends, and the
	// ECN bits in a control message with what it reads.
	df, recvTOS bool
	// opts is the real socket that holds those options; see SyscallConn.
	opts socketOptions
}

var _ net.PacketConn = (*PacketConn)(nil)

// errTimeout is what blocked calls return when their deadline passes; it
// wraps os.ErrDeadlineExceeded and is a net.Error whose Timeout() is true.
var errTimeout error = os.ErrDeadlineExceeded

// ReadFrom implements net.PacketConn. A payload longer than b is truncated,
// as with UDP.
func (c *PacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, from, _, err := c.ReadFromECN(b)
	return n, from, err
}

// SetECN sets the ECN codepoint of the datagrams c sends from now on, as
// setting IP_TOS on a socket does. The default is NotECT.
func (c *PacketConn) SetECN(e ECN) { c.ecn.Store(uint32(e)) }

// ReadFromECN is ReadFrom that also returns the datagram's ECN codepoint as
// it arrived (CE if a queue on the way marked it), as IP_RECVTOS gives a
// socket.
func (c *PacketConn) ReadFromECN(b []byte) (int, net.Addr, ECN, error) {
	p, err := c.next(true)
	if err != nil {
		return 0, nil, NotECT, err
	}
	n, from, ecn := copy(b, p.Data), p.From, p.ECN
	p.release()
	return n, from, ecn, nil
}

// next takes the oldest unread packet, waiting for one if block is set;
// without block it returns nil, nil when none waits. The caller releases
// the packet once it has copied what it needs.
func (c *PacketConn) next(block bool) (*Packet, error) {
	c.mu.Lock()
	for {
		if c.closed {
			c.mu.Unlock()
			return nil, c.opError("read", net.ErrClosed)
		}
		if c.head < len(c.queue) {
			p := c.queue[c.head]
			c.queue[c.head] = nil
			c.head++
			if c.head == len(c.queue) {
				// Empty: start again at the front of the same array, so
				// that a busy endpoint's queue allocates nothing.
				c.queue, c.head = c.queue[:0], 0
			}
			c.queuedBytes -= p.Size()
			c.mu.Unlock()
			return p, nil
		}
		if !block {
			c.mu.Unlock()
			return nil, nil
		}
		if wait.Passed(c.deadline.Read) {
			c.mu.Unlock()
			return nil, c.opError("read", errTimeout)
		}
		changed, deadline := c.changed.Wait(), c.deadline.Read
		c.mu.Unlock()
		wait.Until(changed, deadline)
		c.mu.Lock()
	}
}

// WriteTo implements net.PacketConn. addr must be a *net.UDPAddr (or an
// address whose String parses as ip:port).
func (c *PacketConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	to, err := udpAddr(addr)
	if err != nil {
		return 0, c.opError("write", err)
	}
	if err := c.write(b, to, ECN(c.ecn.Load())); err != nil {
		return 0, err
	}
	return len(b), nil
}

// write sends one datagram to to, carrying the ECN codepoint ecn. It
// carries DF when the endpoint's owner asked for it.
func (c *PacketConn) write(b []byte, to *net.UDPAddr, ecn ECN) error {
	if len(b) > MaxDatagram {
		return c.opError("write", fmt.Errorf("message too long: %d bytes", len(b)))
	}
	c.mu.Lock()
	closed, deadline, df := c.closed, c.deadline.Write, c.df
	c.mu.Unlock()
	if closed {
		return c.opError("write", net.ErrClosed)
	}
	if wait.Passed(deadline) {
		return c.opError("write", errTimeout)
	}
	p := newPacket(b, c.addr, to)
	p.DF = df
	p.ECN = ecn
	if err := c.net.send(c.local.Addr(), to.AddrPort().Addr(), p); err != nil {
		return c.opError("write", err)
	}
	return nil
}

func udpAddr(addr net.Addr) (*net.UDPAddr, error) {
	if u, ok := addr.(*net.UDPAddr); ok {
		return u, nil
	}
	if addr == nil {
		return nil, errors.New("missing address")
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return nil, fmt.Errorf("address %q is not ip:port", addr.String())
	}
	return net.UDPAddrFromAddrPort(ap), nil
}

// enqueue is called by the network when a packet for c leaves its link.
func (c *PacketConn) enqueue(p *Packet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		// Closed after the network found it: as good as no endpoint.
		c.net.countNoRoute(p)
		return
	}
	limit := c.recvLimit
	if limit == 0 {
		limit = recvBufferBytes
	}
	if c.queuedBytes+p.Size() > limit {
		c.dropped.add(p)
		return
	}
	if c.head > 0 && len(c.queue) == cap(c.queue) {
		// Full with read packets at the front: move the unread down
		// rather than grow.
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue, c.head = c.queue[:n], 0
	}
	c.queue = append(c.queue, p)
	c.queuedBytes += p.Size()
	if p.ECN == CE {
		c.markedArrivals.Add(1)
	}
	c.changed.Broadcast()
}

// SetReadBuffer sets how many bytes may wait unread before arriving packets
// are dropped, like a socket's SO_RCVBUF (quic-go asks for about 7 MB).
func (c *PacketConn) SetReadBuffer(bytes int) error {
	if bytes <= 0 {
		return fmt.Errorf("netem: read buffer of %d bytes", bytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recvLimit = bytes
	return nil
}

// SetWriteBuffer is accepted and ignored: writes never block or queue in
// the endpoint, the link's queue is where packets wait.
func (c *PacketConn) SetWriteBuffer(int) error { return nil }

// Dropped counts packets lost because c's receive buffer was full.
func (c *PacketConn) Dropped() Counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// Close implements net.PacketConn: blocked reads return net.ErrClosed and
// the address becomes free.
func (c *PacketConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.opError("close", net.ErrClosed)
	}
	c.closed = true
	unread := c.queue[c.head:]
	c.queue, c.head, c.queuedBytes = nil, 0, 0
	c.changed.Broadcast()
	c.mu.Unlock()
	c.opts.close()
	c.net.unbind(c)
	for _, p := range unread {
		c.net.countNoRoute(p)
	}
	return nil
}

// LocalAddr implements net.PacketConn; it is a *net.UDPAddr.
func (c *PacketConn) LocalAddr() net.Addr { return c.addr }

// SetDeadline implements net.PacketConn; it wakes blocked readers.
func (c *PacketConn) SetDeadline(t time.Time) error { return c.deadline.SetDeadline(t) }

// SetReadDeadline implements net.PacketConn; it wakes blocked readers.
func (c *PacketConn) SetReadDeadline(t time.Time) error { return c.deadline.SetReadDeadline(t) }

// SetWriteDeadline implements net.PacketConn.
func (c *PacketConn) SetWriteDeadline(t time.Time) error { return c.deadline.SetWriteDeadline(t) }

func (c *PacketConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "udp", Addr: c.addr, Err: err}
}
