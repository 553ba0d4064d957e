package nat

import (
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

func TestNewRejectsBadArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, out := netem.NewNetwork(1), netem.NewNetwork(1)
		defer in.Close()
		defer out.Close()
		tests := []struct {
			name            string
			inside, outside *netem.Network
			public          netip.Addr
			cfg             Config
			want            string
		}{
			{"nil network", nil, out, public1, Config{}, "required"},
			{"same network", in, in, public1, Config{}, "different"},
			{"no public address", in, out, netip.Addr{}, Config{}, "invalid public"},
			{"bad mapping", in, out, public1, Config{Mapping: 3}, "mapping: nat: unknown behavior"},
			{"bad filtering", in, out, public1, Config{Filtering: -1}, "filtering: nat: unknown behavior"},
			{"negative lifetime", in, out, public1, Config{Lifetime: -time.Second}, "negative lifetime"},
		}
		for _, tc := range tests {
			_, err := New(tc.inside, tc.outside, tc.public, tc.cfg)
			require.ErrorContains(t, err, tc.want, tc.name)
		}
	})
}

// A private socket sends to S1:p1, S1:p2 and S2:p1; the external ports the
// servers see tell the mapping behaviour (RFC 4787 section 4.1).
func TestMappingBehavior(t *testing.T) {
	s1p1 := netip.AddrPortFrom(server1, 3478)
	s1p2 := netip.AddrPortFrom(server1, 3479)
	s2p1 := netip.AddrPortFrom(server2, 3478)
	tests := []struct {
		mapping Behavior
		// Whether the port seen by S1:p2 and by S2:p1 equals the one seen
		// by S1:p1.
		sameForPort, sameForAddress bool
		remotes                     []netip.AddrPort // the mappings' keys
	}{
		{EndpointIndependent, true, true, []netip.AddrPort{{}}},
		{AddressDependent, true, false, []netip.AddrPort{
			netip.AddrPortFrom(server1, 0), netip.AddrPortFrom(server2, 0)}},
		{AddressAndPortDependent, false, false, []netip.AddrPort{s1p1, s1p2, s2p1}},
	}
	for _, tc := range tests {
		t.Run(tc.mapping.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				outside := netem.NewNetwork(1)
				defer outside.Close()
				for _, s := range []netip.AddrPort{s1p1, s1p2, s2p1} {
					defer startEcho(t, outside, s)()
				}
				// Filtering is the strictest: the answers come from where the
				// requests went, so they pass whatever the mapping.
				st, cleanup := newSite(t, outside, public1, Config{Mapping: tc.mapping, Filtering: AddressAndPortDependent})
				defer cleanup()
				c := listen(t, st.inside, hostA)

				o1, o2, o3 := observe(t, c, s1p1), observe(t, c, s1p2), observe(t, c, s2p1)
				for _, o := range []netip.AddrPort{o1, o2, o3} {
					require.Equal(t, public1, o.Addr())
				}
				require.Equal(t, tc.sameForPort, o1 == o2)
				require.Equal(t, tc.sameForAddress, o1 == o3)
				require.Equal(t, tc.mapping == EndpointIndependent, o2 == o3)

				ms := st.router.Mappings()
				require.Len(t, ms, len(tc.remotes))
				var remotes []netip.AddrPort
				for _, m := range ms {
					require.Equal(t, hostA, m.Private)
					require.Equal(t, time.Now().Add(DefaultLifetime), m.Expires)
					remotes = append(remotes, m.Remote)
				}
				require.ElementsMatch(t, tc.remotes, remotes)
				s := st.router.Stats()
				require.Equal(t, uint64(len(tc.remotes)), s.MappingsCreated)
				require.Equal(t, netem.Counter{Packets: 3, Bytes: 3}, s.TranslatedOut)
				require.Equal(t, uint64(3), s.TranslatedIn.Packets)
			})
		})
	}
}

