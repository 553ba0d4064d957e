package quicpair

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/stretchr/testify/require"
)

// sizeTap records the largest datagram a link delivered and when it first
// did.
type sizeTap struct {
	mu      sync.Mutex
	largest int
	at      time.Time
}

func (*sizeTap) Entered(*netem.Packet, netem.Fate) {}

func (s *sizeTap) Left(p *netem.Packet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.Size() > s.largest {
		s.largest, s.at = p.Size(), time.Now()
	}
}

func (s *sizeTap) get() (int, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.largest, s.at
}

// bulkOverMTU sends as fast as QUIC allows for d over a 10 ms each way
// path of the given MTU, and returns the largest UDP payload the link to
// the server delivered, when it first did (from the start of the
// handshake), and that link's counters.
func bulkOverMTU(t *testing.T, mtu int, d time.Duration) (largest int, after time.Duration, stats netem.Stats, err error) {
	synctest.Test(t, func(t *testing.T) {
		n := netem.NewNetwork(1)
		defer n.Close()
		tap := &sizeTap{}
		for _, r := range [][2]netip.Addr{{viewerIP, agentIP}, {agentIP, viewerIP}} {
			cfg := netem.LinkConfig{MTU: mtu, Impairments: []netem.Impairment{&netem.Delay{Delay: 10 * time.Millisecond}}}
			if r[1] == agentIP {
				cfg.Tap = tap
			}
			_, err := n.SetLink(r[0], r[1], cfg)
			require.NoError(t, err)
		}
		server, client := n.MustListen("10.0.0.2:4433"), n.MustListen("10.0.0.1:5000")
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var p *Pair
		p, err = Open(ctx, server, client, nil, nil)
		if err != nil {
			stats = n.Link(viewerIP, agentIP).Stats()
			return
		}
		defer p.Close()
		_, err = Bulk(context.Background(), p, d)
		require.NoError(t, err)
		var at time.Time
		largest, at = tap.get()
		after = at.Sub(start)
		stats = n.Link(viewerIP, agentIP).Stats()
	})
	return largest, after, stats, err
}

// quic-go runs path MTU discovery over the in-memory network's conns
// (they set DF), and its binary search between its 1280-byte start and its
// 1452-byte ceiling stops within 20 bytes of the largest size that gets
// through: 1441 bytes of UDP payload on an Ethernet path (1472 fit), 1371
// through a 1400-byte tunnel (1372 fit), and no probe at all gets through
// a path of 1308 (1280 fit). Probes start 5 RTTs after the handshake and
// follow one another 5 RTTs apart: the search ends by 600 ms on these 20 ms
// round trips (the instants vary by a few milliseconds from run to run with
// the goroutines' order; the sizes do not).
func TestMTUQUICFindsThePathSize(t *testing.T) {
	for _, c := range []struct {
		mtu, largest int
		probesLost   bool // some of quic-go's probes were too big
	}{
		{1500, 1441, false},
		{1400, 1371, true},
		{1308, 1280, true},
	} {
		largest, after, stats, err := bulkOverMTU(t, c.mtu, 600*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, c.largest, largest, "MTU %d", c.mtu)
		require.Less(t, after, 600*time.Millisecond, "MTU %d", c.mtu)
		require.Equal(t, c.probesLost, stats.Dropped[netem.DropMTU].Packets > 0, "MTU %d", c.mtu)
	}
}

// Below 1280 + 28 bytes, quic-go's first packets cannot cross: the
// handshake fails, and the error says why.
func TestMTUQUICFailsBelowItsMinimum(t *testing.T) {
	_, _, stats, err := bulkOverMTU(t, 1307, 0)
	require.ErrorIs(t, err, ErrPathMTU)
	require.ErrorContains(t, err, "MTU of 1307 bytes, and QUIC's 1280-byte initial packets need 1308")
	require.Positive(t, stats.Dropped[netem.DropMTU].Packets)
	require.Zero(t, stats.Delivered.Packets)
}
