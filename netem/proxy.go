package netem

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
)

// DefaultMaxClients is how many client addresses a Proxy maps at once when
// ProxyConfig.MaxClients is zero. Each mapping costs one UDP socket and one
// goroutine, so the bound keeps a stray port scan or a client that changes
// port on every packet from exhausting file descriptors.
const DefaultMaxClients = 1024

// DefaultIdleTimeout is how long a mapping must have been idle before a new
// client may take its place in a full table, when ProxyConfig.IdleTimeout is
// zero. It is Linux conntrack's timeout for unreplied UDP flows.
const DefaultIdleTimeout = 30 * time.Second

const (
	// proxySocketBuffer is the kernel buffer the proxy asks for on each
	// socket (the kernel caps it at net.core.rmem_max/wmem_max). Bursts that
	// a link releases at once (a hold, a stall) must not overflow a default
	// 208 KiB buffer before the peer reads them.
	proxySocketBuffer = 4 << 20
	// maxUDPPayload is the largest datagram the proxy reads: an IPv4 UDP
	// payload of the largest IP packet. Loopback's MTU is 64 KiB, so such
	// datagrams do occur.
	maxUDPPayload = 65507
	// proxyBatch is how many datagrams one recvmmsg or sendmmsg moves. On
	// loopback a system call costs more than copying a 1200-byte payload, so
	// batching is what lets one core forward more than 1 Gbit/s.
	proxyBatch = 32
	// proxyBufCap is the payload capacity pooled packets start with: a
	// full-size Ethernet datagram and some, so that ordinary traffic never
	// allocates.
	proxyBufCap = 2048
)

// ProxyConfig configures a Proxy. Its zero value is not usable: Target is
// required.
type ProxyConfig struct {
	// Listen is the address clients send to. Default "127.0.0.1:0" (an
	// ephemeral port on loopback; Addr tells which).
	Listen string
	// Target is the address every client's datagrams are forwarded to.
	Target string
	// Forward carries client -> target, Reverse target -> client. All
	// clients share them, as they would share an access link. Empty names
	// become "forward" and "reverse" (two links of one seed must not draw
	// the same random numbers); zero epochs become the proxy's start.
	Forward, Reverse LinkConfig
	// MaxClients bounds the client addresses mapped at once. Default
	// DefaultMaxClients.
	MaxClients int
	// IdleTimeout: when the table is full, a new client replaces the least
	// recently active mapping if that one has been idle this long, and is
	// refused (its datagrams dropped, see Refused) otherwise. Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// ECN makes the proxy carry the ECN bits of what it relays: it reads
	// each datagram's with IP_RECVTOS, the links' queues may mark it CE,
	// and it sends it on with them (IP_TOS), so that programs whose
	// sockets set ECT (quic-go does) are ECN-capable across the links.
	// Off, what it relays leaves Not-ECT, as over a path that clears the
	// bits.
	ECN bool
}

