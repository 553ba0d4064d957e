package netem

import (
	"context"
	"net"
	"sync"
	"time"
)

// StreamListener is a net.Listener whose connections are StreamPipes, for
// TCP-like paths (a WebSocket tunnel, an HTTP server) on the in-memory
// network. Clients connect with Dial.
type StreamListener struct {
	addr               net.Addr
	toServer, toClient StreamConfig

	accept    chan *StreamConn
	closeOnce sync.Once
	closed    chan struct{}
}

var _ net.Listener = (*StreamListener)(nil)

// NewStreamListener listens at addr; toServer shapes what clients send,
// toClient what the server sends.
func NewStreamListener(addr net.Addr, toServer, toClient StreamConfig) *StreamListener {
	return &StreamListener{
		addr:     addr,
		toServer: toServer,
		toClient: toClient,
		accept:   make(chan *StreamConn),
		closed:   make(chan struct{}),
	}
}

// Dial connects a client at from. Like TCP it takes one round trip (the
// handshake) before it returns; it then waits for Accept.
func (l *StreamListener) Dial(ctx context.Context, from net.Addr) (net.Conn, error) {
	client, server := StreamPipe(l.toServer, l.toClient, from, l.addr)
	handshake := time.NewTimer(l.toServer.Delay + l.toClient.Delay)
	defer handshake.Stop()
	select {
	case <-handshake.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
	select {
	case l.accept <- server:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.closed:
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Accept implements net.Listener.
func (l *StreamListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
	}
}

// Close implements net.Listener: blocked Accept and Dial calls return.
func (l *StreamListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

// Addr implements net.Listener.
func (l *StreamListener) Addr() net.Addr { return l.addr }
