package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// ErrServerClosed is returned by ServeUDP after Close.
var ErrServerClosed = errors.New("relay: server closed")

// maxDatagram is the largest datagram the relay carries, as for UDP over
// IPv4; anything longer is truncated by UDP sockets and rejected by the
// WebSocket read limit.
const maxDatagram = 65507

// Config configures a Server. Its zero value is a working relay.
type Config struct {
	// Observe, if not nil, is called with every datagram the relay
	// forwards, before it is sent on, and the role that sent it. It runs on
	// the goroutine serving the sender's port (several may call it at once),
	// and data is valid only during the call. It exists to show what a relay
	// operator can see: QUIC ciphertext.
	Observe func(from Role, data []byte)

	// BindingTimeout is how long a bound address stays bound without a
	// datagram from it; peers refresh their binding well within it (every
	// 15 s by default), as they must to keep a NAT mapping alive anyway, and
	// an address that went quiet is never forwarded to. Default 60 s.
	BindingTimeout time.Duration

	// HandshakeTimeout is how long a WebSocket peer has, once the upgrade
	// is done, to send its bind message before the relay closes the
	// connection, so that idle connections cannot pile up. Default 10 s.
	HandshakeTimeout time.Duration

	// WriteTimeout bounds one datagram's write to a WebSocket peer. A peer
	// that takes nothing for this long is stuck; its connection is closed.
	// Default 5 s.
	WriteTimeout time.Duration

	// QueueBytes is how many bytes may wait to be written to one WebSocket
	// peer, as a UDP socket's send buffer; beyond it datagrams are dropped
	// (Stats.DroppedSend), so a slow stream never stalls the other peer's
	// port. Default 1 MiB.
	QueueBytes int

	// Log, if not nil, gets a warning when the relay drops datagrams, at
	// most one every LogEvery (default 10 s): the drops by reason since
	// the last line and the last source dropped. An operator sees a flood
	// or a misconfigured peer without a line per datagram.
	Log      *slog.Logger
	LogEvery time.Duration
}

func (c Config) withDefaults() Config {
	if c.BindingTimeout <= 0 {
		c.BindingTimeout = 60 * time.Second
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 1 << 20
	}
	if c.LogEvery <= 0 {
		c.LogEvery = 10 * time.Second
	}
	return c
}

// DropReason says why the relay dropped a datagram (or refused a bind):
// the values of Stats.Drops and of the metrics' reason label.
type DropReason string

// The reasons, in the order Stats.Drops lists them.
const (
	// DropMalformed: a control message that did not parse, or an empty
	// datagram.
	DropMalformed DropReason = "malformed"
	// DropUnbound: a datagram from an address bound to no session.
	DropUnbound DropReason = "unbound"
	// DropNoPeer: the session's other role is not bound (yet, or any more).
	DropNoPeer DropReason = "no-peer"
	// DropSend: the datagram could not be sent on.
	DropSend DropReason = "send"
	// DropRefused: a bind message for a session never registered.
	DropRefused DropReason = "refused"
)

// DropReasons lists every reason.
var DropReasons = []DropReason{DropMalformed, DropUnbound, DropNoPeer, DropSend, DropRefused}

// Flow counts datagrams and their bytes.
type Flow struct {
	Datagrams uint64
	Bytes     uint64
}

func (f *Flow) add(n int) {
	f.Datagrams++
	f.Bytes += uint64(n)
}

// Stats are a relay's counters since New.
type Stats struct {
	// Bound counts bind messages accepted, refreshes included.
	Bound uint64
	// Rebound counts the accepted binds that moved a role to a new address
	// (a NAT rebinding, or a peer switching from UDP to WebSocket).
	Rebound uint64
	// Refused counts bind messages for sessions never registered.
	Refused uint64
	// AgentToViewer and ViewerToAgent count what was forwarded.
	AgentToViewer, ViewerToAgent Flow
	// DroppedUnbound counts datagrams from an address bound to no session.
	DroppedUnbound uint64
	// DroppedNoPeer counts datagrams whose session's other role was not
	// bound (yet, or any more).
	DroppedNoPeer uint64
	// DroppedMalformed counts control messages that did not parse, and
	// empty datagrams.
	DroppedMalformed uint64
	// DroppedSend counts datagrams that could not be sent on: a WebSocket
	// peer's queue was full, or the write failed.
	DroppedSend uint64
}

// Drops returns the drop counters by reason, refused binds included.
func (s Stats) Drops() map[DropReason]uint64 {
	return map[DropReason]uint64{
		DropMalformed: s.DroppedMalformed, DropUnbound: s.DroppedUnbound,
		DropNoPeer: s.DroppedNoPeer, DropSend: s.DroppedSend, DropRefused: s.Refused,
	}
}

