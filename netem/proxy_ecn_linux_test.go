package netem

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// proxyECNRun sends 40 ECT(0) datagrams of 1200 bytes at once through a
// proxy whose link that way is 1 Mbit/s under CoDel, from the client to
// the target or (reverse) back, and returns the ECN bits the receiver
// read them with, and that link's counters.
func proxyECNRun(t *testing.T, ecn, reverse bool) (seen map[ECN]int, link Stats) {
	target, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { target.Close() })
	codel := LinkConfig{Impairments: []Impairment{&Rate{Rate: 1e6, Queue: QueueLimit{CoDel: &CoDelParams{}}}}}
	cfg := ProxyConfig{Target: target.LocalAddr().String(), ECN: ecn, Forward: codel}
	if reverse {
		cfg.Forward, cfg.Reverse = LinkConfig{}, codel
	}
	p := newTestProxy(t, cfg)
	c := proxyDial(t, p)
	send := func(b, oob []byte) (int, int, error) { return c.WriteMsgUDP(b, oob, nil) }
	recv := target
	if reverse {
		// The client speaks first, so that the proxy maps it; the target
		// answers the address it heard from.
		_, err := c.Write([]byte("hello"))
		require.NoError(t, err)
		require.NoError(t, target.SetReadDeadline(time.Now().Add(proxyTestTimeout)))
		_, from, err := target.ReadFromUDP(make([]byte, 16))
		require.NoError(t, err)
		send = func(b, oob []byte) (int, int, error) { return target.WriteMsgUDP(b, oob, from) }
		recv = c
	}
	enableRecvTOS(recv)
	ect0 := appendTOSCmsg(nil, ECT0, true)
	for range 40 {
		_, _, err := send(make([]byte, 1200), ect0)
		require.NoError(t, err)
	}
	stats := func() Stats {
		f, r := p.Stats()
		if reverse {
			return r
		}
		return f
	}
	proxyWaitFor(t, "the link to deliver or drop the 40", func() bool {
		s := stats()
		return s.Delivered.Packets+s.Dropped[DropCoDel].Packets == 40
	})
	link = stats()
	seen = map[ECN]int{}
	buf, oob := make([]byte, 2048), make([]byte, 128)
	for range link.Delivered.Packets {
		require.NoError(t, recv.SetReadDeadline(time.Now().Add(proxyTestTimeout)))
		_, oobn, _, _, err := recv.ReadMsgUDP(buf, oob)
		require.NoError(t, err)
		seen[cmsgECN(oob[:oobn])]++
	}
	return seen, link
}

// With ECN the proxy reads the bits a program set (ECT(0)), its link's
// CoDel marks instead of dropping, and the receiver reads ECT(0) and CE, as
// many CE as the link marked; without, CoDel drops and everything arrives
// Not-ECT, as over a path that clears the bits. Both ways: to the target
// (a session's feedback) and back to the client (its video).
func TestProxyCarriesECN(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		seen, link := proxyECNRun(t, true, reverse)
		t.Logf("reverse %v, ECN: read %v; marked %d, dropped %v", reverse, seen, link.Marked.Packets, link.Dropped)
		require.Positive(t, seen[CE])
		require.Positive(t, seen[ECT0])
		require.Equal(t, 40, seen[CE]+seen[ECT0])
		require.Equal(t, int(link.Marked.Packets), seen[CE])
		require.Zero(t, link.Dropped[DropCoDel].Packets)

		seen, link = proxyECNRun(t, false, reverse)
		t.Logf("reverse %v, no ECN: read %v; marked %d, dropped %v", reverse, seen, link.Marked.Packets, link.Dropped)
		require.Equal(t, int(link.Delivered.Packets), seen[NotECT])
		require.Zero(t, link.Marked.Packets)
		require.Positive(t, link.Dropped[DropCoDel].Packets)
	}
}
