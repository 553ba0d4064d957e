package nat

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// Addresses used throughout: the internet's servers and routers are in the
// documentation ranges, the LANs in RFC 1918 space.
var (
	server1 = netip.MustParseAddr("198.51.100.1")
	server2 = netip.MustParseAddr("198.51.100.2")
	public1 = netip.MustParseAddr("203.0.113.1")
	public2 = netip.MustParseAddr("203.0.113.2")
	hostA   = netip.MustParseAddrPort("192.168.1.10:5000")
	hostB   = netip.MustParseAddrPort("192.168.1.11:6000")
)

// site is a LAN behind a router on a shared outside network.
type site struct {
	inside *netem.Network
	router *Router
}

// newSite makes a LAN and its router at public on outside. The cleanup
// closes the router, then the LAN.
func newSite(t *testing.T, outside *netem.Network, public netip.Addr, cfg Config) (*site, func()) {
	t.Helper()
	inside := netem.NewNetwork(cfg.Seed)
	r, err := New(inside, outside, public, cfg)
	require.NoError(t, err)
	return &site{inside: inside, router: r}, func() {
		require.NoError(t, r.Close())
		require.NoError(t, inside.Close())
	}
}

// listen binds an endpoint on n.
func listen(t *testing.T, n *netem.Network, addr netip.AddrPort) *netem.PacketConn {
	t.Helper()
	c, err := n.Listen(addr)
	require.NoError(t, err)
	return c
}

// startEcho runs a STUN-like server on n at addr: it answers every datagram
// with the source address it saw, as text, which is how a host behind a NAT
// learns its reflexive address. The cleanup stops it and waits for it.
func startEcho(t *testing.T, n *netem.Network, addr netip.AddrPort) func() {
	t.Helper()
	c := listen(t, n, addr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			_, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			c.WriteTo([]byte(from.String()), from)
		}
	}()
	return func() {
		c.Close()
		<-done
	}
}

// observe sends a request from c to an echo server and returns the address
// the server saw.
func observe(t *testing.T, c *netem.PacketConn, server netip.AddrPort) netip.AddrPort {
	t.Helper()
	send(t, c, server, "?")
	msg, _, ok := recv(t, c, time.Second)
	require.True(t, ok, "no answer from %v", server)
	return netip.MustParseAddrPort(msg)
}

func send(t *testing.T, c *netem.PacketConn, to netip.AddrPort, msg string) {
	t.Helper()
	_, err := c.WriteTo([]byte(msg), net.UDPAddrFromAddrPort(to))
	require.NoError(t, err)
}

// recv reads one datagram that arrives within d; ok is false if none does.
func recv(t *testing.T, c *netem.PacketConn, d time.Duration) (msg string, from netip.AddrPort, ok bool) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(d)))
	defer c.SetReadDeadline(time.Time{})
	buf := make([]byte, 256)
	n, addr, err := c.ReadFrom(buf)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "", netip.AddrPort{}, false
	}
	require.NoError(t, err)
	return string(buf[:n]), addr.(*net.UDPAddr).AddrPort(), true
}
