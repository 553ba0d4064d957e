package tcplike

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

var (
	clientIP = netip.MustParseAddr("10.0.0.1")
	serverIP = netip.MustParseAddr("10.0.0.2")
)

// path makes a network whose server -> client direction is down and the
// other up.
func path(t *testing.T, seed uint64, down, up []netem.Impairment) *netem.Network {
	t.Helper()
	n := netem.NewNetwork(seed)
	_, err := n.SetLink(serverIP, clientIP, netem.LinkConfig{Name: "down", Impairments: down})
	require.NoError(t, err)
	_, err = n.SetLink(clientIP, serverIP, netem.LinkConfig{Name: "up", Impairments: up})
	require.NoError(t, err)
	return n
}

// bottleneck is a rate cap with a drop-tail queue of packets, and a delay.
func bottleneck(rate int64, packets int, delay time.Duration) []netem.Impairment {
	return []netem.Impairment{&netem.Rate{Rate: rate, Queue: netem.QueueLimit{Packets: packets}}, &netem.Delay{Delay: delay}}
}

// flow is one fetch between a server and a client on ports of their own.
type flow struct {
	srv *Server
	cli *Client
	// bytes delivered in order, by second of the run
	mu      sync.Mutex
	perSec  map[int]int64
	started time.Time
}

func startFlow(t *testing.T, n *netem.Network, port uint16, cfg Config) *flow {
	t.Helper()
	sc, err := n.Listen(netip.AddrPortFrom(serverIP, port))
	require.NoError(t, err)
	srv, err := Serve(sc, cfg)
	require.NoError(t, err)
	cc, err := n.Listen(netip.AddrPortFrom(clientIP, port))
	require.NoError(t, err)
	return &flow{srv: srv, cli: NewClient(cc), perSec: map[int]int64{}, started: time.Now()}
}

func (f *flow) count(now time.Time, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.perSec[int(now.Sub(f.started)/time.Second)] += int64(n)
}

// goodput is the bits per second delivered in seconds [from, to).
func (f *flow) goodput(from, to int) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b int64
	for s := from; s < to; s++ {
		b += f.perSec[s]
	}
	return float64(b*8) / float64(to-from)
}

func (f *flow) close() {
	f.cli.Close()
	f.srv.Close()
}

// fetchFor runs an unbounded fetch for d.
func (f *flow) fetchFor(t *testing.T, d time.Duration) FetchResult {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := f.cli.Fetch(ctx, f.srv.conn.LocalAddr(), 0, f.count)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	return res
}

// One bulk flow fills a 10 Mbit/s link: after slow start its goodput is
// the link's rate less the headers (1448 of 1480 bytes), and the
// handshake takes one round trip before the request and another before
// the first byte.
func TestBulkFillsTheLink(t *testing.T) {
	for _, cc := range Controllers {
		t.Run(cc, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := path(t, 1, bottleneck(10_000_000, 100, 20*time.Millisecond), []netem.Impairment{&netem.Delay{Delay: 20 * time.Millisecond}})
				defer n.Close()
				f := startFlow(t, n, 5000, Config{Congestion: cc})
				defer f.close()
				start := time.Now()
				res := f.fetchFor(t, 20*time.Second)
				// SYN, SYN-ACK, request, then the first segment: two
				// round trips of 40 ms, and the first segment's and the
				// SYN-ACK's serialisation at 10 Mbit/s.
				require.Equal(t, 80*time.Millisecond+(synBytes+HeaderBytes+MSS)*8*time.Second/10_000_000, res.FirstByte.Sub(start))
				g := f.goodput(5, 20)
				t.Logf("goodput %.2f Mbit/s over [5 s, 20 s), %+v", g/1e6, f.srv.Stats())
				ideal := 10e6 * MSS / (MSS + HeaderBytes)
				require.InDelta(t, ideal, g, 0.03*ideal, "goodput %.2f Mbit/s", g/1e6)
				st := f.srv.Stats()
				require.Positive(t, st.Recoveries, "a 100-packet queue overflows: the window is cut")
			})
		})
	}
}

