//go:build linux

package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/timerprobe"
	"github.com/nuvirahub/latencylab/netem"
)

// ipForward reads the host's net.ipv4.ip_forward, which a host pair must
// leave as it found it.
func ipForward(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	require.NoError(t, err)
	return string(b)
}

// A host pair's B side is the host itself: a server of this process,
// listening on every address, is reached from A at AddrB across the links,
// and Close removes the device from the host with the namespace.
func TestHostPairReachesHostServers(t *testing.T) {
	requireKernel(t)
	// The median round trip is held within 2 ms of the links' 20 ms:
	// timers later than 5 ms at their p99 move the median too.
	timerprobe.Require(t, 5*time.Millisecond)
	forward := ipForward(t)
	const oneWay = 10 * time.Millisecond
	before := time.Now()
	p, err := New(Config{HostB: true,
		AtoB: netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: oneWay}}},
		BtoA: netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: oneWay}}},
	})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	require.Empty(t, p.NamespaceB())
	require.Regexp(t, regexp.MustCompile(`^labgw\d+$`), p.DeviceB())
	require.WithinRange(t, p.Epoch(), before, time.Now())
	host, err := tunDevices(t, "")
	require.NoError(t, err)
	require.Contains(t, host, p.DeviceB())

	// A TCP server on 0.0.0.0 of the host answers A at AddrB.
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		c.Write(buf[:n])
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	var c net.Conn
	require.NoError(t, p.InA(func() (err error) {
		c, err = net.DialTimeout("tcp4", netip.AddrPortFrom(p.AddrB(), uint16(port)).String(), 5*time.Second)
		return err
	}))
	defer c.Close()
	require.Equal(t, p.AddrB().String(), c.RemoteAddr().(*net.TCPAddr).IP.String())
	_, err = c.Write([]byte("hello host"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second))) // a bound on failure
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hello host", string(buf[:n]))

	// And the round trip is the links'.
	got := rtts(t, p, 20)
	slices.Sort(got)
	t.Logf("round trip to the host over 2 x %v: min %v median %v", oneWay, got[0], got[len(got)/2])
	require.GreaterOrEqual(t, got[0], 2*oneWay)
	require.InDelta(t, float64(2*oneWay), float64(got[len(got)/2]), float64(2*time.Millisecond))

	require.NoError(t, p.Close())
	closed = true
	require.NotContains(t, namespaces(t), p.NamespaceA())
	host, err = tunDevices(t, "")
	require.NoError(t, err)
	require.NotContains(t, host, p.DeviceB())
	require.Equal(t, forward, ipForward(t), "net.ipv4.ip_forward unchanged")
}

// From A, the host's address is reachable and nothing else is: without a
// route, an address outside the /30 is unreachable; with a default route
// through the device (a program in A may add one), the packets reach the
// pair and stop there, never the host.
func TestHostPairIsNoWayOut(t *testing.T) {
	requireKernel(t)
	p := newPair(t, Config{HostB: true})

	var err error
	require.NoError(t, p.InA(func() error {
		_, err = net.Dial("udp4", "192.0.2.1:9")
		return nil
	}))
	require.True(t, errors.Is(err, syscall.ENETUNREACH), "dial outside the /30 from A: %v", err)

	// The host listens on every address; one of its own addresses other
	// than AddrB (or, on a host with none, a documentation address) is
	// what a stray packet would be for.
	ln, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
	require.NoError(t, err)
	defer ln.Close()
	port := ln.LocalAddr().(*net.UDPAddr).Port
	other := netip.MustParseAddr("198.51.100.7")
	prefixes, err := hostPrefixes()
	require.NoError(t, err)
	for _, pf := range prefixes {
		if a := pf.Addr(); !a.IsLoopback() && !pf.Contains(p.AddrB()) {
			other = hostAddrIn(t, pf)
			break
		}
	}
	require.NoError(t, runIP("", "-n", p.NamespaceA(), "route", "add", "default", "dev", tunName))
	var c *net.UDPConn
	require.NoError(t, p.InA(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
		return err
	}))
	defer c.Close()
	const strays = 3
	for i := range strays {
		_, err := c.WriteToUDP(fmt.Appendf(nil, "stray %d", i), net.UDPAddrFromAddrPort(netip.AddrPortFrom(other, uint16(port))))
		require.NoError(t, err, "with a default route, the packet leaves A")
	}
	// The marker goes the allowed way after the strays, through the same
	// FIFO link: had a stray crossed, it would arrive first.
	_, err = c.WriteToUDP([]byte("marker"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.AddrB(), uint16(port))))
	require.NoError(t, err)
	require.NoError(t, ln.SetReadDeadline(time.Now().Add(5*time.Second))) // a bound on failure
	buf := make([]byte, 64)
	n, from, err := ln.ReadFromUDP(buf)
	require.NoError(t, err)
	require.Equal(t, "marker", string(buf[:n]), "the first datagram the host gets is the marker, sent to %v after %d to %v", p.AddrB(), strays, other)
	require.Equal(t, p.AddrA().String(), from.IP.String())
	require.GreaterOrEqual(t, p.Refused(), uint64(strays))
	ab, _ := p.Stats()
	require.Equal(t, uint64(1), ab.Offered.Packets, "only the marker entered the link")
}