// After the private socket sent to S1:p1, which of S1:p1, S1:p2 and S2:p1
// can reach it tells the filtering behaviour (RFC 4787 section 5).
func TestFilteringBehavior(t *testing.T) {
	s1p1 := netip.AddrPortFrom(server1, 3478)
	s1p2 := netip.AddrPortFrom(server1, 3479)
	s2p1 := netip.AddrPortFrom(server2, 3478)
	tests := []struct {
		filtering Behavior
		reach     [3]bool // S1:p1, S1:p2, S2:p1
	}{
		{EndpointIndependent, [3]bool{true, true, true}},
		{AddressDependent, [3]bool{true, true, false}},
		{AddressAndPortDependent, [3]bool{true, false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.filtering.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				outside := netem.NewNetwork(1)
				defer outside.Close()
				st, cleanup := newSite(t, outside, public1, Config{Filtering: tc.filtering})
				defer cleanup()
				c := listen(t, st.inside, hostA)
				servers := []*netem.PacketConn{listen(t, outside, s1p1), listen(t, outside, s1p2), listen(t, outside, s2p1)}

				send(t, c, s1p1, "hello")
				_, mapped, ok := recv(t, servers[0], time.Second)
				require.True(t, ok)

				filtered := uint64(0)
				for i, s := range servers {
					send(t, s, mapped, "reply")
					_, from, got := recv(t, c, time.Second)
					require.Equal(t, tc.reach[i], got, "from %v", s.LocalAddr())
					if got {
						require.Equal(t, s.LocalAddr().String(), from.String(), "the source is the remote's own address")
					} else {
						filtered++
					}
				}
				require.Equal(t, filtered, st.router.Stats().Filtered.Packets)
				require.Equal(t, uint64(3)-filtered, st.router.Stats().TranslatedIn.Packets)
			})
		})
	}
}

// A mapping lives exactly Lifetime after its last refresh: a server can
// reach the private socket 1 ns before, not at the instant. A later outbound
// packet gets a new mapping on a new port.
func TestMappingLifetime(t *testing.T) {
	const ns = time.Nanosecond
	tests := []struct {
		name string
		cfg  Config
		// Instants, from the first packet, of outbound packets and of
		// inbound packets that must arrive (in that order), and the instant
		// from which the mapping is gone.
		outbound, inbound []time.Duration
		gone              time.Duration
	}{
		{
			name:     "default lifetime, outbound refresh",
			cfg:      Config{},
			outbound: []time.Duration{0, 30 * time.Second},
			inbound:  []time.Duration{30*time.Second + 2*time.Minute - ns},
			gone:     30*time.Second + 2*time.Minute,
		},
		{
			name:     "inbound does not refresh",
			cfg:      Config{Lifetime: 10 * time.Second},
			outbound: []time.Duration{0},
			inbound:  []time.Duration{time.Second, 10*time.Second - ns},
			gone:     10 * time.Second,
		},
		{
			name:     "inbound refresh",
			cfg:      Config{Lifetime: 10 * time.Second, InboundRefresh: true},
			outbound: []time.Duration{0},
			inbound:  []time.Duration{10*time.Second - ns, 20*time.Second - 2*ns},
			gone:     30*time.Second - 2*ns,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				outside := netem.NewNetwork(1)
				defer outside.Close()
				st, cleanup := newSite(t, outside, public1, tc.cfg)
				defer cleanup()
				c := listen(t, st.inside, hostA)
				srvAddr := netip.AddrPortFrom(server1, 3478)
				srv := listen(t, outside, srvAddr)
				start := time.Now()
				at := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }

				var mapped netip.AddrPort
				for _, d := range tc.outbound {
					at(d)
					send(t, c, srvAddr, "keepalive")
					_, from, ok := recv(t, srv, time.Nanosecond)
					require.True(t, ok)
					require.True(t, !mapped.IsValid() || mapped == from, "refreshing keeps the mapping")
					mapped = from
				}
				for _, d := range tc.inbound {
					at(d)
					send(t, srv, mapped, "in")
					_, _, ok := recv(t, c, time.Nanosecond)
					require.True(t, ok, "reachable at %v", d)
					require.Equal(t, d, time.Since(start), "delivered at once")
				}
				at(tc.gone)
				send(t, srv, mapped, "late")
				_, _, ok := recv(t, c, time.Minute)
				require.False(t, ok, "gone at %v", tc.gone)
				// Whether the router's reader ended the mapping before the
				// packet reached its port (no endpoint there any more) or
				// after (dropped as expired) is a race at one instant; the
				// packet is lost either way.
				require.Equal(t, uint64(1), st.router.Stats().Dropped.Packets+outside.NoRoute().Packets)
				require.Empty(t, st.router.Mappings())
				require.Equal(t, uint64(1), st.router.Stats().MappingsExpired)
				_, err := outside.Listen(mapped)
				require.NoError(t, err, "the port was released")

				send(t, c, srvAddr, "again")
				_, from, ok := recv(t, srv, time.Nanosecond)
				require.True(t, ok)
				require.Equal(t, public1, from.Addr())
				require.NotEqual(t, mapped.Port(), from.Port(), "a new mapping, a new port")
				require.Equal(t, uint64(2), st.router.Stats().MappingsCreated)
			})
		})
	}
}

