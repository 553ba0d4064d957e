package tcplike

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// ecnRun runs one bulk flow for 15 s through 10 Mbit/s with a 1000-packet
// CoDel queue and 20 ms each way, and returns the downlink's counters, the
// server's and the client's.
func ecnRun(t *testing.T, ecn string) (netem.Stats, SenderStats, FetchResult, float64) {
	var st netem.Stats
	var ss SenderStats
	var res FetchResult
	var g float64
	synctest.Test(t, func(t *testing.T) {
		down := []netem.Impairment{&netem.Rate{Rate: 10_000_000, Queue: netem.QueueLimit{Packets: 1000, CoDel: &netem.CoDelParams{}}},
			&netem.Delay{Delay: 20 * time.Millisecond}}
		n := path(t, 1, down, []netem.Impairment{&netem.Delay{Delay: 20 * time.Millisecond}})
		defer n.Close()
		f := startFlow(t, n, 5000, Config{Congestion: Reno, ECN: ecn})
		defer f.close()
		res = f.fetchFor(t, 15*time.Second)
		st, ss, g = n.Link(serverIP, clientIP).Stats(), f.srv.Stats(), f.goodput(3, 15)
	})
	return st, ss, res, g
}

func TestECNClassicFlowIsMarkedNotDropped(t *testing.T) {
	st, ss, res, g := ecnRun(t, "")
	t.Logf("not-ect: goodput %.2f Mbit/s, drops %v, marks %d, %+v", g/1e6, st.Dropped, st.Marked.Packets, ss)
	require.Positive(t, st.Dropped[netem.DropCoDel].Packets)
	require.Zero(t, st.Marked.Packets)
	require.Zero(t, res.Marked)

	st, ss, res, g = ecnRun(t, ECNClassic)
	t.Logf("classic: goodput %.2f Mbit/s, drops %v, marks %d, %+v", g/1e6, st.Dropped, st.Marked.Packets, ss)
	require.Zero(t, st.DroppedTotal().Packets, "an ECN-capable flow loses nothing to CoDel")
	require.Positive(t, st.Marked.Packets)
	require.Equal(t, int64(st.Marked.Packets), res.Marked, "the client sees every mark")
	require.Equal(t, res.Marked, ss.Marked, "and echoes each")
	require.Zero(t, ss.Retransmits)
	// At most once per window, and the flow carries what it did when
	// dropped from (Reno behind CoDel's 5 ms leaves part of the link
	// unused either way).
	require.Positive(t, ss.ECNCuts)
	require.LessOrEqual(t, ss.ECNCuts, ss.Marked)
	require.Greater(t, g, 0.8*10e6*MSS/(MSS+HeaderBytes))
}

func TestECNL4SScalableResponse(t *testing.T) {
	// RFC 8257: alpha is the moving average (g = 1/16) of the fraction of
	// segments marked per window, and a window with a mark cuts cwnd by
	// alpha/2.
	// The sender keeps a window of 100 segments ahead of the one being
	// acknowledged.
	s := &sender{cfg: Config{ECN: ECNL4S}, cwnd: 100, ssthresh: 1000, next: 100}
	s.dctcp.alpha, s.dctcp.windowEnd = 1, 100
	window := func(marked int) {
		s.next += 100
		for i := range 100 {
			s.una++
			s.dctcp.ack(s, 1, i < marked)
		}
	}
	window(25)
	require.InDelta(t, 15.0/16+0.25/16, s.dctcp.alpha, 1e-9)
	for range 200 {
		window(25)
	}
	require.InDelta(t, 0.25, s.dctcp.alpha, 0.01, "alpha converges to the fraction marked")
	s.ecnCut(time.Time{})
	require.InDelta(t, 100*(1-s.dctcp.alpha/2), s.cwnd, 1e-9)

	// Through CoDel, an L4S flow is marked, never dropped, and fills the
	// link with smaller cuts than classic ECN's.
	st, ss, _, g := ecnRun(t, ECNL4S)
	t.Logf("l4s: goodput %.2f Mbit/s, drops %v, marks %d, queue mean %v, %+v", g/1e6, st.Dropped, st.Marked.Packets, st.Queued.Mean(), ss)
	require.Zero(t, st.DroppedTotal().Packets)
	require.Positive(t, ss.ECNCuts)
	require.Greater(t, g, 0.95*10e6*MSS/(MSS+HeaderBytes), "small cuts keep the link full")
}

