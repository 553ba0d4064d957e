package connect

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/netem/relay"
)

// direct is one PC's direct attempt: a quic.Transport on a socket that
// registers with the broker, probes the other peer's candidates and answers
// its probes, all through the transport (Transport.WriteTo, and
// Transport.ReadNonQUICPacket for what is not QUIC), so that the holes the
// probes punch are the very NAT mappings the QUIC connection then uses.
//
// Probing is ICE's connectivity check, reduced to what two peers need: each
// probes every candidate of the other every probeEvery until it answers, and
// answers every probe at the address it came from. The viewer also probes
// that address at once (ICE's triggered check, on a peer-reflexive
// candidate): when only the agent's probes get through a router, as against
// a symmetric NAT, the address they came from is the one the viewer can
// reach. A candidate counts as answered only when the answer comes from the
// address probed, since that is the address QUIC will send to. The agent
// probes too, not only answers: a router filtering by address lets the
// viewer's probes in only once the agent has sent to the viewer.
type direct struct {
	s    *settings
	sock net.PacketConn
	tr   *quic.Transport

	ctx    context.Context // ends the goroutines
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced on every change below
	registered bool
	refused    bool
	peer       *peerInfo
	cands      []*candidate
}

// candidate is an address of the other peer to probe.
type candidate struct {
	addr      netip.AddrPort
	lan       bool
	tx        uint64 // the probes' transaction, which answers echo
	added     time.Time
	nextProbe time.Time
	answered  time.Time // zero until it answers
}

// newDirect starts the attempt on sock, which it owns from now on.
func newDirect(s *settings, sock net.PacketConn) *direct {
	d := &direct{s: s, sock: sock, tr: &quic.Transport{Conn: sock}, changed: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	// The first call makes quic-go queue non-QUIC packets; making it
	// before anything is sent means no answer arrives unqueued. With a
	// done context it returns at once.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	d.tr.ReadNonQUICPacket(done, nil)
	d.wg.Go(d.read)
	d.wg.Go(d.register)
	d.wg.Go(d.probe)
	return d
}

// stop ends the goroutines; the transport and socket stay open.
func (d *direct) stop() {
	d.cancel()
	d.wg.Wait()
}

// close ends the attempt: goroutines, transport, socket.
func (d *direct) close() {
	d.stop()
	d.tr.Close()
	d.sock.Close()
}

// broadcastLocked wakes everything waiting for a change. Call with d.mu held.
func (d *direct) broadcastLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

func (d *direct) send(m message, to netip.AddrPort) {
	// A lost datagram is repaired by the next retransmission or probe.
	_, _ = d.tr.WriteTo(m.appendTo(nil), net.UDPAddrFromAddrPort(to))
}

// allowed reports whether the attempt may use a candidate address.
func (d *direct) allowed(a netip.AddrPort) bool {
	if !a.IsValid() || a.Addr().IsUnspecified() {
		return false
	}
	if isLAN(a.Addr()) {
		return d.s.useLAN
	}
	return d.s.usePublic
}

// localCandidates are the addresses the PC offers: its socket's own (a
// private one unless LAN candidates are ignored). The reflexive one is the
// broker's to tell.
func (d *direct) localCandidates() []netip.AddrPort {
	ap, ok := addrPortOf(d.sock.LocalAddr())
	if !ok || !ap.Addr().IsValid() || ap.Addr().IsUnspecified() {
		return nil
	}
	if isLAN(ap.Addr()) && !d.s.useLAN {
		return nil
	}
	return []netip.AddrPort{ap}
}

// register sends the register message every retransmit until the broker
// answers, then every reregister until the other peer's addresses are known.
func (d *direct) register() {
	msg := message{typ: msgRegister, session: d.s.Session, role: d.s.role, local: d.localCandidates()}
	next := time.Now()
	wasRegistered := false
	for {
		d.mu.Lock()
		registered, done, changed := d.registered, d.refused || d.peer != nil, d.changed
		d.mu.Unlock()
		if done {
			return
		}
		now := time.Now()
		if registered && !wasRegistered {
			next = now.Add(d.s.reregister)
			wasRegistered = true
		}
		if !now.Before(next) {
			d.send(msg, d.s.Broker)
			if registered {
				next = now.Add(d.s.reregister)
			} else {
				next = now.Add(d.s.retransmit)
			}
		}
		if !sleep(d.ctx, changed, next) {
			return
		}
	}
}

// sleep waits until deadline, a change, or the end of ctx; it reports
// whether ctx is still alive.
func sleep(ctx context.Context, changed <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-changed:
	case <-t.C:
	}
	return true
}

// probe sends each candidate's probes when they are due: at once when it is
// added, then every probeInterval until it answers or PunchTimeout passes.
func (d *direct) probe() {
	type due struct {
		to netip.AddrPort
		tx uint64
	}
	for {
		now := time.Now()
		var out []due
		next := now.Add(time.Hour) // nothing to probe: wait for a change
		d.mu.Lock()
		for _, c := range d.cands {
			if !c.answered.IsZero() || !now.Before(c.added.Add(d.s.punchT)) {
				continue
			}
			if !now.Before(c.nextProbe) {
				out = append(out, due{c.addr, c.tx})
				c.nextProbe = now.Add(d.s.probeInterval)
			}
			if c.nextProbe.Before(next) {
				next = c.nextProbe
			}
		}
		changed := d.changed
		d.mu.Unlock()
		for _, p := range out { // in candidate order: LAN ones first
			d.send(message{typ: msgProbe, session: d.s.Session, role: d.s.role, tx: p.tx}, p.to)
		}
		if !sleep(d.ctx, changed, next) {
			return
		}
	}
}

