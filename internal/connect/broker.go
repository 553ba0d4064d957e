package connect

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/nuvirahub/latencylab/netem/relay"
)

// BrokerStats are a broker's counters.
type BrokerStats struct {
	// Registers counts register messages from peers of admitted sessions,
	// retransmissions included; Pushes the answers the broker sent to the
	// other peer unasked, when a peer registered or moved.
	Registers, Pushes uint64
	// Refused counts register messages for sessions never admitted.
	Refused uint64
	// Malformed counts datagrams that were not a register message.
	Malformed uint64
}

// Broker is the rendezvous service, a STUN-like server that also pairs the
// two peers of a session: a peer registers with its local candidates and
// learns the address the broker saw it at (its reflexive address), and, once
// both roles registered, the other peer's local and reflexive addresses. The
// broker pushes those to the peer that registered first as soon as the
// second does, so neither has to poll fast.
type Broker struct {
	conn  net.PacketConn
	relay *relay.Server

	mu       sync.Mutex
	sessions map[relay.SessionID]*[2]*peerInfo // by Role-1
	stats    BrokerStats

	done chan struct{}
}

// NewBroker serves the rendezvous protocol on conn until Close, which closes
// conn. rs, if not nil, is the relay that admits the sessions the broker
// admits.
func NewBroker(conn net.PacketConn, rs *relay.Server) *Broker {
	b := &Broker{
		conn:     conn,
		relay:    rs,
		sessions: map[relay.SessionID]*[2]*peerInfo{},
		done:     make(chan struct{}),
	}
	go b.serve()
	return b
}

// Admit lets the peers of a session register, and registers the session
// with the relay: the broker is what admits a session anywhere, as it is
// what hands the session's ID to its peers.
func (b *Broker) Admit(id relay.SessionID) {
	b.mu.Lock()
	if b.sessions[id] == nil {
		b.sessions[id] = &[2]*peerInfo{}
	}
	b.mu.Unlock()
	if b.relay != nil {
		b.relay.Register(id)
	}
}

// Addr is the broker's address.
func (b *Broker) Addr() net.Addr { return b.conn.LocalAddr() }

// Stats returns the broker's counters.
func (b *Broker) Stats() BrokerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Close stops the broker and waits for its goroutine.
func (b *Broker) Close() error {
	err := b.conn.Close()
	<-b.done
	if errors.Is(err, net.ErrClosed) {
		return nil // closed before: Close is idempotent
	}
	return err
}

func (b *Broker) serve() {
	defer close(b.done)
	buf := make([]byte, 2048)
	for {
		n, from, err := b.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		src, ok := addrPortOf(from)
		m, perr := parseMessage(buf[:n])
		if !ok || perr != nil || m.typ != msgRegister {
			b.mu.Lock()
			b.stats.Malformed++
			b.mu.Unlock()
			continue
		}
		b.register(m, src)
	}
}

// register answers a register message from src and, if the peer is new or
// moved, pushes it to the other peer.
func (b *Broker) register(m message, src netip.AddrPort) {
	b.mu.Lock()
	peers := b.sessions[m.session]
	if peers == nil {
		b.stats.Refused++
		b.mu.Unlock()
		b.send(message{typ: msgRefused, session: m.session, role: m.role}, src)
		return
	}
	b.stats.Registers++
	me := &peerInfo{reflexive: src, local: m.local}
	old := peers[m.role-1]
	changed := old == nil || old.reflexive != src || !slices.Equal(old.local, m.local)
	peers[m.role-1] = me
	other := peers[2-m.role]
	if changed && other != nil {
		b.stats.Pushes++
	}
	b.mu.Unlock()

	b.send(message{typ: msgAnswer, session: m.session, role: m.role, reflexive: src, other: other}, src)
	if changed && other != nil {
		b.send(message{typ: msgAnswer, session: m.session, role: otherRole(m.role), reflexive: other.reflexive, other: me}, other.reflexive)
	}
}

func (b *Broker) send(m message, to netip.AddrPort) {
	// A lost answer is repaired by the peer's retransmission; a lost push
	// by its next registration.
	_, _ = b.conn.WriteTo(m.appendTo(nil), net.UDPAddrFromAddrPort(to))
}

// addrPortOf returns a UDP address's AddrPort, unmapped.
func addrPortOf(a net.Addr) (netip.AddrPort, bool) {
	u, ok := a.(*net.UDPAddr)
	if !ok || u == nil {
		return netip.AddrPort{}, false
	}
	ap := u.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// otherRole is the role of the other peer of a session.
func otherRole(r relay.Role) relay.Role {
	if r == relay.Agent {
		return relay.Viewer
	}
	return relay.Agent
}