// Proxy applies a pair of links to real UDP traffic: programs that are not
// ours send to Addr, and their datagrams reach Target through the forward
// link, the replies come back through the reverse link. Each client source
// address gets its own socket toward the target, so the target sees one
// peer per client and its replies find their way back to the right client.
// Route gives a client a target of its own, so that several pairs of
// programs share the two links.
//
// A Proxy runs one goroutine reading clients, one per client reading the
// target, one writer per direction and the two links' goroutines; Close
// ends and waits for all of them. Reads and writes go in batches
// (recvmmsg/sendmmsg on Linux) and payload buffers are recycled, so the
// proxy itself adds little to the links' timing. Where the kernel offers
// UDP GRO and GSO (Linux), a run of equal datagrams also crosses it as one
// message each way: the proxy splits what it reads back into datagrams for
// the links, and coalesces what the links release to one destination.
type Proxy struct {
	conn        *net.UDPConn
	batch       *ipv4.PacketConn // conn, for batched reads and writes
	connGSO     bool             // conn takes UDP_SEGMENT messages; only the reverse writer uses and clears it
	target      *net.UDPAddr
	ecn         bool // see ProxyConfig.ECN
	fwd, rev    *Link
	fwdW, revW  *proxyWriter
	maxClients  int
	idleTimeout time.Duration
	start       time.Time // origin of the clients' activity stamps

	mu      sync.Mutex
	clients map[netip.AddrPort]*proxyClient // under mu: the client reader and Route write it
	closed  bool
	refused Counter

	closing   atomic.Bool
	readers   sync.WaitGroup // client reader and target readers
	writers   sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// proxyClient is one client's mapping. It is also the net.Addr in the
// packets' From (forward) and To (reverse), so that writing a packet needs
// no table lookup, and a packet still in flight when its mapping is evicted
// is simply written to a closed socket and lost.
type proxyClient struct {
	addr    netip.AddrPort
	udpAddr *net.UDPAddr     // addr, made once for batched writes
	batched bool             // false for IPv4-mapped addresses on an IPv6 socket, which sendmmsg cannot take
	target  *net.UDPAddr     // the proxy's Target, or the one Route gave it
	routed  bool             // made by Route: never evicted
	up      *net.UDPConn     // connected to target
	upBatch *ipv4.PacketConn // up, for batched reads and writes
	// upGSO: up takes UDP_SEGMENT messages. Set before the mapping is
	// published, then used and cleared by the forward writer alone.
	upGSO bool
	// active is the last instant a datagram crossed the mapping, in
	// nanoseconds since the proxy's start (monotonic).
	active atomic.Int64
}

// Network implements net.Addr.
func (c *proxyClient) Network() string { return "udp" }

// String implements net.Addr: the client's address.
func (c *proxyClient) String() string { return c.addr.String() }

// NewProxy listens on cfg.Listen and forwards to cfg.Target through the
// configured links.
func NewProxy(cfg ProxyConfig) (*Proxy, error) {
	if cfg.Target == "" {
		return nil, errors.New("netem: proxy needs a target address")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	target, err := net.ResolveUDPAddr("udp", cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("netem: proxy target: %w", err)
	}
	laddr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("netem: proxy listen address: %w", err)
	}
	start := time.Now()
	if cfg.Forward.Name == "" {
		cfg.Forward.Name = "forward"
	}
	if cfg.Reverse.Name == "" {
		cfg.Reverse.Name = "reverse"
	}
	if cfg.Forward.Epoch.IsZero() {
		cfg.Forward.Epoch = start
	}
	if cfg.Reverse.Epoch.IsZero() {
		cfg.Reverse.Epoch = start
	}
	// Real sockets, real time: keep it with the kernel's high-resolution
	// timer (a runtime timer may fire a millisecond late).
	cfg.Forward.Precise, cfg.Reverse.Precise = true, true
	p := &Proxy{
		target:      target,
		ecn:         cfg.ECN,
		maxClients:  cfg.MaxClients,
		idleTimeout: cfg.IdleTimeout,
		start:       start,
		clients:     map[netip.AddrPort]*proxyClient{},
	}
	p.fwdW = newProxyWriter(p.writeForward)
	p.revW = newProxyWriter(p.writeReverse)
	if p.fwd, err = NewLink(cfg.Forward, p.fwdW.deliver); err != nil {
		return nil, err
	}
	if p.rev, err = NewLink(cfg.Reverse, p.revW.deliver); err != nil {
		p.fwd.Close()
		return nil, err
	}
	if p.conn, err = net.ListenUDP("udp", laddr); err != nil {
		p.fwd.Close()
		p.rev.Close()
		return nil, fmt.Errorf("netem: proxy: %w", err)
	}
	setBuffers(p.conn)
	enableGRO(p.conn)
	if p.ecn {
		enableRecvTOS(p.conn)
	}
	p.connGSO = gsoSupported(p.conn)
	p.batch = ipv4.NewPacketConn(p.conn)
	p.writers.Add(2)
	go p.fwdW.run(&p.writers)
	go p.revW.run(&p.writers)
	p.readers.Add(1)
	go p.readClients()
	return p, nil
}

// setBuffers enlarges a socket's kernel buffers; failure only means the
// system default stays.
func setBuffers(c *net.UDPConn) {
	_ = c.SetReadBuffer(proxySocketBuffer)
	_ = c.SetWriteBuffer(proxySocketBuffer)
}

// Addr is the address clients send to.
func (p *Proxy) Addr() net.Addr { return p.conn.LocalAddr() }

// SetForward replaces the forward link's impairments atomically, while
// traffic flows (see Link.Set).
func (p *Proxy) SetForward(imps []Impairment) error { return p.set(p.fwd, imps) }

// SetReverse replaces the reverse link's impairments atomically.
func (p *Proxy) SetReverse(imps []Impairment) error { return p.set(p.rev, imps) }

func (p *Proxy) set(l *Link, imps []Impairment) error {
	if p.closing.Load() {
		return ErrClosed
	}
	return l.Set(imps)
}

// Stats returns the counters of the forward and the reverse link.
func (p *Proxy) Stats() (fwd, rev Stats) { return p.fwd.Stats(), p.rev.Stats() }

// Clients is how many client addresses are mapped now.
func (p *Proxy) Clients() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

// Refused counts the datagrams dropped because the client table was full
// of active mappings (or, rarely, no socket toward the target could be
// made). They never reach the forward link's counters.
func (p *Proxy) Refused() Counter {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Close stops the proxy and waits for every goroutine it started: it closes
// its sockets and waits for its readers, closes the links (packets still
// inside count as DropClosed), then stops its writers. Packets a link
// delivered in the instant of closing may not reach their socket. Calling
// Close again returns the first call's result.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.closing.Store(true)
		p.mu.Lock()
		p.closed = true
		clients := make([]*proxyClient, 0, len(p.clients))
		for _, c := range p.clients {
			clients = append(clients, c)
		}
		p.mu.Unlock()
		// Closing a socket unblocks its reader; the readers then end and
		// nothing is sent into the links any more.
		p.closeErr = p.conn.Close()
		for _, c := range clients {
			c.up.Close()
		}
		p.readers.Wait()
		// Once the links are closed, nothing is delivered to the writers.
		p.fwd.Close()
		p.rev.Close()
		p.fwdW.close()
		p.revW.close()
		p.writers.Wait()
	})
	return p.closeErr
}

