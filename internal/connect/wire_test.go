package connect

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/relay"
)

var (
	lanAddr = netip.MustParseAddrPort("192.168.1.10:50000")
	v6Addr  = netip.MustParseAddrPort("[2001:db8::1]:443")
	pubAddr = netip.MustParseAddrPort("203.0.113.1:30377")
)

func sampleMessages() []message {
	id := relay.SessionID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	return []message{
		{typ: msgRegister, session: id, role: relay.Agent, local: []netip.AddrPort{lanAddr, v6Addr}},
		{typ: msgRegister, session: id, role: relay.Viewer},
		{typ: msgAnswer, session: id, role: relay.Viewer, reflexive: pubAddr},
		{typ: msgAnswer, session: id, role: relay.Agent, reflexive: pubAddr,
			other: &peerInfo{reflexive: pubAddr, local: []netip.AddrPort{lanAddr}}},
		{typ: msgRefused, session: id, role: relay.Viewer},
		{typ: msgProbe, session: id, role: relay.Viewer, tx: 1},
		{typ: msgAck, session: id, role: relay.Agent, tx: 1<<64 - 1},
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		b := m.appendTo(nil)
		require.Zero(t, b[0]&0xc0, "quic-go hands it to ReadNonQUICPacket")
		got, err := parseMessage(b)
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
}

func TestMalformedMessages(t *testing.T) {
	good := sampleMessages()[0].appendTo(nil)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"short":     good[:headerLen-1],
		"truncated": good[:len(good)-1],
		"trailing":  append(bytes.Clone(good), 0),
		"magic":     append([]byte{0, 'N', 'V', 'R', 'L'}, good[5:]...), // the relay's
		"version":   func() []byte { b := bytes.Clone(good); b[5] = 2; return b }(),
		"type":      func() []byte { b := bytes.Clone(good); b[6] = 9; return b }(),
		"role":      func() []byte { b := bytes.Clone(good); b[23] = 0; return b }(),
		"too many":  func() []byte { b := bytes.Clone(good); b[headerLen] = maxCandidates + 1; return b }(),
		"zero addr": message{typ: msgRegister, role: relay.Agent, local: []netip.AddrPort{netip.AddrPortFrom(netip.IPv4Unspecified(), 1)}}.appendTo(nil),
	} {
		_, err := parseMessage(b)
		require.ErrorIs(t, err, errMalformed, name)
	}
}

// Exactly what appendTo writes parses, and parses back to itself.
func FuzzParseMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		f.Add(m.appendTo(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseMessage(b)
		if err != nil {
			return
		}
		require.Equal(t, b, m.appendTo(nil))
	})
}

// The broker answers each peer with the address it saw and, once both
// registered, pushes each to the other.
func TestBroker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := netem.NewNetwork(1)
		defer n.Close()
		rs := relay.New(relay.Config{})
		defer rs.Close()
		b := NewBroker(n.MustListen("192.0.2.10:3478"), rs)
		defer b.Close()
		id := relay.SessionID{7}
		b.Admit(id)

		agent, viewer := n.MustListen("203.0.113.1:1000"), n.MustListen("198.51.100.1:2000")
		exchange := func(c *netem.PacketConn, m message) message {
			t.Helper()
			_, err := c.WriteTo(m.appendTo(nil), b.Addr())
			require.NoError(t, err)
			return read(t, c)
		}
		got := exchange(agent, message{typ: msgRegister, session: id, role: relay.Agent, local: []netip.AddrPort{lanAddr}})
		require.Equal(t, message{typ: msgAnswer, session: id, role: relay.Agent, reflexive: netip.MustParseAddrPort("203.0.113.1:1000")}, got)

		got = exchange(viewer, message{typ: msgRegister, session: id, role: relay.Viewer})
		require.Equal(t, &peerInfo{reflexive: netip.MustParseAddrPort("203.0.113.1:1000"), local: []netip.AddrPort{lanAddr}}, got.other)
		pushed := read(t, agent)
		require.Equal(t, message{typ: msgAnswer, session: id, role: relay.Agent, reflexive: netip.MustParseAddrPort("203.0.113.1:1000"),
			other: &peerInfo{reflexive: netip.MustParseAddrPort("198.51.100.1:2000")}}, pushed)

		// A retransmission changes nothing, so nothing is pushed.
		exchange(viewer, message{typ: msgRegister, session: id, role: relay.Viewer})
		require.NoError(t, agent.SetReadDeadline(time.Now().Add(time.Second)))
		_, _, err := agent.ReadFrom(make([]byte, 100))
		require.Error(t, err)

		// Unknown sessions are refused; garbage is counted.
		got = exchange(viewer, message{typ: msgRegister, session: relay.SessionID{8}, role: relay.Viewer})
		require.Equal(t, msgRefused, got.typ)
		_, err = viewer.WriteTo([]byte{0x40, 1, 2}, b.Addr())
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, BrokerStats{Registers: 3, Pushes: 1, Refused: 1, Malformed: 1}, b.Stats())

		// The relay admits the session too.
		rc, err := relay.Bind(context.Background(), n.MustListen("198.51.100.1:3000"), serveRelay(t, n, rs), id, relay.Viewer)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		require.NoError(t, b.Close())
		require.NoError(t, b.Close(), "idempotent")
	})
}

func read(t *testing.T, c *netem.PacketConn) message {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Second)))
	buf := make([]byte, 2048)
	n, _, err := c.ReadFrom(buf)
	require.NoError(t, err)
	m, err := parseMessage(buf[:n])
	require.NoError(t, err)
	return m
}

// serveRelay serves rs on a port of n until the test's end.
func serveRelay(t *testing.T, n *netem.Network, rs *relay.Server) net.Addr {
	port := n.MustListen("192.0.2.20:3479")
	go rs.ServeUDP(port)
	return port.LocalAddr()
}