// count adds one drop of reason to the counters.
func (s *Stats) count(r DropReason) {
	switch r {
	case DropMalformed:
		s.DroppedMalformed++
	case DropUnbound:
		s.DroppedUnbound++
	case DropNoPeer:
		s.DroppedNoPeer++
	case DropSend:
		s.DroppedSend++
	case DropRefused:
		s.Refused++
	}
}

// Server is a relay node. It serves any number of UDP ports and WebSocket
// endpoints at once; a session's peers may be bound on different ones.
type Server struct {
	cfg Config

	mu       sync.Mutex
	closed   bool
	sessions map[SessionID]*session
	bindings map[endpointKey]*binding // every bound address, by address
	ports    map[net.PacketConn]struct{}
	wsPeers  map[*wsPeer]struct{}
	stats    Stats
	wg       sync.WaitGroup // ServeUDP calls, WebSocket handlers

	// The drop log: counts since the last line, when it was written.
	unlogged map[DropReason]uint64
	loggedAt time.Time
}

// session is a registered session and where its two roles are bound.
type session struct {
	id    SessionID
	peers [2]*binding // by Role-1
}

// binding is one role's return address.
type binding struct {
	sess     *session
	role     Role
	ep       endpoint
	lastSeen time.Time
}

// endpoint is an address the relay can send to: a UDP source address on one
// of its ports, or a WebSocket connection.
type endpoint struct {
	port net.PacketConn
	addr net.Addr
	ws   *wsPeer
}

// endpointKey identifies an endpoint in a map. An address is keyed by value,
// since every datagram read comes with a new net.Addr: by its AddrPort if it
// is a UDP address (no allocation per datagram), by its string otherwise.
type endpointKey struct {
	port     net.PacketConn
	addrPort netip.AddrPort
	addr     string
	ws       *wsPeer
}

func (e endpoint) key() endpointKey {
	k := endpointKey{port: e.port, ws: e.ws}
	if u, ok := e.addr.(*net.UDPAddr); ok {
		k.addrPort = netip.AddrPortFrom(u.AddrPort().Addr().Unmap(), u.AddrPort().Port())
	} else if e.addr != nil {
		k.addr = e.addr.String()
	}
	return k
}

// send transmits one datagram to e; it never blocks for long (a WebSocket
// peer's datagrams are queued), so one slow peer cannot stall a port.
func (e endpoint) send(b []byte) error {
	if e.ws != nil {
		return e.ws.enqueue(b)
	}
	_, err := e.port.WriteTo(b, e.addr)
	return err
}

// New makes a relay with no sessions and no ports.
func New(cfg Config) *Server {
	return &Server{
		cfg:      cfg.withDefaults(),
		sessions: map[SessionID]*session{},
		bindings: map[endpointKey]*binding{},
		ports:    map[net.PacketConn]struct{}{},
		wsPeers:  map[*wsPeer]struct{}{},
	}
}

// Register admits a session: peers may bind to it from now on. Registering a
// known session again changes nothing.
func (s *Server) Register(id SessionID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[id] == nil {
		s.sessions[id] = &session{id: id}
	}
}

// Stats returns the relay's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// ServeUDP relays on conn until Close, which closes conn: like
// http.Server.Serve with its listener, the relay owns the port from here on.
// It returns ErrServerClosed after Close, or the read error that ended it.
func (s *Server) ServeUDP(conn net.PacketConn) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return ErrServerClosed
	}
	s.ports[conn] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	buf := make([]byte, maxDatagram+1)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.ports, conn)
			// Peers bound on a dead port cannot be reached any more.
			for _, b := range s.bindings {
				if b.ep.port == conn {
					s.unbindLocked(b)
				}
			}
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			conn.Close()
			return fmt.Errorf("relay: serve %v: %w", conn.LocalAddr(), err)
		}
		s.handle(endpoint{port: conn, addr: from}, buf[:n])
	}
}

// handle processes one datagram from src, whichever port it came in on.
func (s *Server) handle(src endpoint, b []byte) {
	if len(b) == 0 {
		s.drop(DropMalformed, src.addr)
		return
	}
	if isControl(b) {
		s.handleControl(src, b)
		return
	}
	now := time.Now()
	s.mu.Lock()
	from := s.bindings[src.key()]
	if from != nil && s.expired(from, now) {
		s.unbindLocked(from)
		from = nil
	}
	if from == nil {
		s.mu.Unlock()
		s.drop(DropUnbound, src.addr)
		return
	}
	from.lastSeen = now
	to := from.sess.peers[from.role.other()-1]
	if to == nil || s.expired(to, now) {
		s.mu.Unlock()
		s.drop(DropNoPeer, src.addr)
		return
	}
	dst := to.ep
	s.mu.Unlock()

	if s.cfg.Observe != nil {
		s.cfg.Observe(from.role, b)
	}
	if err := dst.send(b); err != nil {
		s.drop(DropSend, src.addr)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case from.role == Agent:
		s.stats.AgentToViewer.add(len(b))
	default:
		s.stats.ViewerToAgent.add(len(b))
	}
}

