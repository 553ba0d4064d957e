package netem

import (
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestQueueLimitValidate(t *testing.T) {
	for _, tc := range []struct {
		lim  QueueLimit
		want string
	}{
		{QueueLimit{Bytes: -1}, "queue byte limit -1 is negative"},
		{QueueLimit{Packets: -2}, "queue packet limit -2 is negative"},
		{QueueLimit{Delay: -time.Millisecond}, "queue delay limit -1ms is negative"},
		{QueueLimit{CoDel: &CoDelParams{Target: -1}}, "codel target -1ns is negative"},
		{QueueLimit{CoDel: &CoDelParams{Interval: -1}}, "codel interval -1ns is negative"},
		{QueueLimit{CoDel: &CoDelParams{Target: 200 * time.Millisecond}}, "codel target 200ms must be below its interval 100ms"},
	} {
		require.ErrorContains(t, tc.lim.Validate(), tc.want)
		// The bottlenecks refuse them too, naming the impairment.
		_, err := NewLink(LinkConfig{Impairments: []Impairment{&Rate{Rate: 1e6, Queue: tc.lim}}}, func(*Packet) {})
		require.ErrorContains(t, err, "rate: "+tc.want)
	}
	ok := QueueLimit{Bytes: 1, Packets: 1, Delay: 1, CoDel: &CoDelParams{}}
	require.NoError(t, ok.Validate())
}

// At 1 Mbit/s a 1250-byte packet takes exactly 10 ms.
const bnSlow = 1_000_000

func TestQueuePacketLimitDropsTheOverflowingPacket(t *testing.T) {
	d := newBNDriver(t, &Rate{Rate: bnSlow, Queue: QueueLimit{Packets: 5}})
	// Five fit (one being sent, four waiting); the sixth overflows.
	for i := range 5 {
		v := d.send(1250, 0)
		require.Empty(t, v.Drop)
		require.Equal(t, t0.Add(bnMS(10*float64(i+1))), v.At)
		require.Equal(t, bnMS(10*float64(i)), v.Queued)
	}
	require.Equal(t, DropQueue, d.send(1250, 0).Drop)
	require.Equal(t, DropQueue, d.send(1, bnMS(9.999)).Drop)
	// When the first has left, there is room for exactly one more.
	v := d.send(1250, bnMS(10))
	require.Empty(t, v.Drop)
	require.Equal(t, t0.Add(bnMS(60)), v.At)
	require.Equal(t, bnMS(40), v.Queued) // from 10 ms to 50 ms
	require.Equal(t, DropQueue, d.send(1250, bnMS(10)).Drop)
	p, b := d.backlog(bnMS(10))
	require.Equal(t, 5, p)
	require.Equal(t, 5*1250, b)
}

func TestQueueByteLimitDropsTheOverflowingPacket(t *testing.T) {
	d := newBNDriver(t, &Rate{Rate: bnSlow, Queue: QueueLimit{Bytes: 4000}})
	var drops []int
	for i, size := range []int{1000, 1000, 1500, 600, 500, 1} {
		if d.send(size, 0).Drop != "" {
			drops = append(drops, i)
		}
	}
	// 1000+1000+1500 = 3500; 600 more would make 4100 > 4000: that packet
	// alone is dropped, the 500 after it fits exactly, then nothing does.
	require.Equal(t, []int{3, 5}, drops)
	p, b := d.backlog(0)
	require.Equal(t, 4, p)
	require.Equal(t, 4000, b)
	// The first packet left at 8 ms, making room for 1000 bytes.
	require.Equal(t, DropQueue, d.send(1001, bnMS(8)).Drop)
	require.Empty(t, d.send(1000, bnMS(8)).Drop)
}

func TestQueueDelayLimitBoundsTheWait(t *testing.T) {
	const bound = 35 * time.Millisecond
	d := newBNDriver(t, &Rate{Rate: bnSlow, Queue: QueueLimit{Delay: bound}})
	var queued []time.Duration
	for range 10 {
		if v := d.send(1250, 0); v.Drop == "" {
			queued = append(queued, v.Queued)
		}
	}
	// Waits of 0, 10, 20 and 30 ms are within the bound; 40 ms is not.
	require.Equal(t, []time.Duration{0, bnMS(10), bnMS(20), bnMS(30)}, queued)

	// Random bursts: the bound always holds, and it is what limits the
	// queue (waits come close to it).
	d = newBNDriver(t, &Rate{Rate: 10 * bnSlow, Queue: QueueLimit{Delay: bound}})
	rng := rand.New(rand.NewPCG(1, 2))
	var at time.Duration
	var maxWait time.Duration
	drops := 0
	for range 20000 {
		at += time.Duration(rng.ExpFloat64() * float64(650*time.Microsecond))
		v := d.send(200+rng.IntN(1300), at)
		if v.Drop != "" {
			require.Equal(t, DropQueue, v.Drop)
			drops++
			continue
		}
		require.LessOrEqual(t, v.Queued, bound)
		maxWait = max(maxWait, v.Queued)
	}
	require.Greater(t, drops, 0)
	require.Greater(t, maxWait, bound-2*time.Millisecond)
	t.Logf("delay-limited queue: %d drops of 20000, longest wait %v (bound %v)", drops, maxWait, bound)
}

func TestQueueBacklogCountsWaitingAndInService(t *testing.T) {
	d := newBNDriver(t, &Rate{Rate: bnSlow})
	check := func(at float64, packets, bytes int) {
		t.Helper()
		p, b := d.backlog(bnMS(at))
		require.Equal(t, packets, p, "packets at %v ms", at)
		require.Equal(t, bytes, b, "bytes at %v ms", at)
	}
	d.send(1250, 0) // sent 0-10 ms
	d.send(625, 0)  // 10-15 ms
	check(0, 2, 1875)
	check(9.9, 2, 1875)
	check(10, 1, 625)
	d.send(1250, bnMS(12)) // 15-25 ms
	check(12, 2, 1875)
	check(15, 1, 1250)
	check(24.9, 1, 1250)
	check(25, 0, 0)
}

func TestQueueLimitsThroughALink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{
			&Rate{Rate: bnSlow, Queue: QueueLimit{Packets: 3}},
			&Delay{Delay: 5 * time.Millisecond},
		}})
		start := time.Now()
		for range 5 {
			require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		}
		s := l.Stats()
		require.Equal(t, Counter{Packets: 3, Bytes: 3750}, s.Backlog)
		require.Equal(t, Counter{Packets: 2, Bytes: 2500}, s.Dropped[DropQueue])
		time.Sleep(time.Second)
		got := rec.arrivals()
		require.Len(t, got, 3)
		for i, a := range got {
			require.Equal(t, uint64(i+1), a.P.Seq)
			require.Equal(t, start.Add(bnMS(10*float64(i+1)+5)), a.At)
		}
		s = l.Stats()
		require.Zero(t, s.Backlog)
		require.Equal(t, QueueStats{Packets: 3, Total: bnMS(30), Max: bnMS(20)}, s.Queued)
	})
}
