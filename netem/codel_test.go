package netem

import (
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// bnOverload sends 1200-byte packets every gap for dur into a 10 Mbit/s rate
// with limit lim, and returns the waits of the packets sent in the second
// half and the drops per reason.
func bnOverload(t *testing.T, lim QueueLimit, gap, dur time.Duration) ([]time.Duration, map[DropReason]int) {
	d := newBNDriver(t, &Rate{Rate: 10_000_000, Queue: lim})
	var waits []time.Duration
	drops := map[DropReason]int{}
	for at := time.Duration(0); at < dur; at += gap {
		v := d.send(1200, at)
		if v.Drop != "" {
			drops[v.Drop]++
			continue
		}
		if at >= dur/2 {
			waits = append(waits, v.Queued)
		}
	}
	return waits, drops
}

func TestCoDelSettlesNearTargetUnderOverload(t *testing.T) {
	// 5% more unresponsive traffic than the 10 Mbit/s link carries (1200
	// bytes every 914 µs, 0.96 ms to send each), for a minute, with a
	// 1000-packet buffer (almost a second at this rate).
	const gap, dur = 914 * time.Microsecond, 60 * time.Second
	tail, tailDrops := bnOverload(t, QueueLimit{Packets: 1000}, gap, dur)
	codel, codelDrops := bnOverload(t, QueueLimit{Packets: 1000, CoDel: &CoDelParams{}}, gap, dur)
	tailMedian, codelMedian := bnMedian(tail), bnMedian(codel)
	t.Logf("second half median wait: drop-tail %v (%v drops), CoDel %v (%v drops); CoDel p10 %v p90 %v",
		tailMedian, tailDrops, codelMedian, codelDrops, codel[len(codel)/10], codel[len(codel)*9/10])

	require.Greater(t, tailMedian, 900*time.Millisecond, "drop-tail fills its buffer")
	require.Zero(t, codelDrops[DropQueue], "CoDel keeps the queue off its limit")
	require.Less(t, codelMedian, 3*DefaultCoDelTarget, "CoDel holds the standing queue near its target")
	require.Greater(t, codelMedian, DefaultCoDelTarget/2, "without emptying it")
	// Both deliver at the link's capacity, dropping the excess, except
	// what drop-tail keeps in its full buffer.
	sent := float64(dur / gap)
	excess := sent * (1 - float64(gap)/float64(960*time.Microsecond))
	require.InDelta(t, excess, float64(codelDrops[DropCoDel]), sent/200)
	require.InDelta(t, excess-1000, float64(tailDrops[DropQueue]), sent/200)
}

func TestCoDelDoesNotDropBelowTarget(t *testing.T) {
	// Random traffic at 80% of the rate whose waits stay below target, and
	// a wait above target that lasts less than an interval: no drop.
	d := newBNDriver(t, &Rate{Rate: 10_000_000, Queue: QueueLimit{CoDel: &CoDelParams{}}})
	rng := rand.New(rand.NewPCG(3, 4))
	var at, maxWait time.Duration
	for range 50000 {
		at += time.Duration(rng.ExpFloat64() * float64(1200*time.Microsecond))
		v := d.send(1200, at)
		require.Empty(t, v.Drop)
		maxWait = max(maxWait, v.Queued)
	}
	t.Logf("80%% load: longest wait %v", maxWait)
	// A burst of 60 packets: waits up to 57 ms, above target for 52 ms.
	at += time.Second
	for range 60 {
		require.Empty(t, d.send(1200, at).Drop)
	}
	require.Empty(t, d.send(1200, at+time.Second).Drop)
}

func TestCoDelControlLaw(t *testing.T) {
	// 1000-byte packets take 0.8 ms at 10 Mbit/s and arrive every 0.4 ms:
	// the sojourn time grows steadily. The first drop comes at the first
	// dequeue an interval after the sojourn time went above target, then
	// drops are interval/sqrt(count) apart, to within one packet time.
	d := newBNDriver(t, &Rate{Rate: 10_000_000, Queue: QueueLimit{CoDel: &CoDelParams{}}})
	var free time.Duration // when the server is next free, tracked here independently
	var aboveAt time.Duration = -1
	var drops []time.Duration
	for at := time.Duration(0); len(drops) < 6; at += 400 * time.Microsecond {
		deq := max(at, free)
		if aboveAt < 0 && deq-at >= DefaultCoDelTarget {
			aboveAt = deq
		}
		v := d.send(1000, at)
		if v.Drop != "" {
			require.Equal(t, DropCoDel, v.Drop)
			drops = append(drops, deq)
			continue
		}
		require.Equal(t, deq-at, v.Queued)
		free = v.At.Sub(t0)
	}
	require.InDelta(t, aboveAt+DefaultCoDelInterval, drops[0], float64(800*time.Microsecond))
	for i := 1; i < len(drops); i++ {
		want := float64(DefaultCoDelInterval) / math.Sqrt(float64(i))
		require.InDelta(t, want, drops[i]-drops[i-1], float64(800*time.Microsecond), "gap before drop %d", i+1)
	}
}

func TestCoDelThroughALink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{
			&Rate{Rate: 10_000_000, Queue: QueueLimit{CoDel: &CoDelParams{Target: 2 * time.Millisecond, Interval: 20 * time.Millisecond}}},
		}})
		for range 2000 {
			require.NoError(t, l.Send(&Packet{Data: make([]byte, 1200)}))
			time.Sleep(800 * time.Microsecond)
		}
		time.Sleep(time.Second)
		s := l.Stats()
		require.Greater(t, s.Dropped[DropCoDel].Packets, uint64(0))
		require.Equal(t, s.Offered.Packets, s.Delivered.Packets+s.Dropped[DropCoDel].Packets)
		require.Len(t, rec.arrivals(), int(s.Delivered.Packets))
		t.Logf("through a link: %d of %d dropped by CoDel, mean wait %v, max %v",
			s.Dropped[DropCoDel].Packets, s.Offered.Packets, s.Queued.Mean(), s.Queued.Max)
		require.Less(t, s.Queued.Mean(), 10*time.Millisecond)
	})
}

