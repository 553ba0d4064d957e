package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/netem/internal/wait"

	"github.com/coder/websocket"
)

// wsReadLimit admits the largest datagram as one message; coder/websocket's
// default of 32 KiB would close the connection on a larger one.
const wsReadLimit = 64 << 10

// Handler returns the relay's WebSocket endpoint, to serve under any
// http.Server at any path. Each binary message is one datagram, both ways.
// A peer binds with its first message, and must be bound within
// Config.HandshakeTimeout; a refused peer is left to close the connection
// itself, which DialWebSocket does.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveWebSocket) }

// wsPeer is one WebSocket connection to the relay. Datagrams to it wait in a
// bounded queue for its writer goroutine, so that forwarding never blocks on
// a stream's flow control.
type wsPeer struct {
	s *Server
	c *websocket.Conn

	mu      sync.Mutex
	queue   [][]byte
	queued  int
	broken  bool          // the writer stopped: nothing more can be sent
	wake    chan struct{} // capacity 1: the writer has work
	done    chan struct{} // the handler stopped reading: the writer exits
	writer  sync.WaitGroup
	closing sync.Once
}

func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "relay closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered the request
	}
	c.SetReadLimit(wsReadLimit)
	p := &wsPeer{s: s, c: c, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		p.shutdown()
		return
	}
	s.wsPeers[p] = struct{}{}
	s.mu.Unlock()
	p.writer.Go(p.writeLoop)

	p.readLoop()

	s.mu.Lock()
	delete(s.wsPeers, p)
	if b := s.bindings[endpoint{ws: p}.key()]; b != nil {
		s.unbindLocked(b)
	}
	s.mu.Unlock()
	close(p.done)
	p.writer.Wait()
	// Reading ended on an error or a close frame, after which
	// coder/websocket has closed the connection; this only makes sure.
	p.c.CloseNow()
}

// readLoop hands every message to the relay until the connection ends.
func (p *wsPeer) readLoop() {
	deadline := time.Now().Add(p.s.cfg.HandshakeTimeout)
	for {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if !p.s.isBound(p) {
			// Expiry closes the connection (coder/websocket closes on any
			// read error), which is the point: unbound peers may not idle.
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
		typ, data, err := p.c.Read(ctx)
		cancel()
		if err != nil {
			return
		}
		if typ != websocket.MessageBinary {
			p.c.Close(websocket.StatusUnsupportedData, "binary messages only")
			return
		}
		p.s.handle(endpoint{ws: p}, data)
	}
}

// isBound reports whether p is bound to a session.
func (s *Server) isBound(p *wsPeer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bindings[endpoint{ws: p}.key()] != nil
}

// enqueue queues a copy of b for the writer, or drops it if the queue is
// full, as a UDP socket drops what its send buffer cannot hold.
func (p *wsPeer) enqueue(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken {
		return net.ErrClosed
	}
	if p.queued+len(b) > p.s.cfg.QueueBytes {
		return errors.New("relay: websocket queue full")
	}
	p.queue = append(p.queue, append([]byte(nil), b...))
	p.queued += len(b)
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

func (p *wsPeer) writeLoop() {
	defer func() {
		p.mu.Lock()
		p.broken, p.queue, p.queued = true, nil, 0
		p.mu.Unlock()
	}()
	for {
		select {
		case <-p.done:
			return
		case <-p.wake:
		}
		for {
			p.mu.Lock()
			if len(p.queue) == 0 {
				p.mu.Unlock()
				break
			}
			b := p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
			p.queued -= len(b)
			p.mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), p.s.cfg.WriteTimeout)
			err := p.c.Write(ctx, websocket.MessageBinary, b)
			cancel()
			if err != nil {
				// coder/websocket has closed the connection, so the
				// handler's read ends too.
				p.s.drop(DropSend, nil)
				return
			}
		}
	}
}

// shutdown closes the connection with a close handshake, for Server.Close.
func (p *wsPeer) shutdown() {
	p.closing.Do(func() { p.c.Close(websocket.StatusGoingAway, "relay closing") })
}

// DialWebSocket binds to role in session at the relay's WebSocket endpoint
// url, with the defaults of a zero Binder.
func DialWebSocket(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), url string, session SessionID, role Role) (*Conn, error) {
	return Binder{}.DialWebSocket(ctx, dial, url, session, role)
}

