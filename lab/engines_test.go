//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/internal/timerprobe"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/kernel"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/viewer"
)

// One engine, three clocks, one answer: the same sessions over the
// in-memory network in virtual time, over loopback through the real-time
// proxy, and across the kernel mode's namespaces must give the same figures
// within run-to-run noise.
//
// The engines are compared seed by seed. A link draws each packet's fate from
// its seed and the packet's place in the link's sequence, so the same seed
// gives the same packets the same losses in every engine; a paired comparison
// then sees the engines' differences instead of the seeds' (one seed's 8 s
// goodput differs from another's by 10%, the same seed's in two engines by
// 1 to 3%).
//
// Packet sizes: over a real socket quic-go sets the DF bit and its path MTU
// discovery grows packets from 1280 to 1441 bytes of UDP payload, and the
// in-memory PacketConn now takes DF too (netem's path MTU), so every engine
// grows them alike. (An InitialPacketSize above about 1300 instead makes
// quic-go v0.65 spin at a frozen instant in a bubble: its pacer keeps the
// 1280-byte datagram size while its congestion controller takes the
// configured one.) The bulk flows here still turn discovery off in every
// engine, as when only real sockets had it: their figures were taken so,
// and NewReno's loss-limited goodput grows with the packet size. The media
// sessions keep the defaults, as the lab's sessions run them.

// engineSeeds are the seeds every engine runs.
var engineSeeds = []uint64{1, 2, 3, 4}

// The sessions' shape. Media: a fixed 1 Mbit/s video on the documented bad
// link both ways for 10 s, latencies from 2 s. At 1 Mbit/s a frame is one
// or two packets, so the 1% loss delays about 2% of the frames and the p90
// is the pipeline's and the link's; at 2 Mbit/s the p95 sits on the edge of
// the frames that wait for a retransmission and moved from 61 to 654 ms over
// 20 virtual seeds, too wide to compare anything. Bulk: 10 s of QUIC bulk on
// the same link, goodput over the window after a 2 s warm-up (as the
// congestion-controller grid measures it), with 1280-byte packets everywhere.
const (
	engineMediaDuration = 10 * time.Second
	engineMediaFrom     = 2 * time.Second
	engineMediaBps      = 1_000_000
	engineBulkDuration  = 10 * time.Second
	engineBulkWarmup    = 2 * time.Second
	// engineQUICPayload is the largest UDP payload of a QUIC packet with
	// path MTU discovery off (quic-go's initial packet size).
	engineQUICPayload = 1280
)

