package relay

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/stretchr/testify/require"
)

var (
	viewerIP = netip.MustParseAddr("10.0.0.1")
	agentIP  = netip.MustParseAddr("10.0.0.2")
	relayIP  = netip.MustParseAddr("10.0.0.3")
)

// sessionID returns a distinct session ID per seed byte.
func sessionID(b byte) SessionID {
	var id SessionID
	for i := range id {
		id[i] = b ^ byte(i*37)
	}
	return id
}

func tcpAddr(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }

// quicLike is a datagram with QUIC's fixed bit set, as the relay forwards.
func quicLike(n int, fill byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = fill + byte(i)
	}
	b[0] = 0x40 | fill&0x3f
	return b
}

// testLab is an in-memory network with three hosts and a relay serving UDP
// on 10.0.0.3:3478.
type testLab struct {
	net      *netem.Network
	relay    *Server
	udpAddr  net.Addr
	serveErr chan error
}

// newLab starts a relay with cfg on a network whose links to and from the
// relay host delay every packet by relayDelay. The cleanup closes the relay
// (checking that ServeUDP ended with ErrServerClosed) and the network.
func newLab(t *testing.T, cfg Config, relayDelay time.Duration) (*testLab, func()) {
	t.Helper()
	n := netem.NewNetwork(1)
	for _, peer := range []netip.Addr{agentIP, viewerIP} {
		for _, r := range [][2]netip.Addr{{peer, relayIP}, {relayIP, peer}} {
			_, err := n.SetLink(r[0], r[1], netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: relayDelay}}})
			require.NoError(t, err)
		}
	}
	port := n.MustListen("10.0.0.3:3478")
	lab := &testLab{net: n, relay: New(cfg), udpAddr: port.LocalAddr(), serveErr: make(chan error, 1)}
	go func() { lab.serveErr <- lab.relay.ServeUDP(port) }()
	return lab, func() {
		require.NoError(t, lab.relay.Close())
		require.ErrorIs(t, <-lab.serveErr, ErrServerClosed)
		require.NoError(t, n.Close())
	}
}

// bind binds a fresh endpoint at addr to role in id.
func (l *testLab) bind(t *testing.T, addr string, id SessionID, role Role) *Conn {
	t.Helper()
	c, err := Bind(context.Background(), l.net.MustListen(addr), l.udpAddr, id, role)
	require.NoError(t, err)
	return c
}

// webSocket serves the relay's Handler on a stream listener at
// 10.0.0.3:443 whose directions each delay by oneWay. It returns a dial
// function for a client at from, and a cleanup that closes the HTTP server.
func (l *testLab) webSocket(t *testing.T, oneWay time.Duration) (dial func(from string) func(context.Context) (net.Conn, error), cleanup func()) {
	t.Helper()
	ln := netem.NewStreamListener(tcpAddr("10.0.0.3:443"), netem.StreamConfig{Delay: oneWay}, netem.StreamConfig{Delay: oneWay})
	srv := &http.Server{Handler: l.relay.Handler()}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	dial = func(from string) func(context.Context) (net.Conn, error) {
		return func(ctx context.Context) (net.Conn, error) { return ln.Dial(ctx, tcpAddr(from)) }
	}
	return dial, func() {
		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	}
}

const wsURL = "ws://10.0.0.3/relay"

// readWithin reads one datagram from c, failing the test if none comes
// within d.
func readWithin(t *testing.T, c net.PacketConn, d time.Duration) ([]byte, net.Addr) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	buf := make([]byte, 70000)
	n, from, err := c.ReadFrom(buf)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	return buf[:n], from
}

// requireNothing checks that nothing arrives on c within d.
func requireNothing(t *testing.T, c net.PacketConn, d time.Duration) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	n, _, err := c.ReadFrom(make([]byte, 70000))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "read %d bytes", n)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
}

// httpClient makes its connections with dial.
func httpClient(dial func(context.Context) (net.Conn, error)) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
	}}
}