// DialWebSocket opens a WebSocket to the relay's endpoint at url (ws:// or
// wss://) over a stream connection made by dial (a netem StreamListener's
// Dial in virtual time, or a real TCP dial), then binds to role in session
// as Bind does, the bind message being the first binary message; it is
// sent once, since the stream is reliable. The returned Conn carries each
// datagram as one binary message; closing it closes the WebSocket with a
// close handshake. ctx bounds the dial and the bind only.
func (b Binder) DialWebSocket(ctx context.Context, dial func(ctx context.Context) (net.Conn, error), url string, session SessionID, role Role) (*Conn, error) {
	if !role.valid() {
		return nil, fmt.Errorf("relay: dial websocket: invalid %v", role)
	}
	b = b.withDefaults()
	var (
		mu    sync.Mutex
		local net.Addr
	)
	tr := &http.Transport{
		// net/http dials from a goroutine of its own, hence the lock.
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := dial(ctx)
			if err == nil {
				mu.Lock()
				local = c.LocalAddr()
				mu.Unlock()
			}
			return c, err
		},
	}
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	// The upgraded connection is ours now, not the transport's: nothing
	// may stay behind in its pool.
	tr.CloseIdleConnections()
	if err != nil {
		return nil, fmt.Errorf("relay: dial websocket %s: %w", url, err)
	}
	ws.SetReadLimit(wsReadLimit)
	mu.Lock()
	laddr := local
	mu.Unlock()
	l := newWSLink(ws, laddr, wsAddr(url), b.ReadBuffer)
	c := newConn(l, l.remote, session, role)
	if err := c.bind(ctx, 0); err != nil {
		l.Close()
		return nil, err
	}
	c.start(b.Refresh)
	return c, nil
}

// wsAddr is a WebSocket tunnel's peer address: the relay endpoint's URL.
type wsAddr string

// Network implements net.Addr.
func (wsAddr) Network() string { return "websocket" }

// String implements net.Addr.
func (a wsAddr) String() string { return string(a) }

// wsLink reaches the relay through a WebSocket. coder/websocket closes the
// connection when a read's context ends, so read deadlines cannot be passed
// down: a goroutine reads every message into a bounded queue, and recv waits
// on the queue with the deadline.
type wsLink struct {
	c             *websocket.Conn
	local, remote net.Addr

	mu            sync.Mutex
	changed       wait.Signal
	deadline      wait.Deadlines // guarded by mu, broadcast on changed
	queue         [][]byte
	queued, limit int
	readErr       error // why the reading goroutine stopped
	closed        bool
	done          chan struct{} // the reading goroutine ended
}

func newWSLink(c *websocket.Conn, local, remote net.Addr, limit int) *wsLink {
	if local == nil {
		local = remote
	}
	l := &wsLink{c: c, local: local, remote: remote, limit: limit, done: make(chan struct{})}
	l.deadline = wait.Deadlines{Mu: &l.mu, Changed: &l.changed}
	go l.readLoop()
	return l
}

func (l *wsLink) readLoop() {
	defer close(l.done)
	for {
		typ, data, err := l.c.Read(context.Background())
		l.mu.Lock()
		switch {
		case err != nil:
			l.readErr = err
		case typ != websocket.MessageBinary || l.queued+len(data) > l.limit:
			// Not a datagram, or no room for it: dropped, as UDP would.
		default:
			l.queue = append(l.queue, data)
			l.queued += len(data)
		}
		l.changed.Broadcast()
		l.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (l *wsLink) recv(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		switch {
		case l.closed:
			return 0, l.opError("read", net.ErrClosed)
		case len(l.queue) > 0:
			d := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			l.queued -= len(d)
			return copy(b, d), nil
		case l.readErr != nil:
			// The relay closed the tunnel, or it broke: either way it is
			// closed for good, which is what readers test for.
			return 0, l.opError("read", errors.Join(net.ErrClosed, l.readErr))
		case wait.Passed(l.deadline.Read):
			return 0, l.opError("read", os.ErrDeadlineExceeded)
		}
		changed, deadline := l.changed.Wait(), l.deadline.Read
		l.mu.Unlock()
		wait.Until(changed, deadline)
		l.mu.Lock()
	}
}

// send writes one message. A write deadline that passes while the write is
// blocked closes the WebSocket (coder/websocket cannot abandon a message
// half written), unlike a UDP socket's.
func (l *wsLink) send(b []byte) error {
	l.mu.Lock()
	closed, deadline := l.closed, l.deadline.Write
	l.mu.Unlock()
	if closed {
		return l.opError("write", net.ErrClosed)
	}
	if wait.Passed(deadline) {
		return l.opError("write", os.ErrDeadlineExceeded)
	}
	ctx := context.Background()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if err := l.c.Write(ctx, websocket.MessageBinary, b); err != nil {
		return l.opError("write", err)
	}
	return nil
}

func (l *wsLink) LocalAddr() net.Addr { return l.local }

func (l *wsLink) SetReadDeadline(t time.Time) error { return l.deadline.SetReadDeadline(t) }

func (l *wsLink) SetWriteDeadline(t time.Time) error { return l.deadline.SetWriteDeadline(t) }

func (l *wsLink) SetReadBuffer(bytes int) error {
	if bytes <= 0 {
		return fmt.Errorf("relay: read buffer of %d bytes", bytes)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit = bytes
	return nil
}

// Close closes the WebSocket with a close handshake and waits for the
// reading goroutine, which answers the relay's close frame.
func (l *wsLink) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return l.opError("close", net.ErrClosed)
	}
	l.closed = true
	l.queue, l.queued = nil, 0
	l.changed.Broadcast()
	l.mu.Unlock()
	err := l.c.Close(websocket.StatusNormalClosure, "")
	<-l.done
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return l.opError("close", err)
	}
	return nil
}

func (l *wsLink) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "websocket", Source: l.local, Addr: l.remote, Err: err}
}
