package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// ErrRefused is wrapped by the error of a bind the relay refused: the session
// was never registered with it.
var ErrRefused = errors.New("relay: session refused")

// ErrNotQUIC is wrapped by the error of a write the relay could not carry: an
// empty datagram, or one starting with 0x00, which the relay would take for a
// control message.
var ErrNotQUIC = errors.New("relay: not a QUIC datagram")

// Binder binds peers to a relay. Its zero value uses the defaults; the
// package's Bind and DialWebSocket use a zero Binder.
type Binder struct {
	// Retransmit is how long Bind waits for the relay's reply before sending
	// the bind message again: the message travels as an unreliable datagram
	// and may be lost. Default 200 ms, a LAN-scale wait that a lossy path
	// repeats a few times within a second. DialWebSocket does not
	// retransmit: its stream is reliable.
	Retransmit time.Duration

	// Refresh is how often a bound Conn sends its bind message again, so that
	// a NAT mapping on the way does not expire and the relay's binding
	// (Config.BindingTimeout) stays alive through quiet periods. Default
	// 15 s, inside the 30 s that the shortest-lived NAT UDP mappings last;
	// negative disables it.
	Refresh time.Duration

	// ReadBuffer is how many bytes a WebSocket Conn holds for the reader
	// before it drops arriving datagrams, like a socket's receive buffer.
	// Default 4 MiB; SetReadBuffer changes it.
	ReadBuffer int
}

func (b Binder) withDefaults() Binder {
	if b.Retransmit <= 0 {
		b.Retransmit = 200 * time.Millisecond
	}
	if b.Refresh == 0 {
		b.Refresh = 15 * time.Second
	}
	if b.ReadBuffer <= 0 {
		b.ReadBuffer = 4 << 20
	}
	return b
}

// Bind binds conn to role in session at the relay at relayAddr, with the
// defaults of a zero Binder.
func Bind(ctx context.Context, conn net.PacketConn, relayAddr net.Addr, session SessionID, role Role) (*Conn, error) {
	return Binder{}.Bind(ctx, conn, relayAddr, session, role)
}

// Bind sends the bind message to the relay at relayAddr until the relay
// answers (every Retransmit) or ctx is done. It returns an error wrapping
// ErrRefused if the relay does not know the session. On success the returned
// Conn owns conn: closing it closes conn. On failure conn stays the caller's.
func (b Binder) Bind(ctx context.Context, conn net.PacketConn, relayAddr net.Addr, session SessionID, role Role) (*Conn, error) {
	if !role.valid() {
		return nil, fmt.Errorf("relay: bind: invalid %v", role)
	}
	b = b.withDefaults()
	c := newConn(&udpLink{pc: conn, relay: relayAddr}, relayAddr, session, role)
	if err := c.bind(ctx, b.Retransmit); err != nil {
		return nil, err
	}
	c.start(b.Refresh)
	return c, nil
}

// link is how a Conn reaches the relay: a UDP socket or a WebSocket.
type link interface {
	// recv reads the next datagram from the relay, honouring the read
	// deadline.
	recv(b []byte) (int, error)
	// send sends one datagram to the relay.
	send(b []byte) error
	LocalAddr() net.Addr
	SetReadDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
	SetReadBuffer(bytes int) error
	Close() error
}

// Conn is a peer's end of a relayed path: a complete net.PacketConn for
// quic-go whose every datagram goes to the relay, whatever address it is
// written to, and whose every datagram read comes from PeerAddr, so quic-go
// sees one consistent remote. The relay's control replies are consumed and
// never reach the reader. A goroutine refreshes the binding until Close.
// Over UDP, deadlines are the socket's own; over a WebSocket, Conn keeps
// them, since the WebSocket cannot interrupt a read without closing.
type Conn struct {
	link    link
	peer    net.Addr
	session SessionID
	role    Role
	bindMsg []byte

	mu      sync.Mutex
	pending [][]byte // datagrams that overtook the relay's bound reply
	err     error    // set when the relay refuses a refresh: the path is dead

	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

var _ net.PacketConn = (*Conn)(nil)

func newConn(l link, peer net.Addr, session SessionID, role Role) *Conn {
	return &Conn{
		link:    l,
		peer:    peer,
		session: session,
		role:    role,
		bindMsg: control{typ: msgBind, session: session, role: role}.appendTo(nil),
		stop:    make(chan struct{}),
	}
}

// longAgo is a deadline that has passed, to wake a blocked read.
var longAgo = time.Unix(1, 0)

// bind runs the bind exchange on a Conn nobody else reads yet, sending the
// bind message again every retransmit (never if it is 0).
func (c *Conn) bind(ctx context.Context, retransmit time.Duration) (err error) {
	// The read deadline is how ctx interrupts a blocked recv; it is cleared
	// when bind returns, after the AfterFunc has surely finished.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.link.SetReadDeadline(longAgo)
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
		c.link.SetReadDeadline(time.Time{})
		if err != nil {
			err = fmt.Errorf("relay: bind %v to session %x: %w", c.role, c.session[:4], err)
		}
	}()

	buf := make([]byte, maxDatagram+1)
	for {
		if err := c.link.send(c.bindMsg); err != nil {
			return err
		}
		if retransmit > 0 {
			c.link.SetReadDeadline(time.Now().Add(retransmit))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for {
			n, err := c.link.recv(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				break // retransmit
			}
			if err != nil {
				return err
			}
			if !isControl(buf[:n]) {
				if n > 0 {
					c.pending = append(c.pending, slices.Clone(buf[:n]))
				}
				continue
			}
			m, perr := parseControl(buf[:n])
			if perr != nil || m.session != c.session || m.role != c.role {
				continue
			}
			switch m.typ {
			case msgBound:
				return nil
			case msgRefused:
				return ErrRefused
			}
		}
	}
}

// start begins the refreshes of a bound Conn.
func (c *Conn) start(every time.Duration) {
	if every < 0 {
		return
	}
	c.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				// A lost refresh is repaired by the next one; the relay
				// waits four of them before it forgets the binding.
				if err := c.link.send(c.bindMsg); errors.Is(err, net.ErrClosed) {
					return
				}
			}
		}
	})
}