// bnRefCoDel is a plain event-driven simulation of a rate-limited queue with
// CoDel, written from RFC 8289's pseudocode: a real queue, a transmitter that
// asks for the next packet whenever it is free, and the RFC's dequeue and
// dodequeue routines (without the MTU exemption, as documented). It returns
// each packet's delivery instant, or -1 if CoDel dropped it. Instants are
// nanoseconds, positive (0 marks "unset" as in the RFC).
func bnRefCoDel(arrive []int64, size []int, bps int64, target, interval int64) []int64 {
	out := make([]int64, len(arrive))
	var queue []int
	var firstAbove, dropNext int64
	var count, lastCount int64
	dropping := false
	controlLaw := func(t int64) int64 {
		return t + int64(time.Duration(float64(interval)/math.Sqrt(float64(count))))
	}
	dodequeue := func(now int64) (int, bool) {
		if len(queue) == 0 {
			firstAbove = 0
			return -1, false
		}
		p := queue[0]
		queue = queue[1:]
		switch sojourn := now - arrive[p]; {
		case sojourn < target:
			firstAbove = 0
		case firstAbove == 0:
			firstAbove = now + interval
		case now >= firstAbove:
			return p, true
		}
		return p, false
	}
	dequeue := func(now int64) int {
		p, ok := dodequeue(now)
		if dropping {
			if !ok {
				dropping = false
			}
			for now >= dropNext && dropping {
				out[p] = -1
				count++
				if p, ok = dodequeue(now); !ok {
					dropping = false
				} else {
					dropNext = controlLaw(dropNext)
				}
			}
		} else if ok {
			out[p] = -1
			p, _ = dodequeue(now)
			dropping = true
			delta := count - lastCount
			count = 1
			if delta > 1 && now-dropNext < 16*interval {
				count = delta
			}
			dropNext = controlLaw(now)
			lastCount = count
		}
		return p
	}
	var free int64
	busy := false
	transmit := func(now int64) {
		if p := dequeue(now); p >= 0 {
			free = now + int64(size[p])*8*int64(time.Second)/bps
			out[p] = free
			busy = true
		}
	}
	for i := 0; i < len(arrive) || busy; {
		if busy && (i == len(arrive) || free <= arrive[i]) {
			busy = false
			transmit(free)
			continue
		}
		queue = append(queue, i)
		i++
		if !busy {
			transmit(arrive[i-1])
		}
	}
	return out
}

func TestCoDelMatchesAnEventDrivenSimulation(t *testing.T) {
	// On/off overload: bursts at up to 1.5 times the rate, pauses that empty
	// the queue, so CoDel enters and leaves its drop state many times.
	const bps = 10_000_000 // 800 ns a byte: every duration is exact
	rng := rand.New(rand.NewPCG(5, 6))
	var arrive []int64
	var size []int
	at := int64(time.Second)
	for burst := range 40 {
		load := 0.9 + 0.6*rng.Float64()
		end := at + int64(time.Duration(200+rng.IntN(1500))*time.Millisecond)
		for at < end {
			s := 100 + rng.IntN(1400)
			arrive = append(arrive, at)
			size = append(size, s)
			at += int64(rng.ExpFloat64() * float64(s*800) / load)
		}
		if burst%3 == 0 {
			at += int64(time.Duration(rng.IntN(300)) * time.Millisecond)
		}
	}
	params := &CoDelParams{Target: 3 * time.Millisecond, Interval: 50 * time.Millisecond}
	want := bnRefCoDel(arrive, size, bps, int64(params.Target), int64(params.Interval))
	d := newBNDriver(t, &Rate{Rate: bps, Queue: QueueLimit{CoDel: params}})
	drops := 0
	for i, a := range arrive {
		v := d.send(size[i], time.Duration(a))
		if v.Drop != "" {
			drops++
			require.Equal(t, int64(-1), want[i], "packet %d of %d: dropped, the simulation sends it", i, len(arrive))
			continue
		}
		require.Equal(t, want[i], int64(v.At.Sub(t0)), "packet %d of %d", i, len(arrive))
	}
	t.Logf("%d packets, %d dropped by CoDel, same fates as the event-driven simulation", len(arrive), drops)
	require.Greater(t, drops, 100)
}