// drop counts a dropped datagram from the address from (nil: unknown) and, at most every LogEvery,
// writes the drops since the last line to the log. Call without s.mu.
func (s *Server) drop(r DropReason, from net.Addr) {
	s.mu.Lock()
	s.stats.count(r)
	if s.cfg.Log == nil {
		s.mu.Unlock()
		return
	}
	if s.unlogged == nil {
		s.unlogged = map[DropReason]uint64{}
	}
	s.unlogged[r]++
	now := time.Now()
	if !s.loggedAt.IsZero() && now.Sub(s.loggedAt) < s.cfg.LogEvery {
		s.mu.Unlock()
		return
	}
	attrs := []any{slog.Duration("since_last", now.Sub(s.loggedAt))}
	if s.loggedAt.IsZero() {
		attrs[0] = slog.String("since_last", "start")
	}
	if from != nil {
		attrs = append(attrs, slog.String("last_source", from.String()))
	}
	for _, reason := range DropReasons {
		if n := s.unlogged[reason]; n > 0 {
			attrs = append(attrs, slog.Uint64(string(reason), n))
		}
	}
	clear(s.unlogged)
	s.loggedAt = now
	s.mu.Unlock()
	// Outside the lock: a slow log must not stall forwarding.
	s.cfg.Log.Warn("relay: dropped datagrams", attrs...)
}

// handleControl answers a bind message. Replies are as long as the request,
// so the relay cannot amplify a spoofed source's traffic.
func (s *Server) handleControl(src endpoint, b []byte) {
	m, err := parseControl(b)
	if err != nil || m.typ != msgBind {
		s.drop(DropMalformed, src.addr)
		return
	}
	reply := control{typ: msgBound, session: m.session, role: m.role}
	s.mu.Lock()
	sess := s.sessions[m.session]
	if sess != nil {
		s.bindLocked(sess, m.role, src)
	}
	s.mu.Unlock()
	if sess == nil {
		s.drop(DropRefused, src.addr)
		reply.typ = msgRefused
	}
	// A lost reply is the peer's to retransmit for; nothing to count here
	// beyond what the peer's retries show.
	_ = src.send(reply.appendTo(nil))
}

// bindLocked records src as role's return address in sess, replacing any
// earlier one. Call with s.mu held.
func (s *Server) bindLocked(sess *session, role Role, src endpoint) {
	key := src.key()
	s.stats.Bound++
	if old := s.bindings[key]; old != nil && (old.sess != sess || old.role != role) {
		// The address moves to another session or role: it may belong to
		// one role of one session only, or forwarding would be ambiguous.
		s.unbindLocked(old)
	}
	cur := sess.peers[role-1]
	if cur != nil && cur.ep.key() == key {
		cur.lastSeen = time.Now()
		return
	}
	if cur != nil {
		s.stats.Rebound++
		s.unbindLocked(cur)
	}
	b := &binding{sess: sess, role: role, ep: src, lastSeen: time.Now()}
	sess.peers[role-1] = b
	s.bindings[key] = b
}

// unbindLocked forgets a binding. Call with s.mu held.
func (s *Server) unbindLocked(b *binding) {
	if s.bindings[b.ep.key()] == b {
		delete(s.bindings, b.ep.key())
	}
	if b.sess.peers[b.role-1] == b {
		b.sess.peers[b.role-1] = nil
	}
}

// expired reports whether b went quiet for longer than BindingTimeout. A
// WebSocket binding lives as long as its connection.
func (s *Server) expired(b *binding, now time.Time) bool {
	return b.ep.ws == nil && now.Sub(b.lastSeen) > s.cfg.BindingTimeout
}

// Close stops the relay: it closes every UDP port given to ServeUDP, closes
// every WebSocket connection with a close handshake, and waits until every
// ServeUDP call and WebSocket handler has returned.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	var errs []error
	for p := range s.ports {
		if err := p.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	peers := make([]*wsPeer, 0, len(s.wsPeers))
	for p := range s.wsPeers {
		peers = append(peers, p)
	}
	s.mu.Unlock()
	// Close handshakes take a round trip each (up to coder/websocket's
	// timeouts for a peer that does not answer): run them at once.
	var closing sync.WaitGroup
	for _, p := range peers {
		closing.Go(p.shutdown)
	}
	closing.Wait()
	s.wg.Wait()
	return errors.Join(errs...)
}