// now is the proxy's activity clock: monotonic nanoseconds since start.
func (p *Proxy) now() int64 { return int64(time.Since(p.start)) }

// readClients reads what clients send and feeds it to the forward link.
func (p *Proxy) readClients() {
	defer p.readers.Done()
	rd := newBatchReader(p.conn, p.batch)
	var (
		last     *proxyClient
		lastAddr netip.AddrPort
	)
	for {
		err := rd.read(func(data []byte, from net.Addr, ecn ECN) {
			ua, ok := from.(*net.UDPAddr)
			if !ok {
				return
			}
			ap := ua.AddrPort()
			c := last
			if c == nil || ap != lastAddr {
				if c = p.client(ap, len(data)); c == nil {
					return
				}
				last, lastAddr = c, ap
			}
			c.active.Store(p.now())
			_ = p.fwd.Send(newProxyPacket(data, c, c.target, ecn)) // fails only once closed
		})
		if err != nil {
			if p.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. an ICMP error reported on the socket
		}
		// A mapping may be evicted between two batches: look it up again.
		last = nil
	}
}

// client returns the mapping for from, making one if needed, or nil if the
// table is full (or the proxy closed). Route writes the table too, so it
// is read under the lock; readClients asks once per batch and sender, not
// per datagram.
func (p *Proxy) client(from netip.AddrPort, n int) *proxyClient {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[from]; ok {
		return c
	}
	if p.closed {
		return nil
	}
	if len(p.clients) >= p.maxClients && !p.evictIdle() {
		p.refused.Packets++
		p.refused.Bytes += uint64(n)
		return nil
	}
	c, err := p.mapClient(from, p.target)
	if err != nil {
		p.refused.Packets++
		p.refused.Bytes += uint64(n)
		return nil
	}
	return c
}

