package netem

import (
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// twoHops makes a network with hosts a and b joined by two hops, each a
// link per direction (a's side first), and returns the down links (a -> b)
// and the up links (b -> a) in the order a packet from a meets them.
func twoHops(t *testing.T, n *Network, a, b netip.Addr, down, up [2]LinkConfig) (downLinks, upLinks [2]*Link) {
	t.Helper()
	for i := range 2 {
		var err error
		downLinks[i], err = n.AddLink(down[i])
		require.NoError(t, err)
		upLinks[i], err = n.AddLink(up[i])
		require.NoError(t, err)
	}
	require.NoError(t, n.SetRoute(a, b, downLinks[0], downLinks[1]))
	require.NoError(t, n.SetRoute(b, a, upLinks[1], upLinks[0]))
	return downLinks, upLinks
}

func delayLink(name string, d time.Duration) LinkConfig {
	return LinkConfig{Name: name, Impairments: []Impairment{&Delay{Delay: d}}}
}

func TestHopsDelaysAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1")
		down, up := twoHops(t, n, a, b,
			[2]LinkConfig{delayLink("core/down", 10*time.Millisecond), delayLink("access/down", 25*time.Millisecond)},
			[2]LinkConfig{delayLink("core/up", 5*time.Millisecond), delayLink("access/up", 7*time.Millisecond)})
		ca, cb := n.MustListen("10.0.0.2:1000"), n.MustListen("10.0.0.1:2000")

		start := time.Now()
		_, err := ca.WriteTo([]byte("ping"), cb.LocalAddr())
		require.NoError(t, err)
		buf := make([]byte, 10)
		k, from, err := cb.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "ping", string(buf[:k]))
		require.Equal(t, 35*time.Millisecond, time.Since(start), "10 ms on the first hop and 25 ms on the second")

		_, err = cb.WriteTo([]byte("pong"), from)
		require.NoError(t, err)
		_, _, err = ca.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, 47*time.Millisecond, time.Since(start), "the way back crosses both hops' own up links")

		for _, l := range append(down[:], up[:]...) {
			require.Equal(t, uint64(1), l.Stats().Delivered.Packets, l.Name())
		}
		require.Nil(t, n.Link(a, b), "a route of hops makes no link of its own")
		require.Len(t, n.Route(a, b), 2)
	})
}

// rateLink is a bottleneck of rate bits per second with an unlimited
// drop-tail queue.
func rateLink(name string, rate int64) LinkConfig {
	return LinkConfig{Name: name, Impairments: []Impairment{&Rate{Rate: rate}}}
}

func TestHopsNarrowerHopSetsThroughput(t *testing.T) {
	// 50 datagrams of 1250 bytes (10 000 bits) sent at once: 1 ms each at
	// 10 Mbit/s, 5 ms at 2 Mbit/s. Whichever hop is the narrow one, the
	// last leaves 50 x 5 ms after the first reached the narrow hop, plus
	// one serialisation at the wide one: 251 ms, 2 Mbit/s.
	for _, tc := range []struct {
		name         string
		first, other int64
	}{{"narrow second", 10_000_000, 2_000_000}, {"narrow first", 2_000_000, 10_000_000}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := NewNetwork(1)
				defer n.Close()
				a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1")
				twoHops(t, n, a, b, [2]LinkConfig{rateLink("h1/down", tc.first), rateLink("h2/down", tc.other)}, [2]LinkConfig{})
				ca, cb := n.MustListen("10.0.0.2:1000"), n.MustListen("10.0.0.1:2000")
				start := time.Now()
				const count, size = 50, 1250
				for range count {
					_, err := ca.WriteTo(make([]byte, size), cb.LocalAddr())
					require.NoError(t, err)
				}
				buf := make([]byte, size)
				for range count {
					_, _, err := cb.ReadFrom(buf)
					require.NoError(t, err)
				}
				elapsed := time.Since(start)
				require.Equal(t, 251*time.Millisecond, elapsed)
				// From the first arrival at the narrow hop to the last
				// delivery: exactly the narrow hop's rate.
				require.Equal(t, 2_000_000.0, float64(count*size*8)/(elapsed-time.Millisecond).Seconds())
			})
		})
	}
}

