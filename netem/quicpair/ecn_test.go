package quicpair

import (
	"context"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/stretchr/testify/require"
)

// bulkThroughCoDel runs a 10 s QUIC bulk transfer from the client
// (10.0.0.1) to the server over 20 ms round trips and a 5 Mbit/s CoDel
// bottleneck toward the server, its endpoints passing ECN or not, and
// returns the transfer and the bottleneck's counters.
func bulkThroughCoDel(t *testing.T, ecn bool) (res BulkResult, stats netem.Stats) {
	synctest.Test(t, func(t *testing.T) {
		n := netem.NewNetwork(1)
		defer n.Close()
		for _, r := range [][2]netip.Addr{{viewerIP, agentIP}, {agentIP, viewerIP}} {
			imps := []netem.Impairment{&netem.Delay{Delay: 10 * time.Millisecond}}
			if r[1] == agentIP {
				imps = append(imps, &netem.Rate{Rate: 5e6, Queue: netem.QueueLimit{CoDel: &netem.CoDelParams{}}})
			}
			_, err := n.SetLink(r[0], r[1], netem.LinkConfig{Impairments: imps})
			require.NoError(t, err)
		}
		server, client := n.MustListen("10.0.0.2:4433"), n.MustListen("10.0.0.1:5000")
		server.PassECN(ecn)
		client.PassECN(ecn)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p, err := Open(ctx, server, client, nil, nil)
		require.NoError(t, err)
		defer p.Close()
		res, err = Bulk(context.Background(), p, 10*time.Second)
		require.NoError(t, err)
		stats = n.Link(viewerIP, agentIP).Stats()
	})
	return res, stats
}

// quic-go marks its packets ECT(0) when its conn speaks the out-of-band
// API and the path passes the bits (RFC 9000, section 13.4: it validates
// that its marks come back in the ACKs' ECN counts), and takes a CE count
// that grows as a congestion event (RFC 9002, section 7.1). Through CoDel,
// an ECN-capable flow is then marked instead of dropped, at the same
// goodput; on a path that clears the bits, CoDel drops. quic-go's
// PacketsLost counts its congestion controller's events, from a loss or a
// mark alike, so it is positive both ways: the flow reacts to the marks.
func TestECNQUICIsMarkedInsteadOfDropped(t *testing.T) {
	with, withStats := bulkThroughCoDel(t, true)
	without, withoutStats := bulkThroughCoDel(t, false)
	t.Logf("ECN: %v; CoDel marked %d, dropped %d", with, withStats.Marked.Packets, withStats.Dropped[netem.DropCoDel].Packets)
	t.Logf("no ECN: %v; CoDel marked %d, dropped %d", without, withoutStats.Marked.Packets, withoutStats.Dropped[netem.DropCoDel].Packets)

	require.Positive(t, withStats.Marked.Packets, "CoDel marks the ECN-capable flow")
	require.Zero(t, withStats.Dropped[netem.DropCoDel].Packets, "and drops none of it")
	require.Positive(t, with.Sender.PacketsLost, "quic-go's congestion events: the marks'")

	require.Zero(t, withoutStats.Marked.Packets, "nothing ECN-capable to mark")
	require.Positive(t, withoutStats.Dropped[netem.DropCoDel].Packets)
	require.Positive(t, without.Sender.PacketsLost)

	// Both are held to the link by the same queue: within 10% of each
	// other and of the 5 Mbit/s less headers.
	require.InEpsilon(t, without.Goodput(), with.Goodput(), 0.1)
	require.InEpsilon(t, 4.8e6, with.Goodput(), 0.1)
}
