package netem

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pieOverload sends 1200-byte packets carrying ecn every gap for dur into a
// 10 Mbit/s rate behind a 1000-packet buffer with PIE, and returns the waits
// of the packets sent in the second half and the drops and marks.
func pieOverload(t *testing.T, gap, dur time.Duration, ecn ECN) (waits []time.Duration, drops map[DropReason]int, marks int) {
	lim := QueueLimit{Packets: 1000, PIE: &PIEParams{}}
	d := newBNDriver(t, &Rate{Rate: 10_000_000, Queue: lim})
	d.env.Rand = rand.New(rand.NewPCG(1, 2))
	drops = map[DropReason]int{}
	for at := time.Duration(0); at < dur; at += gap {
		v := d.imp.Apply(&Packet{Data: make([]byte, 1200), ECN: ecn}, t0.Add(at), &d.env)
		if v.Drop != "" {
			drops[v.Drop]++
			continue
		}
		if v.Marked {
			marks++
		}
		if at >= dur/2 {
			waits = append(waits, v.Queued)
		}
	}
	return waits, drops, marks
}

func TestPIEHoldsTheQueueDelayNearItsTarget(t *testing.T) {
	// Unresponsive traffic 20% above the 10 Mbit/s link (1200 bytes every
	// 800 µs, 0.96 ms to send each) for 30 s: drop-tail would fill the
	// 1000-packet buffer (almost a second); PIE drops a sixth of the
	// packets and holds the delay near 15 ms.
	const gap, dur = 800 * time.Microsecond, 30 * time.Second
	waits, drops, marks := pieOverload(t, gap, dur, NotECT)
	med := bnMedian(waits)
	t.Logf("second half: median wait %v (p10 %v, p90 %v), drops %v, marks %d",
		med, waits[len(waits)/10], waits[len(waits)*9/10], drops, marks)
	require.Zero(t, drops[DropQueue], "PIE keeps the queue off its limit")
	require.Zero(t, marks)
	require.InDelta(t, DefaultPIETarget.Seconds(), med.Seconds(), 0.005, "median wait near the 15 ms target")
	sent := float64(dur / gap)
	require.InDelta(t, sent/6, float64(drops[DropPIE]), sent/100, "drops the excess")
}

func TestPIEBurstAllowanceLetsABurstThrough(t *testing.T) {
	// A burst of 100 ms of queue into an idle PIE: nothing dropped.
	d := newBNDriver(t, &Rate{Rate: 10_000_000, Queue: QueueLimit{PIE: &PIEParams{}}})
	for i := range 100 {
		require.Empty(t, d.send(1200, time.Second+time.Duration(i)*10*time.Microsecond).Drop)
	}
}

func TestECNPIEMarksBelowTenPercentAndDropsAbove(t *testing.T) {
	// RFC 8033 section 5.1: an ECN-capable packet is marked while p is
	// below 10%, dropped above; a packet that is not, dropped.
	c := &PIEParams{}
	rng := rand.New(rand.NewPCG(5, 6))
	count := func(p float64, ecn ECN) (drops, marks int) {
		s := pieState{started: true, p: p, qdelayOld: c.target()}
		for range 10000 {
			drop, mark := s.decide(c, 100*pieMeanPacket, ecn.Capable(), rng)
			if drop {
				drops++
			}
			if mark {
				marks++
			}
		}
		return drops, marks
	}
	// The de-randomisation lets no signal through before the accumulated
	// probability reaches 0.85: about one packet in 37 at p=5% (17 + 1/p),
	// one in 9 at p=20%.
	for _, ecn := range []ECN{ECT0, ECT1} {
		drops, marks := count(0.05, ecn)
		require.Zero(t, drops, "%v at p=5%%", ecn)
		require.InDelta(t, 270, marks, 60, "%v at p=5%%", ecn)
		drops, marks = count(0.2, ecn)
		require.Zero(t, marks, "%v at p=20%%", ecn)
		require.InDelta(t, 1100, drops, 200, "%v at p=20%%", ecn)
	}
	drops, marks := count(0.05, NotECT)
	require.Zero(t, marks)
	require.InDelta(t, 270, drops, 60)

	// Unresponsive ECT traffic 5% above the link: marks first, and drops
	// once marking alone lets p grow past 10%.
	_, drops2, marks2 := pieOverload(t, 914*time.Microsecond, 20*time.Second, ECT0)
	t.Logf("5%% overload, ect0: drops %v, marks %d", drops2, marks2)
	require.Positive(t, marks2)
}

func TestPIEAutoTunesItsStepByP(t *testing.T) {
	// RFC 8033 section 4.2: the step alpha x (qdelay - target) + beta x
	// (qdelay - qdelay_old) is divided by 2048 while p < 0.0001%, ... by 2
	// while p < 10%, and capped at 2% once p >= 10%.
	c := &PIEParams{}
	step := DefaultPIEAlpha * 0.015 // 30 ms against a 15 ms target, no change
	for _, k := range []struct{ p, want float64 }{
		{0, step / 2048}, {0.000005, step / 512}, {0.00005, step / 128}, {0.0005, step / 32},
		{0.005, step / 8}, {0.05, step / 2}, {0.5, step},
	} {
		s := pieState{p: k.p, qdelayOld: 30 * time.Millisecond}
		s.update(c, 30*time.Millisecond)
		require.InDelta(t, k.want, s.p-k.p, 1e-12, "at p = %v", k.p)
	}
	s := pieState{p: 0.5, qdelayOld: 0}
	s.update(c, time.Second)
	require.InDelta(t, 0.02, s.p-0.5, 1e-12, "the step is capped at 2% above p = 10%")
}