// The bounds. They were set on the whole latency (capture to display), when
// the viewer dropped a late frame and asked for nothing; since it follows
// the reference chain the test compares the network part under the wait
// policy (median 28.49 ms virtual, 28.86 proxy, 29.09 kernel; p95 28.50,
// 29.33, 29.73 ms, one run on 2026-12-02; p90 28.50, 28.89 to 28.92, 29.08
// to 29.11 ms and p99 86.54 to 86.54, 86.73 to 87.02, 87.26 to 87.84 ms in
// three runs on 2026-12-03), which the real-time timers' lateness touches
// less, so the bounds hold with more room. They came from
// three runs of this test on the shared 2-core
// machine (load average 3.5, the real-time runs side by side as here), 4
// seeds each, against 20 seeds of the virtual runs:
//
//   - virtual media: median 41.52 ms and p95 41.54 ms at every seed (sd
//     under 1 ms over 20 seeds); bulk goodput 2.65 to 3.54 Mbit/s over 20
//     seeds (sd 0.31), repeated per seed to within 1%.
//   - proxy and kernel media: pooled median 42.70 to 42.96 ms, p95 45.0 to
//     45.7 ms; from run to run the median moved by 0.1 ms and the p95 by
//     0.7 ms. Bulk: each seed's goodput 0.974 to 0.991 of the virtual one,
//     the mean over the seeds 0.984 to 0.987 (proxy) and 0.976 to 0.983
//     (kernel), moving by 0.007 from run to run.
//
// So in real time the media median is 1.2 to 1.4 ms and the p95 3.5 to 4.2
// ms longer than in virtual time, well outside the runs' noise, and the same
// in both real-time engines: the per-stage medians put it in the models'
// waits (encode 9 ms becomes 9.59, decode 3 ms 3.27, conversion 1 ms 1.09)
// and 0.27 ms in the network path (sockets, the proxy's or the TUN's hop):
// a runtime timer fires late in real time, never early, while the links
// themselves keep time precisely. That offset is the real-time clock's, not
// an engine's disagreement, so it is allowed one-sided and by name
// (realTimeLateness*), and the two real-time engines, which share it, are
// held to each other within their noise. The bulk runs lose 1.5 to 2.5%
// in real time for the same reason (quic-go's pacing and acknowledgement
// timers) and, in the kernel mode, because its links serialise the 28 bytes
// of IP and UDP header that the other engines' links do not count. So the
// goodput, like the latency, is bounded one-sided: a little more is lost
// to a busy machine's late timers, and no more than noise gained.
const (
	// realTimeLatenessMedian and realTimeLatenessTail bound how much longer
	// a real-time engine's pooled median, p90 and p99 may be than the virtual
	// ones: the measured offset (1.4 and 4.2 ms at most) and as much again
	// for a busier machine.
	realTimeLatenessMedian = 3 * time.Millisecond
	realTimeLatenessTail   = 8 * time.Millisecond
	// realTimeEarly is how much shorter they may be: timers are never
	// early, so this is only rounding and the links' precise timers' slack.
	realTimeEarly = 500 * time.Microsecond
	// engineTailEarly is realTimeEarly for the p99 of the network part,
	// which lies among the frames that waited for a retransmission (1.5 to
	// 2.3% of them, 86.5 to 87.0 ms in virtual time): which frames those
	// are moves a little from run to run, so a real-time engine's may come
	// out a little lower: one packet's time on the 5 Mbit/s link, 2 ms.
	//
	// The p95 is not compared: the network part's distribution has steps
	// (a frame of one packet, 28.5 ms; of two, 30.0; a packet sent again,
	// 32 and 87), and the p95 lands on whichever step the run's 5% falls
	// on. Pooled over the same four seeds in virtual time it came out
	// 28.50, 29.98 and 32.04 ms in three runs (the engines' goroutines meet
	// at the same virtual instant in a different order from run to run),
	// and a CI run failed on the last. The p90 (28.50 ms in 24 virtual
	// runs of a seed) and the p99 sit on flat parts of it.
	engineTailEarly = 2 * time.Millisecond
	// engineRealMedianTol and engineRealTailTol bound the difference
	// between the two real-time engines (measured: median 0.1 to 0.26 ms,
	// p95 0 to 0.7 ms; p90 0.16 to 0.21 ms and p99 0.23 to 1.1 ms in three
	// runs on 2026-12-03): several times the run-to-run movement.
	engineRealMedianTol = 1 * time.Millisecond
	engineRealTailTol   = 3 * time.Millisecond
	// engineGoodputGain bounds how much more goodput a real-time engine may
	// carry than virtual time: the mean over the seeds of each seed's ratio
	// to the virtual run of the same seed, minus one. 1441-byte packets
	// against 1280-byte ones gained 12.6%, which this fails.
	engineGoodputGain = 0.05
	// engineGoodputLoss bounds how much less it may carry. Late timers cost
	// real time goodput, never gain it: 1.5 to 2.5% on a quiet machine,
	// 5.1 to 5.5% with the load average at 4 to 7 (other tests beside it,
	// as under go test ./...); twice that.
	engineGoodputLoss = 0.10
)

// engineFigures is what one engine measured for one seed.
type engineFigures struct {
	latencies []time.Duration
	goodput   float64 // bulk goodput over the window, bit/s
	bulk      bulkFigures
}

// bulkFigures is one bulk flow's packets, to show that the engines carry
// the same ones.
type bulkFigures struct {
	goodput float64
	// sent and lost are quic-go's counts at the sender.
	sent, lost uint64
	// data and acks are the counters of the link the data crosses and of
	// the one the acknowledgements cross.
	data, acks netem.Stats
	// largest is the largest UDP payload the data link carried.
	largest int
}