// A finite fetch delivers exactly its bytes, across 2% loss both ways,
// and the sender retransmits what was lost.
func TestFetchDeliversEverythingThroughLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lossy := func(seed float64) []netem.Impairment {
			return []netem.Impairment{&netem.Loss{Probability: 0.02}, &netem.Rate{Rate: 20_000_000}, &netem.Delay{Delay: 10 * time.Millisecond}}
		}
		n := path(t, 3, lossy(1), lossy(2))
		defer n.Close()
		f := startFlow(t, n, 5000, Config{})
		defer f.close()
		const size = 3<<20 + 7 // not a whole number of segments
		res, err := f.cli.Fetch(context.Background(), f.srv.conn.LocalAddr(), size, f.count)
		require.NoError(t, err)
		require.Equal(t, int64(size), res.Bytes)
		require.False(t, res.Done.IsZero())
		var total int64
		for _, b := range f.perSec {
			total += b
		}
		require.Equal(t, int64(size), total)
		st := f.srv.Stats()
		require.Positive(t, st.Retransmits)
		require.GreaterOrEqual(t, st.Segments, int64((size+MSS-1)/MSS)+st.Retransmits)

		// A second fetch on the same client: a new connection.
		res2, err := f.cli.Fetch(context.Background(), f.srv.conn.LocalAddr(), 10_000, nil)
		require.NoError(t, err)
		require.Equal(t, int64(10_000), res2.Bytes)
	})
}

// Two flows of the same controller share a bottleneck about equally
// (Jain's index over their goodputs near 1), and CUBIC takes more than
// Reno from a shared deep queue, as it does in the kernel. Each figure is
// the mean of three runs whose flows start at other times: one run's
// split moves with where the losses fall (two CUBIC flows started
// together split 7.1/2.6 Mbit/s; started apart, 4.5/5.1 to 5.0/4.7).
func TestFlowsShare(t *testing.T) {
	const runs = 3
	mean := func(t *testing.T, a, b string) (float64, float64) {
		var sa, sb float64
		for seed := uint64(1); seed <= runs; seed++ {
			ga, gb := share(t, seed, 200, 15*time.Millisecond, 60, 10, a, b)
			require.InDelta(t, 9.78e6, ga+gb, 0.04*9.78e6)
			sa, sb = sa+ga, sb+gb
		}
		t.Logf("%s %.2f Mbit/s, %s %.2f Mbit/s over [10 s, 60 s), the mean of %d runs", a, sa/runs/1e6, b, sb/runs/1e6, runs)
		return sa / runs, sb / runs
	}
	t.Run("same", func(t *testing.T) {
		for _, cc := range Controllers {
			a, b := mean(t, cc, cc)
			jain := (a + b) * (a + b) / (2 * (a*a + b*b))
			require.Greater(t, jain, 0.95, "%s: %.2f and %.2f Mbit/s", cc, a/1e6, b/1e6)
		}
	})
	t.Run("cubic against reno", func(t *testing.T) {
		c, r := mean(t, CUBIC, Reno)
		require.Greater(t, c, r, "cubic %.2f, reno %.2f Mbit/s", c/1e6, r/1e6)
	})
}

// The wire format reads back what it wrote, and refuses what is not a
// segment.
func TestSegmentRoundTrip(t *testing.T) {
	for _, s := range []segment{
		{typ: typeData, conn: 7, seq: 123456789, ts: 42, length: MSS},
		{typ: typeAck, conn: 1, seq: 10, ts: 99, blocks: [][2]int64{{12, 15}, {20, 21}, {30, 40}}},
		{typ: typeSYN, conn: 3, ts: 5},
	} {
		b := s.encode(nil, 0)
		got, ok := decode(b)
		require.True(t, ok)
		if len(s.blocks) == 0 {
			s.blocks = nil
		}
		require.Equal(t, s, got)
	}
	for _, b := range [][]byte{nil, make([]byte, 10), make([]byte, 40)} {
		_, ok := decode(b)
		require.False(t, ok)
	}
	// A corrupted segment is refused, not read as a strange one: a SACK
	// block that is empty, reversed or negative, more blocks than an ACK
	// holds, a data segment of no payload or more than an MSS.
	for name, s := range map[string]segment{
		"empty block":        {typ: typeAck, blocks: [][2]int64{{12, 12}}},
		"reversed block":     {typ: typeAck, blocks: [][2]int64{{15, 12}}},
		"negative block":     {typ: typeAck, blocks: [][2]int64{{-4, 12}}},
		"too many blocks":    {typ: typeAck, blocks: [][2]int64{{1, 2}, {3, 4}, {5, 6}, {7, 8}}},
		"no payload":         {typ: typeData, length: 0},
		"more than an MSS":   {typ: typeData, length: MSS + 1},
		"negative seq":       {typ: typeData, seq: -1, length: 10},
		"type past the last": {typ: typeAck + 1},
	} {
		_, ok := decode(s.encode(nil, 0))
		require.False(t, ok, name)
	}
	require.Equal(t, HeaderBytes+MSS, len(segment{typ: typeData, length: MSS}.encode(nil, HeaderBytes+MSS)))
	require.Equal(t, 60, ackSize(3), "TCP's ACK with three SACK blocks and timestamps")
}