// A router keeps no mapping alive by itself: with no traffic at all, one
// ends on time and its reader with it.
func TestIdleMappingExpiresOnItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outside := netem.NewNetwork(1)
		defer outside.Close()
		st, cleanup := newSite(t, outside, public1, Config{Lifetime: time.Minute})
		defer cleanup()
		c := listen(t, st.inside, hostA)
		send(t, c, netip.AddrPortFrom(server1, 9), "x")
		synctest.Wait()
		require.Len(t, st.router.Mappings(), 1)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.Equal(t, uint64(1), st.router.Stats().MappingsExpired)
		require.Empty(t, st.router.Mappings())
	})
}

// Two private hosts reach each other through the public address only if the
// router hairpins, and then subject to the destination mapping's filter.
func TestHairpin(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		// bFirst: B sends to A's public endpoint first, which gives A's
		// external port permission for B under port-dependent filtering.
		bFirst    bool
		delivered bool
		want      func(Stats) uint64
	}{
		{"off", Config{}, false, false, func(s Stats) uint64 { return s.Dropped.Packets }},
		{"on", Config{Hairpin: true}, false, true, func(s Stats) uint64 { return s.Hairpinned.Packets }},
		{"on, filtered", Config{Hairpin: true, Filtering: AddressAndPortDependent}, false, false,
			func(s Stats) uint64 { return s.Filtered.Packets }},
		{"on, permitted", Config{Hairpin: true, Filtering: AddressAndPortDependent}, true, true,
			func(s Stats) uint64 { return s.Hairpinned.Packets }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				outside := netem.NewNetwork(1)
				defer outside.Close()
				echo := netip.AddrPortFrom(server1, 3478)
				defer startEcho(t, outside, echo)()
				st, cleanup := newSite(t, outside, public1, tc.cfg)
				defer cleanup()
				a, b := listen(t, st.inside, hostA), listen(t, st.inside, hostB)
				pubA, pubB := observe(t, a, echo), observe(t, b, echo)

				if tc.bFirst {
					send(t, b, pubA, "opening")
					_, _, ok := recv(t, a, time.Second)
					require.False(t, ok, "A has not sent to B's public endpoint yet")
				}
				before := tc.want(st.router.Stats())
				send(t, a, pubB, "hairpin")
				msg, from, ok := recv(t, b, time.Second)
				require.Equal(t, tc.delivered, ok)
				if ok {
					require.Equal(t, "hairpin", msg)
					require.Equal(t, pubA, from, "translated: the source is A's public endpoint")
				}
				require.Equal(t, before+1, tc.want(st.router.Stats()))
				require.Equal(t, netem.Counter{}, outside.NoRoute(), "nothing leaked outside")
			})
		})
	}
}

// Hosts on one LAN talk directly: the router sees none of it.
func TestInsideTrafficBypassesRouter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outside := netem.NewNetwork(1)
		defer outside.Close()
		st, cleanup := newSite(t, outside, public1, Symmetric)
		defer cleanup()
		a, b := listen(t, st.inside, hostA), listen(t, st.inside, hostB)
		send(t, a, hostB, "hi")
		_, from, ok := recv(t, b, time.Second)
		require.True(t, ok)
		require.Equal(t, hostA, from)
		send(t, b, hostA, "hi back")
		_, from, ok = recv(t, a, time.Second)
		require.True(t, ok)
		require.Equal(t, hostB, from)
		require.Equal(t, Stats{}, st.router.Stats())
		require.Empty(t, st.router.Mappings())
	})
}

// A packet let in whose private socket has closed finds no endpoint on the
// LAN and comes back to the router as a gateway; it must not be taken for
// outbound traffic from the remote.
func TestInboundForClosedSocketIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outside := netem.NewNetwork(1)
		defer outside.Close()
		st, cleanup := newSite(t, outside, public1, Config{})
		defer cleanup()
		c := listen(t, st.inside, hostA)
		srv := listen(t, outside, netip.AddrPortFrom(server1, 3478))
		send(t, c, netip.AddrPortFrom(server1, 3478), "x")
		_, mapped, ok := recv(t, srv, time.Second)
		require.True(t, ok)
		send(t, srv, mapped, "first")
		_, _, ok = recv(t, c, time.Second)
		require.True(t, ok)
		require.NoError(t, c.Close())

		send(t, srv, mapped, "too late")
		synctest.Wait()
		s := st.router.Stats()
		require.Equal(t, uint64(1), s.MappingsCreated, "no mapping for the remote")
		require.Equal(t, uint64(1), s.TranslatedOut.Packets)
		require.Equal(t, uint64(2), s.TranslatedIn.Packets)
		require.Equal(t, netem.Counter{Packets: 1, Bytes: 8}, s.Dropped)
		require.Equal(t, netem.Counter{}, outside.NoRoute())
	})
}

