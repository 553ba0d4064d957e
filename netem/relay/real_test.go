package relay

import (
	"bytes"
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/stretchr/testify/require"
)

// The same relay in real time over loopback: UDP sockets and a real TCP
// WebSocket, with a QUIC session across them.
func TestRealSockets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := New(Config{})
	port, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.ServeUDP(port) }()
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	defer func() {
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-served, ErrServerClosed)
	}()

	id := sessionID(20)
	s.Register(id)
	sock, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	agent, err := Bind(ctx, sock, port.LocalAddr(), id, Agent)
	require.NoError(t, err)
	defer agent.Close()
	var d net.Dialer
	dial := func(ctx context.Context) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", web.Listener.Addr().String())
	}
	viewer, err := DialWebSocket(ctx, dial, "ws"+strings.TrimPrefix(web.URL, "http")+"/relay", id, Viewer)
	require.NoError(t, err)
	defer viewer.Close()

	p, err := quicpair.Open(ctx, agent, viewer, viewer.PeerAddr(), nil)
	require.NoError(t, err)
	defer p.Close()
	got, _ := exchange(t, p, bytes.Repeat(marker, 100))
	require.Equal(t, bytes.Repeat(marker, 100), got)
}
