package netem

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNetworkRoutesThroughLinksPerDirection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
		_, err := n.SetLink(a, b, LinkConfig{Impairments: []Impairment{&Delay{Delay: 30 * time.Millisecond}}})
		require.NoError(t, err)
		_, err = n.SetLink(b, a, LinkConfig{Impairments: []Impairment{&Delay{Delay: 5 * time.Millisecond}}})
		require.NoError(t, err)
		ca, cb := n.MustListen("10.0.0.1:1000"), n.MustListen("10.0.0.2:2000")

		start := time.Now()
		msg := []byte("ping")
		_, err = ca.WriteTo(msg, cb.LocalAddr())
		require.NoError(t, err)
		msg[0] = 'X' // the network copied the payload
		buf := make([]byte, 100)
		k, from, err := cb.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "ping", string(buf[:k]))
		require.Equal(t, ca.LocalAddr().String(), from.String())
		require.Equal(t, 30*time.Millisecond, time.Since(start))

		_, err = cb.WriteTo([]byte("pong"), from)
		require.NoError(t, err)
		k, _, err = ca.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "pong", string(buf[:k]))
		require.Equal(t, 35*time.Millisecond, time.Since(start), "the reverse direction has its own link")

		require.Equal(t, uint64(1), n.Link(a, b).Stats().Delivered.Packets)
		require.Equal(t, uint64(1), n.Link(b, a).Stats().Delivered.Packets)
	})
}

func TestPacketConnReadDeadlineWakesBlockedReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		c := n.MustListen("10.0.0.1:1")
		start := time.Now()
		errc := make(chan error)
		go func() {
			_, _, err := c.ReadFrom(make([]byte, 10))
			errc <- err
		}()
		synctest.Wait() // the reader is blocked with no deadline
		time.Sleep(7 * time.Millisecond)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(3*time.Millisecond)))
		err := <-errc
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout())
		require.Equal(t, 10*time.Millisecond, time.Since(start))

		// A deadline in the past fails at once; clearing it blocks again.
		_, _, err = c.ReadFrom(make([]byte, 10))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		go func() {
			_, _, err := c.ReadFrom(make([]byte, 10))
			errc <- err
		}()
		synctest.Wait()
		require.NoError(t, c.SetReadDeadline(time.Now())) // what quic-go does on Close
		require.ErrorIs(t, <-errc, os.ErrDeadlineExceeded)
	})
}

func TestPacketConnCloseUnblocksAndFreesAddress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		c := n.MustListen("10.0.0.1:1")
		errc := make(chan error)
		go func() {
			_, _, err := c.ReadFrom(make([]byte, 10))
			errc <- err
		}()
		synctest.Wait()
		require.NoError(t, c.Close())
		require.ErrorIs(t, <-errc, net.ErrClosed)
		_, err := c.WriteTo([]byte("x"), c.LocalAddr())
		require.ErrorIs(t, err, net.ErrClosed)
		require.ErrorIs(t, c.Close(), net.ErrClosed)
		_, err = n.Listen(netip.MustParseAddrPort("10.0.0.1:1"))
		require.NoError(t, err, "the address is free again")
	})
}

func TestPacketConnWriteDeadlineAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		c := n.MustListen("10.0.0.1:1")
		require.NoError(t, c.SetWriteDeadline(time.Now()))
		_, err := c.WriteTo([]byte("x"), c.LocalAddr())
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.NoError(t, c.SetWriteDeadline(time.Time{}))
		_, err = c.WriteTo(make([]byte, MaxDatagram+1), c.LocalAddr())
		require.ErrorContains(t, err, "too long")
		_, err = c.WriteTo([]byte("x"), nil)
		require.ErrorContains(t, err, "missing address")
	})
}

func TestNetworkListenPortsAndNoRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		c1, err := n.Listen(netip.MustParseAddrPort("10.0.0.1:0"))
		require.NoError(t, err)
		c2, err := n.Listen(netip.MustParseAddrPort("10.0.0.1:0"))
		require.NoError(t, err)
		require.NotEqual(t, c1.LocalAddr().String(), c2.LocalAddr().String())
		_, err = n.Listen(c1.local)
		require.ErrorContains(t, err, "already in use")

		_, err = c1.WriteTo([]byte("lost"), net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.9:9")))
		require.NoError(t, err, "UDP: sending to nobody is not an error")
		synctest.Wait()
		require.Equal(t, Counter{1, 4}, n.NoRoute())
	})
}