// hostAddrIn is the host's own address of prefix pf (hostPrefixes masks
// them), found again among the interfaces.
func hostAddrIn(t *testing.T, pf netip.Prefix) netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && pf.Contains(ip.Unmap()) {
				return ip.Unmap()
			}
		}
	}
	t.Fatalf("no address of %v on the host", pf)
	return netip.Addr{}
}

// Two host pairs at once get distinct devices and subnets that do not
// overlap, whatever their process ids.
func TestHostPairsDoNotCollide(t *testing.T) {
	requireKernel(t)
	p1 := newPair(t, Config{HostB: true})
	p2 := newPair(t, Config{HostB: true})
	require.NotEqual(t, p1.DeviceB(), p2.DeviceB())
	require.False(t, netip.PrefixFrom(p1.AddrB(), 30).Masked().Overlaps(netip.PrefixFrom(p2.AddrB(), 30).Masked()),
		"%v and %v", p1, p2)
}

// The links carry every protocol, so a scenario's block_udp drops the UDP
// packets only: TCP still crosses, as it would through the firewall it
// stands for.
func TestBlockDropsUDPOnly(t *testing.T) {
	requireKernel(t)
	p := newPair(t, Config{HostB: true, AtoB: netem.LinkConfig{Impairments: []netem.Impairment{&netem.Block{}}}})
	ln, err := net.Listen("tcp4", netip.AddrPortFrom(p.AddrB(), 0).String())
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	// The datagram first, then the connection: the link's reader takes
	// packets in order, so once the handshake has crossed, the datagram's
	// verdict has been taken.
	var u net.Conn
	require.NoError(t, p.InA(func() (err error) {
		u, err = net.Dial("udp4", netip.AddrPortFrom(p.AddrB(), 9).String())
		return err
	}))
	defer u.Close()
	_, err = u.Write([]byte("blocked"))
	require.NoError(t, err)
	var c net.Conn
	require.NoError(t, p.InA(func() (err error) {
		c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
		return err
	}))
	c.Close()
	require.NoError(t, <-accepted)
	ab, _ := p.Stats()
	require.Equal(t, uint64(1), ab.Dropped[netem.DropBlocked].Packets, "the datagram: %+v", ab)
	require.NotZero(t, ab.Delivered.Packets, "TCP crossed")
}

func TestBetweenAndIsUDP(t *testing.T) {
	a, b := netip.MustParseAddr("10.77.0.1"), netip.MustParseAddr("10.77.0.2")
	pk := make([]byte, 28)
	pk[0] = 0x45
	pk[9] = ipProtoUDP
	copy(pk[12:], a.AsSlice())
	copy(pk[16:], b.AsSlice())
	require.True(t, between(pk, a, b))
	require.False(t, between(pk, b, a))
	require.False(t, between(pk[:19], a, b), "truncated")
	require.True(t, isUDP(pk))
	pk[9] = 6 // TCP
	require.False(t, isUDP(pk))
	v6 := make([]byte, 40)
	v6[0], v6[6] = 0x60, ipProtoUDP
	require.True(t, isUDP(v6))
	require.False(t, between(v6, a, b), "IPv6 never crosses")
	// A header cut short is no UDP packet, whatever its protocol byte says.
	pk[9] = ipProtoUDP
	require.False(t, isUDP(pk[:19]), "IPv4 without its whole header")
	require.False(t, isUDP(v6[:39]), "IPv6 without its whole header")
}
