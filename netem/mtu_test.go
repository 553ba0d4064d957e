package netem

import (
	"net"
	"net/netip"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// A datagram counts its payload plus 28 bytes over IPv4 (48 over IPv6)
// against the link's MTU; above it, DF drops it and its absence fragments
// it.
func TestMTULinkDropsDFAboveAndFragmentsWithout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []int
		l, err := NewLink(LinkConfig{MTU: 1400}, func(p *Packet) { got = append(got, p.Size()) })
		require.NoError(t, err)
		defer l.Close()
		v4 := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 1}
		v6 := &net.UDPAddr{IP: net.ParseIP("fd00::2"), Port: 1}
		send := func(size int, to *net.UDPAddr, df bool) {
			require.NoError(t, l.Send(&Packet{Data: make([]byte, size), To: to, DF: df}))
		}
		send(1372, v4, true) // 1400 on the wire: fits
		send(1373, v4, true) // 1401: dropped
		send(1352, v6, true) // 1400 over IPv6: fits
		send(1353, v6, true) // 1401: dropped
		send(1373, v4, false)
		synctest.Wait()
		require.Equal(t, []int{1372, 1352, 1373}, got)
		s := l.Stats()
		require.Equal(t, Counter{Packets: 2, Bytes: 1373 + 1353}, s.Dropped[DropMTU])
		require.Equal(t, uint64(1), s.Fragmented)
		require.Equal(t, uint64(5), s.Offered.Packets)
		require.Equal(t, 1400, l.MTU())
	})
}

func TestMTULinkDefaultsAndRefusesTooSmall(t *testing.T) {
	l, err := NewLink(LinkConfig{}, func(*Packet) {})
	require.NoError(t, err)
	require.Equal(t, DefaultMTU, l.MTU())
	l.Close()
	_, err = NewLink(LinkConfig{MTU: 67}, func(*Packet) {})
	require.ErrorContains(t, err, "MTU 67")
}

// The path's MTU is its narrowest link's, access links included.
func TestMTUNetworkPathIsTheNarrowestLink(t *testing.T) {
	n := NewNetwork(1)
	defer n.Close()
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	require.Equal(t, DefaultMTU, n.PathMTU(a, b))
	_, err := n.SetLink(a, b, LinkConfig{MTU: 1492})
	require.NoError(t, err)
	require.Equal(t, 1492, n.PathMTU(a, b))
	require.Equal(t, DefaultMTU, n.PathMTU(b, a))
}