// mapClient makes from's mapping toward target and starts its reader.
// Call with p.mu held.
func (p *Proxy) mapClient(from netip.AddrPort, target *net.UDPAddr) (*proxyClient, error) {
	up, err := net.DialUDP("udp", nil, target)
	if err != nil {
		return nil, err
	}
	setBuffers(up)
	enableGRO(up)
	if p.ecn {
		enableRecvTOS(up)
	}
	c := &proxyClient{
		addr:    from,
		udpAddr: net.UDPAddrFromAddrPort(from),
		batched: !from.Addr().Is4In6(),
		target:  target,
		up:      up,
		upBatch: ipv4.NewPacketConn(up),
		upGSO:   gsoSupported(up),
	}
	c.active.Store(p.now())
	p.clients[from] = c
	p.readers.Add(1)
	go p.readTarget(c)
	return c, nil
}

// Route maps client to a target of its own instead of the proxy's Target,
// before the client sends anything: several pairs of programs then share
// the proxy's two links, each client reaching its own peer, as flows
// share an access link. It returns the address the target sees the
// client's datagrams come from, which is where the target sends for the
// client: a target may so speak first. A routed mapping counts in the
// table's bound but is never evicted; it lasts until Close.
func (p *Proxy) Route(client netip.AddrPort, target *net.UDPAddr) (net.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if _, ok := p.clients[client]; ok {
		return nil, fmt.Errorf("netem: proxy: %v is mapped already", client)
	}
	if len(p.clients) >= p.maxClients && !p.evictIdle() {
		return nil, fmt.Errorf("netem: proxy: no room for %v: %d clients mapped", client, len(p.clients))
	}
	c, err := p.mapClient(client, target)
	if err != nil {
		return nil, fmt.Errorf("netem: proxy: %w", err)
	}
	c.routed = true
	return c.up.LocalAddr(), nil
}

// evictIdle removes the least recently active mapping if it has been idle
// for the idle timeout. Call with p.mu held. A linear scan is fine: it runs
// only for a new client when the table is full.
func (p *Proxy) evictIdle() bool {
	var lru *proxyClient
	for _, c := range p.clients {
		if c.routed {
			continue
		}
		if lru == nil || c.active.Load() < lru.active.Load() {
			lru = c
		}
	}
	if lru == nil || time.Duration(p.now()-lru.active.Load()) < p.idleTimeout {
		return false
	}
	delete(p.clients, lru.addr)
	lru.up.Close() // its reader ends and leaves the wait group
	return true
}

// readTarget reads the target's replies to one client and feeds them to
// the reverse link.
func (p *Proxy) readTarget(c *proxyClient) {
	defer p.readers.Done()
	rd := newBatchReader(c.up, c.upBatch)
	for {
		err := rd.read(func(data []byte, _ net.Addr, ecn ECN) {
			_ = p.rev.Send(newProxyPacket(data, c.target, c, ecn))
		})
		if err != nil {
			if p.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			// A connected UDP socket reports the target's ICMP port
			// unreachable as ECONNREFUSED on the next read: the target
			// may come back, so keep reading.
			continue
		}
		c.active.Store(p.now())
	}
}

// writeForward writes packets leaving the forward link to the target, each
// from its client's own socket, batching the runs of one client. Write
// errors (the target is down, the mapping was evicted) lose the packet, as
// the network would.
func (p *Proxy) writeForward(pks []*Packet, sb *sendBatch) {
	for i := 0; i < len(pks); {
		c, _ := pks[i].From.(*proxyClient)
		j := i + 1
		for j < len(pks) && pks[j].From == pks[i].From {
			j++
		}
		if c != nil {
			writeBatch(c.upBatch, &c.upGSO, pks[i:j], sb, false, c.target.IP.To4() != nil)
		}
		i = j
	}
}

// writeReverse writes packets leaving the reverse link to their clients,
// from the address the clients sent to.
func (p *Proxy) writeReverse(pks []*Packet, sb *sendBatch) {
	start := 0
	flush := func(end int) {
		if end > start {
			writeBatch(p.batch, &p.connGSO, pks[start:end], sb, true, p.v4())
		}
		start = end + 1
	}
	for i, pk := range pks {
		c, _ := pk.To.(*proxyClient)
		if c == nil || !c.batched {
			flush(i)
			if c != nil {
				var oob []byte
				if pk.ECN != NotECT {
					oob = appendTOSCmsg(nil, pk.ECN, p.v4())
				}
				_, _, _ = p.conn.WriteMsgUDPAddrPort(pk.Data, oob, c.addr)
			}
		}
	}
	flush(len(pks))
}