// srtt is the smoothed round trip of the server's one connection.
func (f *flow) srtt() time.Duration {
	f.srv.mu.Lock()
	defer f.srv.mu.Unlock()
	for _, c := range f.srv.conns {
		if c.sender != nil {
			return c.sender.srtt
		}
	}
	return 0
}

// An L4S flow (DCTCP-like) and a classic CUBIC flow share 10 Mbit/s under
// DualPI2, 20 ms each way: the L4S flow sees its queue at about a
// millisecond, the classic one a deeper queue bounded by the PI controller
// (its smoothed round trip sampled once, at 14 s), and neither starves.
//
// The model sends unpaced: an acknowledgement of two segments lets two
// go back to back, and at 10 Mbit/s a full-sized packet takes 1.2 ms to
// serialise, so behind RFC 9332's 1 ms step the second of every pair is
// marked and the L4S flow starves (0.6 Mbit/s, every other segment
// marked). So the flows' receivers acknowledge every segment under the
// 1 ms step, and delay their acknowledgements, as Linux's do, under a step
// of two packets' serialisation (2.5 ms: Linux's dualpi2 can also set its
// step in packets). L4S senders pace (RFC 9331's Prague requirements),
// which the model does not.
func TestDualPI2L4SFlowBesideAClassicFlow(t *testing.T) {
	for _, c := range []struct {
		name            string
		step            time.Duration
		ackEverySegment bool
	}{
		{"every segment acknowledged, 1 ms step", 0, true},
		{"delayed acknowledgements, 2.5 ms step", 2500 * time.Microsecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				down := []netem.Impairment{&netem.Rate{Rate: 10_000_000, Queue: netem.QueueLimit{DualPI2: &netem.DualPI2Params{Step: c.step}}},
					&netem.Delay{Delay: 20 * time.Millisecond}}
				n := path(t, 1, down, []netem.Impairment{&netem.Delay{Delay: 20 * time.Millisecond}})
				defer n.Close()
				l4s := startFlow(t, n, 5000, Config{ECN: ECNL4S})
				defer l4s.close()
				classic := startFlow(t, n, 5001, Config{})
				defer classic.close()
				l4s.cli.AckEverySegment, classic.cli.AckEverySegment = c.ackEverySegment, c.ackEverySegment
				var wg sync.WaitGroup
				var lSRTT, cSRTT time.Duration
				wg.Go(func() {
					time.Sleep(14 * time.Second)
					lSRTT, cSRTT = l4s.srtt(), classic.srtt()
				})
				wg.Go(func() { l4s.fetchFor(t, 15*time.Second) })
				wg.Go(func() { classic.fetchFor(t, 15*time.Second) })
				wg.Wait()
				gl, gc := l4s.goodput(5, 15), classic.goodput(5, 15)
				st := n.Link(serverIP, clientIP).Stats()
				t.Logf("L4S: srtt %v, %.2f Mbit/s, %+v; classic: srtt %v, %.2f Mbit/s, %+v; link drops %v, marks %d",
					lSRTT, gl/1e6, l4s.srv.Stats(), cSRTT, gc/1e6, classic.srv.Stats(), st.Dropped, st.Marked.Packets)
				base := 40 * time.Millisecond
				require.Less(t, lSRTT-base, 5*time.Millisecond, "the L4S queue stays shallow")
				require.Greater(t, cSRTT-lSRTT, 2*time.Millisecond, "the classic flow sees a deeper queue")
				require.Less(t, cSRTT-base, 25*time.Millisecond, "but one the PI controller bounds")
				require.Greater(t, gl, 1e6)
				require.Greater(t, gc, 1e6)
				require.Greater(t, gl+gc, 0.85*10e6*MSS/(MSS+HeaderBytes))
			})
		})
	}
}