// PeerAddr is the address every datagram read from c comes from: the
// relay's address for a UDP Conn, the WebSocket URL for a tunnel.
func (c *Conn) PeerAddr() net.Addr { return c.peer }

// ReadFrom implements net.PacketConn. It returns the peer's next datagram,
// from PeerAddr; a datagram longer than b is truncated, as with UDP.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		if len(c.pending) > 0 {
			d := c.pending[0]
			c.pending = c.pending[1:]
			c.mu.Unlock()
			return copy(b, d), c.peer, nil
		}
		err := c.err
		c.mu.Unlock()
		if err != nil {
			return 0, nil, err
		}
		n, err := c.link.recv(b)
		if err != nil {
			return 0, nil, err
		}
		if n == 0 {
			continue
		}
		if isControl(b[:n]) {
			c.handleReply(b[:n])
			continue
		}
		return n, c.peer, nil
	}
}

// handleReply takes note of a reply to a refresh.
func (c *Conn) handleReply(b []byte) {
	m, err := parseControl(b)
	if err != nil || m.session != c.session || m.role != c.role || m.typ != msgRefused {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		// The relay lost the session (it restarted): nothing will be
		// forwarded any more, so the reader learns it now rather than by
		// a QUIC idle timeout.
		c.err = fmt.Errorf("relay: refresh of %v in session %x: %w", c.role, c.session[:4], ErrRefused)
	}
}

// WriteTo implements net.PacketConn: b goes to the relay, and on to the
// peer, whatever addr is.
func (c *Conn) WriteTo(b []byte, _ net.Addr) (int, error) {
	if len(b) == 0 || isControl(b) {
		return 0, &net.OpError{Op: "write", Net: "relay", Addr: c.peer, Err: ErrNotQUIC}
	}
	if len(b) > maxDatagram {
		return 0, &net.OpError{Op: "write", Net: "relay", Addr: c.peer, Err: fmt.Errorf("message too long: %d bytes", len(b))}
	}
	if err := c.link.send(b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close implements net.PacketConn: it stops the refreshes and closes the
// underlying socket or WebSocket (with a close handshake), and waits for
// the goroutines of c.
func (c *Conn) Close() error {
	err := error(&net.OpError{Op: "close", Net: "relay", Addr: c.peer, Err: net.ErrClosed})
	c.closeOnce.Do(func() {
		close(c.stop)
		err = c.link.Close()
		c.wg.Wait()
	})
	return err
}

// LocalAddr implements net.PacketConn.
func (c *Conn) LocalAddr() net.Addr { return c.link.LocalAddr() }

// SetDeadline implements net.PacketConn.
func (c *Conn) SetDeadline(t time.Time) error {
	return errors.Join(c.link.SetReadDeadline(t), c.link.SetWriteDeadline(t))
}

// SetReadDeadline implements net.PacketConn; it wakes a blocked ReadFrom
// (quic-go relies on it to stop its read loop).
func (c *Conn) SetReadDeadline(t time.Time) error { return c.link.SetReadDeadline(t) }

// SetWriteDeadline implements net.PacketConn.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.link.SetWriteDeadline(t) }

// SetReadBuffer sizes the receive buffer: the UDP socket's if it has one
// (quic-go asks for about 7 MB), the WebSocket Conn's own queue otherwise.
func (c *Conn) SetReadBuffer(bytes int) error { return c.link.SetReadBuffer(bytes) }

// SetWriteBuffer is accepted and ignored: quic-go checks for it, and a
// relayed path has no buffer of its own to size.
func (c *Conn) SetWriteBuffer(int) error { return nil }

// udpLink reaches the relay over a datagram socket.
type udpLink struct {
	pc    net.PacketConn
	relay net.Addr
}

func (l *udpLink) recv(b []byte) (int, error) {
	for {
		n, from, err := l.pc.ReadFrom(b)
		if err != nil {
			return 0, err
		}
		// Only the relay speaks on this socket; anything else is a stray
		// or a spoof, and must not reach quic-go as the peer's.
		if sameAddr(from, l.relay) {
			return n, nil
		}
	}
}

func (l *udpLink) send(b []byte) error {
	_, err := l.pc.WriteTo(b, l.relay)
	return err
}

func (l *udpLink) LocalAddr() net.Addr                { return l.pc.LocalAddr() }
func (l *udpLink) SetReadDeadline(t time.Time) error  { return l.pc.SetReadDeadline(t) }
func (l *udpLink) SetWriteDeadline(t time.Time) error { return l.pc.SetWriteDeadline(t) }
func (l *udpLink) Close() error                       { return l.pc.Close() }

func (l *udpLink) SetReadBuffer(bytes int) error {
	if s, ok := l.pc.(interface{ SetReadBuffer(int) error }); ok {
		return s.SetReadBuffer(bytes)
	}
	return nil
}

// sameAddr compares addresses by value: a source address read from a socket
// is a new value each time.
func sameAddr(a, b net.Addr) bool {
	if a == nil || b == nil {
		return false
	}
	ua, ok1 := a.(*net.UDPAddr)
	ub, ok2 := b.(*net.UDPAddr)
	if ok1 && ok2 {
		return ua.IP.Equal(ub.IP) && ua.Port == ub.Port
	}
	return a.String() == b.String()
}