// v4 reports whether the clients' socket is an IPv4 one, which takes the
// ECN bits in IP_TOS rather than IPV6_TCLASS.
func (p *Proxy) v4() bool { return p.conn.LocalAddr().(*net.UDPAddr).IP.To4() != nil }

// sendBatch is a writer's scratch for building sendmmsg batches.
type sendBatch struct {
	msgs  []ipv4.Message
	count []int    // how many packets each message carries
	oob   [][]byte // each message's own control buffer
}

func newSendBatch() *sendBatch {
	sb := &sendBatch{
		msgs:  make([]ipv4.Message, proxyBatch),
		count: make([]int, proxyBatch),
		oob:   make([][]byte, proxyBatch),
	}
	for i := range sb.msgs {
		sb.msgs[i].Buffers = make([][]byte, 0, maxGSOSegments)
		sb.oob[i] = make([]byte, 0, gsoOOBSize+tosOOBSize)
	}
	return sb
}

// writeBatch sends pks through pc, as many messages per system call as sb
// holds; withAddr sets each message's destination from the packet's
// client; a packet carrying ECN bits is sent with them (IP_TOS where v4,
// IPV6_TCLASS otherwise). Where *gso holds, a run that gsoRun accepts goes as one message
// whose payloads the kernel gathers (no copy here) and cuts back into
// datagrams. A message the kernel refuses loses its first datagram, as a
// send error loses a datagram without GSO; the rest of its run is sent
// again. A refusal of the segmentation itself (isGSOError) turns *gso off
// for the socket and sends the same datagrams one per message: the
// fallback loses nothing.
func writeBatch(pc *ipv4.PacketConn, gso *bool, pks []*Packet, sb *sendBatch, withAddr, v4 bool) {
	for len(pks) > 0 {
		n, used := 0, 0
		for n < len(sb.msgs) && used < len(pks) {
			k := 1
			if *gso {
				k = gsoRun(pks[used:])
			}
			m := &sb.msgs[n]
			m.Buffers = m.Buffers[:0]
			for _, pk := range pks[used : used+k] {
				m.Buffers = append(m.Buffers, pk.Data)
			}
			m.OOB = nil
			if k > 1 {
				m.OOB = appendSegmentCmsg(sb.oob[n][:0], uint16(len(pks[used].Data)))
			}
			if e := pks[used].ECN; e != NotECT {
				if m.OOB == nil {
					m.OOB = sb.oob[n][:0]
				}
				m.OOB = appendTOSCmsg(m.OOB, e, v4)
			}
			m.Addr = nil
			if withAddr {
				m.Addr = pks[used].To.(*proxyClient).udpAddr
			}
			sb.count[n] = k
			used += k
			n++
		}
		sent, err := pc.WriteBatch(sb.msgs[:n], 0)
		done := 0
		if err != nil {
			// sendmmsg reports an error only when the first message fails.
			if sb.count[0] > 1 && isGSOError(err) {
				*gso = false
				continue
			}
			sent, done = 0, 1
		}
		for _, k := range sb.count[:sent] {
			done += k
		}
		pks = pks[max(done, 1):]
	}
	for i := range sb.msgs {
		clear(sb.msgs[i].Buffers[:cap(sb.msgs[i].Buffers)])
		sb.msgs[i].Buffers = sb.msgs[i].Buffers[:0]
		sb.msgs[i].Addr, sb.msgs[i].OOB = nil, nil
	}
}

// proxyWriter hands the packets a link delivers to a goroutine that writes
// them in batches. The link calls deliver once per packet, back to back for
// the packets due at one instant, with no sign of where the burst ends; a
// queue in between lets the writer take whatever has accumulated in one
// sendmmsg.
type proxyWriter struct {
	write func([]*Packet, *sendBatch)

	mu      sync.Mutex
	pending []*Packet
	wake    chan struct{}
	done    chan struct{}
}