// read handles every non-QUIC datagram the transport receives.
func (d *direct) read() {
	buf := make([]byte, 2048)
	for {
		n, from, err := d.tr.ReadNonQUICPacket(d.ctx, buf)
		if err != nil {
			return // the attempt ended, or the transport closed
		}
		src, ok := addrPortOf(from)
		if !ok {
			continue
		}
		m, err := parseMessage(buf[:n])
		if err != nil || m.session != d.s.Session {
			continue
		}
		fromBroker := src == d.s.Broker
		switch {
		case m.typ == msgAnswer && fromBroker && m.role == d.s.role:
			d.answered(m)
		case m.typ == msgRefused && fromBroker && m.role == d.s.role:
			d.mu.Lock()
			d.refused = true
			d.broadcastLocked()
			d.mu.Unlock()
		case m.typ == msgProbe && m.role != d.s.role:
			d.send(message{typ: msgAck, session: d.s.Session, role: d.s.role, tx: m.tx}, src)
			if d.s.role == relay.Viewer && d.allowed(src) {
				d.mu.Lock()
				d.addLocked(src) // a peer-reflexive candidate
				d.mu.Unlock()
			}
		case m.typ == msgAck && m.role != d.s.role:
			d.acked(m.tx, src)
		}
	}
}

// answered takes in the broker's answer.
func (d *direct) answered(m message) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.registered {
		d.registered = true
		d.broadcastLocked()
	}
	if m.other == nil || (d.peer != nil && d.peer.reflexive == m.other.reflexive) {
		return
	}
	d.peer = m.other
	// Candidates in order of preference, which is also the order of each
	// round's probes: the peer's LAN addresses, then public ones.
	for _, lan := range []bool{true, false} {
		for _, a := range append(append([]netip.AddrPort(nil), m.other.local...), m.other.reflexive) {
			if isLAN(a.Addr()) == lan && d.allowed(a) {
				d.addLocked(a)
			}
		}
	}
	d.broadcastLocked()
}

// addLocked adds a candidate unless it is known. Call with d.mu held.
func (d *direct) addLocked(a netip.AddrPort) {
	for _, c := range d.cands {
		if c.addr == a {
			return
		}
	}
	now := time.Now()
	d.cands = append(d.cands, &candidate{
		addr:      a,
		lan:       isLAN(a.Addr()),
		tx:        uint64(len(d.cands)) + 1,
		added:     now,
		nextProbe: now,
	})
	d.broadcastLocked()
}

// acked takes in an answer to a probe.
func (d *direct) acked(tx uint64, src netip.AddrPort) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.cands {
		if c.tx == tx && c.addr == src && c.answered.IsZero() {
			c.answered = time.Now()
			d.broadcastLocked()
		}
	}
}

// waitRegistered waits for the broker's first answer until deadline.
func (d *direct) waitRegistered(ctx context.Context, deadline time.Time) error {
	for {
		d.mu.Lock()
		registered, refused, changed := d.registered, d.refused, d.changed
		d.mu.Unlock()
		switch {
		case refused:
			return fmt.Errorf("%w: session %x", ErrRefused, d.s.Session[:4])
		case registered:
			return nil
		case !time.Now().Before(deadline):
			return fmt.Errorf("%w within %v at %v", ErrRegisterTimeout, d.s.registerT, d.s.Broker)
		}
		if !sleep(ctx, changed, deadline) {
			return ctx.Err()
		}
	}
}

// nominate waits until deadline for the candidate to dial: the first LAN
// candidate to answer, or else the first public one, once no LAN candidate
// still being probed may answer within lanGrace of it.
func (d *direct) nominate(ctx context.Context, deadline time.Time) (*candidate, error) {
	for {
		now := time.Now()
		d.mu.Lock()
		var lan, public *candidate
		lanPending := false
		for _, c := range d.cands {
			switch {
			case !c.answered.IsZero() && c.lan && lan == nil:
				lan = c
			case !c.answered.IsZero() && !c.lan && (public == nil || c.answered.Before(public.answered)):
				public = c
			case c.answered.IsZero() && c.lan && now.Before(c.added.Add(d.s.punchT)):
				lanPending = true
			}
		}
		changed := d.changed
		probed := len(d.cands)
		d.mu.Unlock()
		wake := deadline
		switch {
		case lan != nil:
			return lan, nil
		case public != nil && (!lanPending || !now.Before(public.answered.Add(d.s.lanGrace)) || !now.Before(deadline)):
			return public, nil
		case public != nil:
			wake = public.answered.Add(d.s.lanGrace)
		case !now.Before(deadline):
			if probed == 0 {
				return nil, fmt.Errorf("%w: the peer did not register within %v", ErrPunchTimeout, d.s.punchT)
			}
			return nil, fmt.Errorf("%w: %d probed for %v", ErrPunchTimeout, probed, d.s.punchT)
		}
		if wake.After(deadline) {
			wake = deadline
		}
		if !sleep(ctx, changed, wake) {
			return nil, ctx.Err()
		}
	}
}