// Nothing a link delivers is lost uncounted: an endpoint that closes with
// packets unread hands them to NoRoute, as a socket's close discards its
// receive queue.
func TestPacketConnCloseCountsUnreadPackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		c := n.MustListen("10.0.0.1:1")
		for range 2 {
			_, err := c.WriteTo(make([]byte, 10), c.LocalAddr())
			require.NoError(t, err)
		}
		synctest.Wait()
		require.Equal(t, Counter{}, n.NoRoute())
		require.NoError(t, c.Close())
		require.Equal(t, Counter{2, 20}, n.NoRoute(), "the two unread packets")

		// A packet read before the close is not counted.
		c = n.MustListen("10.0.0.1:2")
		for range 3 {
			_, err := c.WriteTo(make([]byte, 10), c.LocalAddr())
			require.NoError(t, err)
		}
		synctest.Wait()
		_, _, err := c.ReadFrom(make([]byte, 10))
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.Equal(t, Counter{4, 40}, n.NoRoute(), "two more unread packets")
	})
}

func TestPacketConnTruncatesLikeUDP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		c := n.MustListen("10.0.0.1:1")
		_, err := c.WriteTo([]byte("abcdef"), c.LocalAddr())
		require.NoError(t, err)
		buf := make([]byte, 3)
		k, _, err := c.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "abc", string(buf[:k]))
	})
}

func TestPacketConnReceiveBufferDropsWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		c := n.MustListen("10.0.0.1:1")
		require.NoError(t, c.SetReadBuffer(250))
		for range 3 {
			_, err := c.WriteTo(make([]byte, 100), c.LocalAddr())
			require.NoError(t, err)
		}
		synctest.Wait()
		require.Equal(t, Counter{1, 100}, c.Dropped(), "the third 100-byte packet does not fit in 250 bytes")
		require.Error(t, c.SetReadBuffer(0))
	})
}

// gatewayFunc adapts a function to Gateway for tests.
type gatewayFunc func(*Packet)

func (f gatewayFunc) Forward(p *Packet) { f(p) }

func TestNetworkGatewayTakesUnroutablePackets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a := n.MustListen("10.0.0.1:1")
		b := n.MustListen("10.0.0.2:2")
		var forwarded []*Packet
		n.SetGateway(gatewayFunc(func(p *Packet) { forwarded = append(forwarded, p) }))

		far := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("203.0.113.9:9"))
		_, err := a.WriteTo([]byte("out"), far)
		require.NoError(t, err)
		_, err = a.WriteTo([]byte("in"), b.LocalAddr())
		require.NoError(t, err)
		synctest.Wait()

		require.Len(t, forwarded, 1, "a bound destination is delivered, not forwarded")
		require.Equal(t, "out", string(forwarded[0].Data))
		require.Equal(t, a.LocalAddr().String(), forwarded[0].From.String())
		require.Equal(t, far.String(), forwarded[0].To.String())
		require.Equal(t, Counter{}, n.NoRoute(), "the gateway owns what it takes")
		k, _, err := b.ReadFrom(make([]byte, 10))
		require.NoError(t, err)
		require.Equal(t, 2, k)

		n.SetGateway(nil)
		_, err = a.WriteTo([]byte("lost"), far)
		require.NoError(t, err)
		synctest.Wait()
		require.Len(t, forwarded, 1)
		require.Equal(t, Counter{1, 4}, n.NoRoute(), "without a gateway the network counts it again")
	})
}

func TestNetworkInjectUsesTheLinkFromTheClaimedSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		remote := netip.MustParseAddrPort("203.0.113.9:4000")
		c := n.MustListen("10.0.0.1:1")
		_, err := n.SetLink(remote.Addr(), netip.MustParseAddr("10.0.0.1"),
			LinkConfig{Impairments: []Impairment{&Delay{Delay: 12 * time.Millisecond}}})
		require.NoError(t, err)

		start := time.Now()
		msg := []byte("hello")
		require.NoError(t, n.Inject(remote, netip.MustParseAddrPort("10.0.0.1:1"), msg))
		msg[0] = 'X' // Inject copied the payload
		buf := make([]byte, 10)
		k, from, err := c.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "hello", string(buf[:k]))
		require.Equal(t, remote.String(), from.String(), "the source is whatever the injector claims")
		require.Equal(t, 12*time.Millisecond, time.Since(start), "it crossed the link remote->host")
		require.Equal(t, uint64(1), n.Link(remote.Addr(), netip.MustParseAddr("10.0.0.1")).Stats().Delivered.Packets)

		// A host never seen before gets a perfect link on first use.
		require.NoError(t, n.Inject(netip.MustParseAddrPort("198.51.100.1:7"), netip.MustParseAddrPort("10.0.0.1:1"), []byte("x")))
		_, from, err = c.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "198.51.100.1:7", from.String())
		require.Equal(t, 12*time.Millisecond, time.Since(start))

		require.ErrorContains(t, n.Inject(remote, netip.AddrPort{}, nil), "invalid address")
		require.ErrorContains(t, n.Inject(remote, netip.MustParseAddrPort("10.0.0.1:1"), make([]byte, MaxDatagram+1)), "too long")
		require.NoError(t, n.Close())
		require.ErrorIs(t, n.Inject(remote, netip.MustParseAddrPort("10.0.0.1:1"), nil), net.ErrClosed)
	})
}