func newProxyWriter(write func([]*Packet, *sendBatch)) *proxyWriter {
	return &proxyWriter{write: write, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// deliver is the link's deliver function.
func (w *proxyWriter) deliver(p *Packet) {
	w.mu.Lock()
	w.pending = append(w.pending, p)
	first := len(w.pending) == 1
	w.mu.Unlock()
	if first {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *proxyWriter) run(wg *sync.WaitGroup) {
	defer wg.Done()
	sb := newSendBatch()
	var batch []*Packet
	for {
		select {
		case <-w.wake:
		case <-w.done:
			return
		}
		w.mu.Lock()
		batch, w.pending = w.pending, batch[:0]
		w.mu.Unlock()
		w.write(batch, sb)
		for i, pk := range batch {
			recycleProxyPacket(pk)
			batch[i] = nil
		}
	}
}

// close ends the writer; call it once the link feeding it is closed.
func (w *proxyWriter) close() { close(w.done) }

// proxyPackets recycles packets and their payload buffers: a link owns a
// packet from Send until it hands it to the writer, which is its last user,
// so a forwarded datagram costs no allocation in the steady state.
var proxyPackets = sync.Pool{New: func() any { return &Packet{Data: make([]byte, 0, proxyBufCap)} }}

func newProxyPacket(data []byte, from, to net.Addr, ecn ECN) *Packet {
	pk := proxyPackets.Get().(*Packet)
	pk.Data = append(pk.Data[:0], data...)
	pk.From, pk.To, pk.ECN = from, to, ecn
	return pk
}

func recycleProxyPacket(pk *Packet) {
	if cap(pk.Data) > 4*proxyBufCap {
		return // a rare jumbo datagram: let it go rather than pin 64 KiB
	}
	*pk = Packet{Data: pk.Data[:0]}
	proxyPackets.Put(pk)
}

// batchReader reads datagrams in batches into buffers borrowed only while
// data is waiting: a reader parked on an idle socket holds none, so a
// thousand idle mappings do not pin a thousand sets of 64 KiB buffers.
type batchReader struct {
	conn  *net.UDPConn
	batch *ipv4.PacketConn
}

func newBatchReader(conn *net.UDPConn, batch *ipv4.PacketConn) *batchReader {
	return &batchReader{conn: conn, batch: batch}
}

// readBufs is one batch's worth of full-size receive buffers.
type readBufs struct{ msgs []ipv4.Message }

var proxyReadBufs = sync.Pool{New: func() any {
	b := &readBufs{msgs: make([]ipv4.Message, proxyBatch)}
	for i := range b.msgs {
		b.msgs[i].Buffers = [][]byte{make([]byte, proxyReadBuf)}
		if groOOBSize+tosOOBSize > 0 {
			b.msgs[i].OOB = make([]byte, groOOBSize+tosOOBSize)
		}
	}
	return b
}}

// read waits for at least one datagram, reads up to proxyBatch messages and
// calls fn for each datagram in them (data is valid only during the call)
// with the ECN bits it arrived with (Not-ECT unless the socket reports
// them, enableRecvTOS): a message GRO coalesced is split back into the
// datagrams it was made of, which share their IP header's bits (the kernel
// coalesces only datagrams whose headers agree).
func (r *batchReader) read(fn func(data []byte, from net.Addr, ecn ECN)) error {
	if err := waitReadable(r.conn); err != nil {
		return err
	}
	b := proxyReadBufs.Get().(*readBufs)
	defer proxyReadBufs.Put(b)
	n, err := r.batch.ReadBatch(b.msgs, 0)
	if err != nil {
		return err
	}
	for i := range b.msgs[:n] {
		m := &b.msgs[i]
		seg, ecn := groSegmentSize(m.OOB[:m.NN]), cmsgECN(m.OOB[:m.NN])
		rest := m.Buffers[0][:m.N]
		for {
			var dgram []byte
			dgram, rest = nextSegment(rest, seg)
			fn(dgram, m.Addr, ecn)
			if len(rest) == 0 {
				break
			}
		}
		m.Addr = nil
	}
	return nil
}