func TestHopsCrossTrafficFillsOnlyItsHop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		// The agent's side, the router between the hops, the viewer's side.
		a, r, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.1.1"), netip.MustParseAddr("10.0.0.1")
		down, _ := twoHops(t, n, a, b, [2]LinkConfig{rateLink("h1/down", 10_000_000), rateLink("h2/down", 2_000_000)}, [2]LinkConfig{})
		// The cross flow enters at the router and leaves with the session,
		// after the second hop: it crosses that hop alone.
		require.NoError(t, n.SetRoute(r, b, down[1]))
		ca, cr, cb := n.MustListen("10.0.0.2:1000"), n.MustListen("10.0.1.1:1000"), n.MustListen("10.0.0.1:2000")
		start := time.Now()
		for range 40 {
			_, err := cr.WriteTo(make([]byte, 1250), cb.LocalAddr())
			require.NoError(t, err)
		}
		_, err := ca.WriteTo([]byte("session"), cb.LocalAddr())
		require.NoError(t, err)
		buf := make([]byte, 1250)
		for {
			k, from, err := cb.ReadFrom(buf)
			require.NoError(t, err)
			if from.String() == ca.LocalAddr().String() {
				require.Equal(t, "session", string(buf[:k]))
				break
			}
		}
		// The session's packet crossed the first hop in 5.6 us (7 bytes)
		// and waited behind the 40 cross packets' 200 ms at the second.
		h1, h2 := down[0].Stats(), down[1].Stats()
		require.Equal(t, 200*time.Millisecond+28*time.Microsecond, time.Since(start))
		require.Equal(t, uint64(1), h1.Offered.Packets, "the first hop saw the session's packet only")
		require.Zero(t, h1.Queued.Max, "and queued nothing")
		require.Equal(t, uint64(41), h2.Offered.Packets)
		require.Equal(t, 200*time.Millisecond-5600*time.Nanosecond, h2.Queued.Max, "the session's packet waited longest, behind all 40")
	})
}

func TestSetRouteRefusesForeignAndRepeatedLinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1")
		h, err := n.AddLink(LinkConfig{})
		require.NoError(t, err)
		require.Equal(t, "hop0", h.Name())
		require.ErrorIs(t, n.SetRoute(a, b, h, h), ErrRoute)
		own, err := n.SetLink(a, b, LinkConfig{})
		require.NoError(t, err)
		require.ErrorIs(t, n.SetRoute(a, b, own), ErrRoute, "a route's own link is no hop")
		require.NoError(t, n.SetRoute(a, b, h))
		require.Nil(t, n.Link(a, b), "the route replaced the link")
		require.NoError(t, n.SetRoute(a, b))
		require.Nil(t, n.Route(a, b))
	})
}

func TestPathMTUCountsEveryHop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1")
		twoHops(t, n, a, b, [2]LinkConfig{{}, {MTU: 1400}}, [2]LinkConfig{{MTU: 1492}, {}})
		require.Equal(t, 1400, n.PathMTU(a, b))
		require.Equal(t, 1492, n.PathMTU(b, a))
	})
}

func TestHopsRouteRemovedOnTheWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(1)
		defer n.Close()
		a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1")
		twoHops(t, n, a, b, [2]LinkConfig{delayLink("h1", 10*time.Millisecond), delayLink("h2", 10*time.Millisecond)}, [2]LinkConfig{})
		ca := n.MustListen("10.0.0.2:1000")
		cb := n.MustListen("10.0.0.1:2000")
		_, err := ca.WriteTo([]byte("lost"), cb.LocalAddr())
		require.NoError(t, err)
		require.NoError(t, n.SetRoute(a, b)) // gone while the packet is on the first hop
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, uint64(1), n.NoRoute().Packets, "it leaves the first hop with no route to follow")
	})
}