// A host's access links carry all of its traffic, whatever the
// destination, in series with the route's own link: delays add up, and
// two destinations share one bottleneck.
func TestHostLinksCarryAllOfAHostsTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		h, a := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
		// 1000-byte packets at 800 kbit/s: 10 ms each on the host's uplink.
		out, in, err := n.SetHostLinks(h,
			LinkConfig{Impairments: []Impairment{&Rate{Rate: 800_000}, &Delay{Delay: 20 * time.Millisecond}}},
			LinkConfig{Impairments: []Impairment{&Delay{Delay: 7 * time.Millisecond}}})
		require.NoError(t, err)
		_, err = n.SetLink(h, a, LinkConfig{Impairments: []Impairment{&Delay{Delay: 5 * time.Millisecond}}})
		require.NoError(t, err)
		ch, ca, cb := n.MustListen("10.0.0.1:1"), n.MustListen("10.0.0.2:2"), n.MustListen("10.0.0.3:3")

		start := time.Now()
		pkt := make([]byte, 1000)
		for range 2 { // to a, then to b: the second waits behind the first
			_, err = ch.WriteTo(pkt, ca.LocalAddr())
			require.NoError(t, err)
			_, err = ch.WriteTo(pkt, cb.LocalAddr())
			require.NoError(t, err)
		}
		arrivals := func(c *PacketConn) []time.Duration {
			var at []time.Duration
			buf := make([]byte, 2000)
			for range 2 {
				if _, _, err := c.ReadFrom(buf); err != nil {
					return nil
				}
				at = append(at, time.Since(start))
			}
			return at
		}
		var atA, atB []time.Duration
		done := make(chan struct{})
		go func() { atB = arrivals(cb); close(done) }()
		atA = arrivals(ca)
		<-done
		buf := make([]byte, 2000)
		// Serialised in order on the shared uplink: 10, 20, 30, 40 ms,
		// plus its 20 ms, plus a's route link's 5 ms.
		require.Equal(t, []time.Duration{35 * time.Millisecond, 55 * time.Millisecond}, atA)
		require.Equal(t, []time.Duration{40 * time.Millisecond, 60 * time.Millisecond}, atB)
		require.Equal(t, uint64(4), out.Stats().Delivered.Packets)

		// Inbound: the route's link, then the host's in link.
		start = time.Now()
		_, err = cb.WriteTo([]byte("hi"), ch.LocalAddr())
		require.NoError(t, err)
		_, from, err := ch.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, cb.LocalAddr().String(), from.String())
		require.Equal(t, 7*time.Millisecond, time.Since(start))
		require.Equal(t, uint64(1), in.Stats().Delivered.Packets)

		// Hosts without access links are untouched: a to b is instant.
		start = time.Now()
		_, err = ca.WriteTo([]byte("x"), cb.LocalAddr())
		require.NoError(t, err)
		_, _, err = cb.ReadFrom(buf)
		require.NoError(t, err)
		require.Zero(t, time.Since(start))
	})
}

// Recycled packets keep their payloads apart: packets waiting unread,
// read in batches of varying size while more arrive, come out in order
// and intact, whatever buffers earlier ones left behind.
func TestPacketConnRecycledPacketsKeepTheirPayloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := n.MustListen("10.0.0.1:1"), n.MustListen("10.0.0.2:2")
		buf := make([]byte, 3000)
		sent, read := 0, 0
		for round := range 50 {
			for range round % 7 * 3 {
				msg := make([]byte, 1+sent%2500) // some too large to keep
				for i := range msg {
					msg[i] = byte(sent + i)
				}
				_, err := a.WriteTo(msg, b.LocalAddr())
				require.NoError(t, err)
				sent++
			}
			synctest.Wait()
			for range round % 5 * 4 {
				if read == sent {
					break
				}
				k, _, err := b.ReadFrom(buf)
				require.NoError(t, err)
				require.Equal(t, 1+read%2500, k, "packet %d", read)
				for i := range k {
					require.Equal(t, byte(read+i), buf[i], "packet %d byte %d", read, i)
				}
				read++
			}
		}
		require.Positive(t, read)
	})
}

// A packet's round trip through a perfect link allocates (almost) nothing
// once the pools are warm: the packet and its payload are recycled, and
// the endpoint's queue reuses its array. What is left is the channel a
// blocked reader waits on.
func TestPacketConnRoundTripAllocations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := n.MustListen("10.0.0.1:1"), n.MustListen("10.0.0.2:2")
		msg, buf := make([]byte, 1200), make([]byte, 1500)
		roundTrip := func() {
			if _, err := a.WriteTo(msg, b.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if _, _, err := b.ReadFrom(buf); err != nil {
				t.Fatal(err)
			}
		}
		roundTrip() // makes the link
		allocs := testing.AllocsPerRun(100, roundTrip)
		require.LessOrEqual(t, allocs, 1.0, "allocations per packet")
	})
}