// Close ends every mapping at once (no reader is left waiting for its
// lifetime), frees the ports and gives the LAN back its no-route counting.
// The bubble ending proves no goroutine is left.
func TestCloseReleasesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outside := netem.NewNetwork(1)
		defer outside.Close()
		inside := netem.NewNetwork(1)
		defer inside.Close()
		r, err := New(inside, outside, public1, Symmetric)
		require.NoError(t, err)
		c := listen(t, inside, hostA)
		for port := range uint16(5) {
			send(t, c, netip.AddrPortFrom(server1, 1000+port), "x")
		}
		synctest.Wait()
		ms := r.Mappings()
		require.Len(t, ms, 5)

		start := time.Now()
		require.NoError(t, r.Close())
		require.Equal(t, start, time.Now(), "Close did not wait for any lifetime")
		require.NoError(t, r.Close(), "Close is idempotent")
		for _, m := range ms {
			_, err := outside.Listen(m.Public)
			require.NoError(t, err, "port %v released", m.Public)
		}
		require.Empty(t, r.Mappings())

		send(t, c, netip.AddrPortFrom(server1, 1000), "after")
		synctest.Wait()
		require.Equal(t, netem.Counter{Packets: 1, Bytes: 5}, inside.NoRoute(), "the router is no longer the gateway")
		r.Forward(&netem.Packet{Data: []byte("late")}) // a packet already on its way
		require.Equal(t, uint64(1), r.Stats().Dropped.Packets)
	})
}

// The same seed gives the same external ports; another seed or another
// public address gives others. Ports stay out of the well-known range, and a
// taken port is skipped.
func TestPortsAreSeeded(t *testing.T) {
	ports := func(t *testing.T, seed uint64, public netip.Addr, taken ...uint16) []uint16 {
		var got []uint16
		synctest.Test(t, func(t *testing.T) {
			outside := netem.NewNetwork(1)
			defer outside.Close()
			for _, p := range taken {
				listen(t, outside, netip.AddrPortFrom(public, p))
			}
			st, cleanup := newSite(t, outside, public, Config{Mapping: AddressAndPortDependent, Seed: seed})
			defer cleanup()
			c := listen(t, st.inside, hostA)
			for port := range uint16(20) {
				send(t, c, netip.AddrPortFrom(server1, 1000+port), "x")
				synctest.Wait() // one mapping at a time, so the order is the draws'
			}
			for _, m := range st.router.Mappings() {
				got = append(got, m.Public.Port())
			}
		})
		return got
	}
	var first, again, otherSeed, otherAddr, skipped []uint16
	ran := 0
	t.Run("first", func(t *testing.T) { ran++; first = ports(t, 42, public1) })
	t.Run("again", func(t *testing.T) { ran++; again = ports(t, 42, public1) })
	t.Run("other seed", func(t *testing.T) { ran++; otherSeed = ports(t, 43, public1) })
	t.Run("other address", func(t *testing.T) { ran++; otherAddr = ports(t, 42, public2) })
	if ran < 4 {
		t.Skip("skipping: the -run filter left out some of the draws, and the test compares them")
	}
	require.Len(t, first, 20)
	require.Equal(t, first, again)
	require.NotEqual(t, first, otherSeed)
	require.NotEqual(t, first, otherAddr)
	for _, p := range first {
		require.GreaterOrEqual(t, p, uint16(1024))
	}

	// With every port of the first run taken, the same draws must all be
	// retried and land elsewhere.
	t.Run("taken", func(t *testing.T) { ran++; skipped = ports(t, 42, public1, first...) })
	if ran < 5 {
		t.Skip("skipping: the -run filter left out the draws with the ports taken")
	}
	require.Len(t, skipped, 20)
	for _, p := range skipped {
		require.NotContains(t, first, p, "a taken port is never handed out")
	}
}