// TestEnginesAgree runs the same media session and the same QUIC bulk flow
// over the three engines and checks that they agree: the media latency's
// median, p90 and p99, and the bulk goodput. The virtual runs come first, alone,
// so that their CPU does not delay the real-time ones; then each real-time
// engine's runs (all seeds, media and bulk) run side by side, about 12.5 s
// of wall time an engine. Without kernel mode (not root, no
// /dev/net/tun) the kernel engine is skipped through requireKernel, and the
// proxy is still compared.
func TestEnginesAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: real-time sessions take their real duration")
	}
	// A frame waits on four timers or so (capture, conversion, encode,
	// decode): timers 3 ms late at their p99 put the p90 near the 8 ms
	// realTimeLatenessTail allows for the real-time clock.
	timerprobe.Require(t, 3*time.Millisecond)
	virtual := map[uint64]*engineFigures{}
	for _, seed := range engineSeeds {
		virtual[seed] = &engineFigures{}
		t.Run(fmt.Sprintf("virtual/media/seed%d", seed), func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			synctest.Test(t, func(t *testing.T) {
				res, err := RunSession(engineMediaSession(seed))
				require.NoError(t, err)
				virtual[seed].latencies = networkLatencies(res, engineMediaFrom)
			})
		})
		t.Run(fmt.Sprintf("virtual/bulk/seed%d", seed), func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed)
			synctest.Test(t, func(t *testing.T) {
				b, err := virtualBulk(t.Context(), seed)
				require.NoError(t, err)
				virtual[seed].bulk = b
			})
		})
	}

	type realEngine struct {
		name    string
		media   func(Session) Session
		bulk    func(ctx context.Context, seed uint64) (bulkFigures, error)
		require func(t *testing.T)
		// header is what the engine's links count beyond the UDP payload.
		header int
	}
	engines := []realEngine{
		{name: "proxy", media: func(s Session) Session { s.Transport = transport.RealTime{}; return s }, bulk: proxyBulk, require: func(*testing.T) {}},
		{name: "kernel", media: func(s Session) Session { s.Transport = transport.Kernel{}; return s }, bulk: kernelBulk,
			require: func(t *testing.T) { requireKernel(t) }, header: 28},
	}
	// One engine at a time, its runs (every seed's media session and bulk
	// flow) side by side on goroutines of their own: both engines at once
	// put sixteen real-time runs on two cores, whose late timers then
	// measured the machine rather than the engines.
	measured := map[string]map[uint64]*engineFigures{}
	t.Run("real", func(t *testing.T) {
		for _, e := range engines {
			figs := map[uint64]*engineFigures{}
			measured[e.name] = figs
			t.Run(e.name, func(t *testing.T) {
				e.require(t)
				var wg sync.WaitGroup
				errs := make(chan error, 2*len(engineSeeds))
				for _, seed := range engineSeeds {
					f := &engineFigures{}
					figs[seed] = f
					wg.Go(func() {
						res, err := RunSession(e.media(engineMediaSession(seed)))
						if err != nil {
							errs <- fmt.Errorf("media, seed %d: %w", seed, err)
							return
						}
						f.latencies = networkLatencies(res, engineMediaFrom)
					})
					wg.Go(func() {
						b, err := e.bulk(t.Context(), seed)
						if err != nil {
							errs <- fmt.Errorf("bulk, seed %d: %w", seed, err)
							return
						}
						f.bulk = b
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})
		}
	})

	for _, e := range engines {
		t.Run("compare/"+e.name, func(t *testing.T) {
			got := measured[e.name]
			for _, seed := range engineSeeds {
				if f := got[seed]; f == nil || f.latencies == nil || f.bulk.goodput == 0 {
					t.Skipf("skipping: the %s runs did not all complete or the -run filter left them out (see their subtests)", e.name)
				}
				if v := virtual[seed]; v.latencies == nil || v.bulk.goodput == 0 {
					t.Skip("skipping: the virtual runs did not all complete or the -run filter left them out (see their subtests)")
				}
			}
			compareEngines(t, e.name, e.header, virtual, got)
		})
	}
	// The two real-time engines share the real-time clock's lateness, so
	// they are held to each other within their noise alone.
	t.Run("compare/proxy-kernel", func(t *testing.T) {
		var pLat, kLat []time.Duration
		for _, seed := range engineSeeds {
			p, k := measured["proxy"][seed], measured["kernel"][seed]
			if p == nil || k == nil || p.latencies == nil || k.latencies == nil {
				t.Skip("skipping: the proxy or the kernel runs did not all complete (see their subtests)")
			}
			pLat, kLat = append(pLat, p.latencies...), append(kLat, k.latencies...)
		}
		pm, km := pct(pLat, 0.5), pct(kLat, 0.5)
		p90p, p90k := pct(pLat, 0.90), pct(kLat, 0.90)
		p99p, p99k := pct(pLat, 0.99), pct(kLat, 0.99)
		t.Logf("median proxy %v kernel %v; p90 proxy %v kernel %v; p99 proxy %v kernel %v", pm, km, p90p, p90k, p99p, p99k)
		require.InDelta(t, float64(pm), float64(km), float64(engineRealMedianTol), "media median: proxy %v, kernel %v", pm, km)
		require.InDelta(t, float64(p90p), float64(p90k), float64(engineRealTailTol), "media p90: proxy %v, kernel %v", p90p, p90k)
		require.InDelta(t, float64(p99p), float64(p99k), float64(engineRealTailTol), "media p99: proxy %v, kernel %v", p99p, p99k)
	})
}

// compareEngines checks one real-time engine against the virtual one.
//
// Media: each engine's latencies of all seeds are pooled (about 1900
// frames), and the pooled median, p90 and p99 compared, the real-time ones
// allowed the real-time clock's lateness (see the bounds).
//
// Bulk: per seed, the goodput ratio to the virtual run of the same seed;
// the mean of the ratios must be at most engineGoodputGain above one and
// engineGoodputLoss below it.
func compareEngines(t *testing.T, name string, header int, virtual, got map[uint64]*engineFigures) {
	var vLat, gLat []time.Duration
	var ratios []float64
	for _, seed := range engineSeeds {
		v, g := virtual[seed], got[seed]
		vLat = append(vLat, v.latencies...)
		gLat = append(gLat, g.latencies...)
		ratios = append(ratios, g.bulk.goodput/v.bulk.goodput)

		// The same packets cross the links: no packet larger than
		// quic-go's, and as many link packets as QUIC packets (a GSO
		// super-packet crossing as one would show as fewer, larger ones).
		require.LessOrEqual(t, g.bulk.largest-header, engineQUICPayload, "seed %d: a packet larger than QUIC's crossed the %s link", seed, name)
		require.InEpsilon(t, float64(g.bulk.sent), float64(g.bulk.data.Offered.Packets), 0.01, "seed %d: QUIC packets sent vs link packets", seed)
		t.Logf("seed %d bulk: virtual %.3f Mbit/s (%d sent, %d lost; link %d/%d data, %d/%d acks), %s %.3f Mbit/s (%d sent, %d lost; link %d/%d data, %d/%d acks): ratio %.3f",
			seed, v.bulk.goodput/1e6, v.bulk.sent, v.bulk.lost,
			v.bulk.data.Dropped[netem.DropLoss].Packets, v.bulk.data.Offered.Packets, v.bulk.acks.Dropped[netem.DropLoss].Packets, v.bulk.acks.Offered.Packets,
			name, g.bulk.goodput/1e6, g.bulk.sent, g.bulk.lost,
			g.bulk.data.Dropped[netem.DropLoss].Packets, g.bulk.data.Offered.Packets, g.bulk.acks.Dropped[netem.DropLoss].Packets, g.bulk.acks.Offered.Packets,
			ratios[len(ratios)-1])
		t.Logf("seed %d media: virtual median %v p90 %v p99 %v, %s median %v p90 %v p99 %v", seed,
			pct(v.latencies, 0.5), pct(v.latencies, 0.90), pct(v.latencies, 0.99),
			name, pct(g.latencies, 0.5), pct(g.latencies, 0.90), pct(g.latencies, 0.99))
	}
	vMed, gMed := pct(vLat, 0.5), pct(gLat, 0.5)
	vP90, gP90 := pct(vLat, 0.90), pct(gLat, 0.90)
	vP99, gP99 := pct(vLat, 0.99), pct(gLat, 0.99)
	var sum float64
	for _, r := range ratios {
		sum += r
	}
	meanRatio := sum / float64(len(ratios))
	t.Logf("pooled: median virtual %v %s %v (%+v); p90 virtual %v %s %v (%+v); p99 virtual %v %s %v (%+v); goodput ratio %.3f",
		vMed, name, gMed, gMed-vMed, vP90, name, gP90, gP90-vP90, vP99, name, gP99, gP99-vP99, meanRatio)
	inLateness := func(what string, v, g, early, late time.Duration) {
		t.Helper()
		if g < v-early || g > v+late {
			t.Errorf("media %s: virtual %v, %s %v: %+v, outside [-%v, +%v]", what, v, name, g, g-v, early, late)
		}
	}
	inLateness("median", vMed, gMed, realTimeEarly, realTimeLatenessMedian)
	inLateness("p90", vP90, gP90, realTimeEarly, realTimeLatenessTail)
	inLateness("p99", vP99, gP99, engineTailEarly, realTimeLatenessTail)
	require.LessOrEqual(t, meanRatio, 1+engineGoodputGain, "bulk goodput: %s over virtual, mean of the seeds' ratios %v", name, ratios)
	require.GreaterOrEqual(t, meanRatio, 1-engineGoodputLoss, "bulk goodput: %s over virtual, mean of the seeds' ratios %v", name, ratios)
}

// networkLatencies are the network parts (end of encoding to arrival) of
// the frames displayed that were captured from from on: what the engines
// deliver, without the viewer's waits for a frame held back, which its
// policy decides and which would make the engines' small differences in
// delivery large.
func networkLatencies(r *Result, from time.Duration) []time.Duration {
	var out []time.Duration
	for _, f := range r.Displayed() {
		if f.Captured.Sub(r.Start) >= from {
			out = append(out, f.Network())
		}
	}
	return out
}

// pct is the nearest-rank quantile of ds, as the scenario measures take it.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return quantile.Nearest(s, p)
}

// engineMediaSession is the media session every engine runs.
func engineMediaSession(seed uint64) Session {
	return Session{
		Seed: seed, Duration: engineMediaDuration, Lead: HandshakeLead,
		Uplink: netem.DocumentedBadLink(), Downlink: netem.DocumentedBadLink(),
		// The budget's sizes: a video at the bitrate, whatever the content.
		Agent: agent.Config{Controller: agent.Fixed{Bps: engineMediaBps}, Software: budgetPreset()},
		// Frames decoded in order, so that no keyframe is asked for: the
		// engines' delivery is what is compared. Under drop, one frame
		// reordered more or less by an engine breaks the reference chain
		// once more, and the keyframe asked for changes the traffic.
		Viewer: viewer.Config{Policy: viewer.PolicyWait},
	}
}

// engineBulkLinks are the bulk flow's links, named and seeded alike in
// every engine so that their fates are the same.
func engineBulkLinks(seed uint64, data, acks *sizeTap) (dataLink, ackLink netem.LinkConfig) {
	return netem.LinkConfig{Name: "bulk-data", Seed: seed, Impairments: netem.DocumentedBadLink(), Tap: data},
		netem.LinkConfig{Name: "bulk-acks", Seed: seed, Impairments: netem.DocumentedBadLink(), Tap: acks}
}

// engineQUICConfig turns path MTU discovery off, so that every engine sends
// quic-go's initial 1280-byte packets.
func engineQUICConfig() *quic.Config { return &quic.Config{DisablePathMTUDiscovery: true} }

// virtualBulk runs the bulk flow over the in-memory network; call it in a
// synctest bubble.
func virtualBulk(ctx context.Context, seed uint64) (bulkFigures, error) {
	data, acks := &sizeTap{}, &sizeTap{}
	dl, al := engineBulkLinks(seed, data, acks)
	n := netem.NewNetwork(seed)
	defer n.Close()
	sender, receiver := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	if _, err := n.SetLink(sender, receiver, dl); err != nil {
		return bulkFigures{}, err
	}
	if _, err := n.SetLink(receiver, sender, al); err != nil {
		return bulkFigures{}, err
	}
	p, err := quicpair.Open(ctx, n.MustListen("10.0.0.2:4433"), n.MustListen("10.0.0.1:5000"), nil, engineQUICConfig())
	if err != nil {
		return bulkFigures{}, err
	}
	defer p.Close()
	return windowedBulk(ctx, p, data, func() (netem.Stats, netem.Stats) {
		return n.Link(sender, receiver).Stats(), n.Link(receiver, sender).Stats()
	})
}

// proxyBulk runs the bulk flow over loopback through the real-time proxy.
func proxyBulk(ctx context.Context, seed uint64) (bulkFigures, error) {
	data, acks := &sizeTap{}, &sizeTap{}
	dl, al := engineBulkLinks(seed, data, acks)
	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	server, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return bulkFigures{}, err
	}
	defer server.Close()
	client, err := net.ListenUDP("udp", loopback)
	if err != nil {
		return bulkFigures{}, err
	}
	defer client.Close()
	proxy, err := netem.NewProxy(netem.ProxyConfig{Target: server.LocalAddr().String(), Forward: dl, Reverse: al})
	if err != nil {
		return bulkFigures{}, err
	}
	defer proxy.Close()
	p, err := quicpair.Open(ctx, server, client, proxy.Addr(), engineQUICConfig())
	if err != nil {
		return bulkFigures{}, err
	}
	defer p.Close()
	return windowedBulk(ctx, p, data, proxy.Stats)
}

// kernelBulk runs the bulk flow between a UDP socket in namespace A and
// one in B, across the kernel mode's links.
func kernelBulk(ctx context.Context, seed uint64) (bulkFigures, error) {
	data, acks := &sizeTap{}, &sizeTap{}
	dl, al := engineBulkLinks(seed, data, acks)
	pair, err := kernel.New(kernel.Config{AtoB: dl, BtoA: al})
	if err != nil {
		return bulkFigures{}, err
	}
	defer pair.Close()
	var sendConn, recvConn *net.UDPConn
	if err := pair.InA(func() (err error) {
		sendConn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrA().AsSlice()})
		return err
	}); err != nil {
		return bulkFigures{}, err
	}
	defer sendConn.Close()
	if err := pair.InB(func() (err error) {
		recvConn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrB().AsSlice()})
		return err
	}); err != nil {
		return bulkFigures{}, err
	}
	defer recvConn.Close()
	p, err := quicpair.Open(ctx, recvConn, sendConn, nil, engineQUICConfig())
	if err != nil {
		return bulkFigures{}, err
	}
	defer p.Close()
	return windowedBulk(ctx, p, data, pair.Stats)
}

// windowedBulk sends as fast as QUIC allows from p.Client to p.Server for
// engineBulkDuration and returns the goodput over the window after
// engineBulkWarmup: the receiver's count is read by a timer at the warm-up's
// end and when the sender's deadline passes. stats returns the data link's
// and the acknowledgement link's counters.
func windowedBulk(ctx context.Context, p *quicpair.Pair, data *sizeTap, stats func() (netem.Stats, netem.Stats)) (bulkFigures, error) {
	var received atomic.Int64
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		s, err := p.Server.AcceptStream(ctx)
		if err != nil {
			return
		}
		_, _ = io.Copy(countingWriter{&received}, s)
	}()
	// Closing the client ends the receiver's stream, so that its goroutine
	// ends inside the call (and inside a bubble).
	defer func() {
		p.Client.CloseWithError(0, "done")
		<-readDone
	}()
	s, err := p.Client.OpenStreamSync(ctx)
	if err != nil {
		return bulkFigures{}, err
	}
	start := time.Now()
	type mark struct {
		bytes int64
		at    time.Time
	}
	warm := make(chan mark, 1)
	timer := time.AfterFunc(engineBulkWarmup, func() { warm <- mark{received.Load(), time.Now()} })
	defer timer.Stop()
	if err := s.SetWriteDeadline(start.Add(engineBulkDuration)); err != nil {
		return bulkFigures{}, err
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := s.Write(chunk); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return bulkFigures{}, err
			}
			break
		}
	}
	end := mark{received.Load(), time.Now()}
	var b bulkFigures
	b.data, b.acks = stats()
	st := p.Client.ConnectionStats()
	b.sent, b.lost = st.PacketsSent, st.PacketsLost
	s.CancelWrite(0)
	w := <-warm
	b.goodput = float64(end.bytes-w.bytes) * 8 / end.at.Sub(w.at).Seconds()
	b.largest = data.largest()
	return b, nil
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n *atomic.Int64 }

func (w countingWriter) Write(b []byte) (int, error) {
	w.n.Add(int64(len(b)))
	return len(b), nil
}

// sizeTap records the largest packet a link was offered.
type sizeTap struct{ max atomic.Int64 }

// Entered implements netem.Tap.
func (s *sizeTap) Entered(p *netem.Packet, _ netem.Fate) {
	for n := int64(p.Size()); ; {
		m := s.max.Load()
		if n <= m || s.max.CompareAndSwap(m, n) {
			return
		}
	}
}

// Left implements netem.Tap.
func (*sizeTap) Left(*netem.Packet) {}

func (s *sizeTap) largest() int { return int(s.max.Load()) }

var _ netem.Tap = (*sizeTap)(nil)
