package netem

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRateValidate(t *testing.T) {
	imp, err := New("rate")
	require.NoError(t, err)
	require.IsType(t, &Rate{}, imp)
	require.ErrorContains(t, imp.(Validator).Validate(), "rate 0 bit/s must be positive")
	require.ErrorContains(t, (&Rate{Rate: -5}).Validate(), "rate -5 bit/s must be positive")
	require.ErrorContains(t, (&Rate{Rate: 1, Overhead: -1}).Validate(), "overhead -1 bytes is negative")
	require.NoError(t, (&Rate{Rate: 1}).Validate())
	_, err = NewLink(LinkConfig{Impairments: []Impairment{&Rate{Rate: 1e6}, &Rate{Rate: 2e6}}}, func(*Packet) {})
	require.ErrorContains(t, err, "at most one bottleneck")
}

func TestRateCapsASaturatingSender(t *testing.T) {
	for _, bps := range []int64{5_000_000, 100_000_000} {
		// 1200-byte packets at 1.5 times the rate for two seconds, into a
		// 100-packet queue.
		tp := newTestPipeline(t, 1, &Rate{Rate: bps, Queue: QueueLimit{Packets: 100}})
		gap := time.Duration(1200 * 8 * float64(time.Second) / (1.5 * float64(bps)))
		var ds []Delivery
		for at := time.Duration(0); at < 2*time.Second; at += gap {
			ds = append(ds, tp.send(1200, at)...)
		}
		got := bnDeliveredRate(t, ds)
		t.Logf("%d Mbit/s: delivered %.6f Mbit/s (%d packets, %d dropped)",
			bps/1e6, got/1e6, len(ds), tp.stats.Dropped[DropQueue].Packets)
		require.InEpsilon(t, float64(bps), got, 0.01)
		require.Greater(t, tp.stats.Dropped[DropQueue].Packets, uint64(0))
	}
}

func TestRateSerialisesExactlyThroughALink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1250 bytes at 1 Mbit/s is 10 ms; with 125 bytes of overhead, 11 ms.
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{
			&Rate{Rate: 1_000_000, Overhead: 125},
			&Delay{Delay: 20 * time.Millisecond},
		}})
		start := time.Now()
		for range 3 {
			require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		}
		time.Sleep(50 * time.Millisecond) // the link is idle again at 33 ms
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		time.Sleep(time.Second)
		var got []time.Duration
		for _, a := range rec.arrivals() {
			got = append(got, a.At.Sub(start))
		}
		require.Equal(t, []time.Duration{bnMS(31), bnMS(42), bnMS(53), bnMS(81)}, got)
		require.Equal(t, QueueStats{Packets: 4, Total: bnMS(33), Max: bnMS(22)}, l.Stats().Queued)
	})
}

func TestRateQueueSurvivesSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{&Rate{Rate: 1_000_000}}})
		start := time.Now()
		for range 20 { // 10 ms each: the last leaves at 200 ms
			require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		}
		time.Sleep(25 * time.Millisecond)
		require.Equal(t, Counter{Packets: 18, Bytes: 18 * 1250}, l.Stats().Backlog)

		// Twice the rate, and room for 19 packets: the 18 still inside
		// count against the new limit and keep their fate; new packets
		// queue behind them at the new rate.
		require.NoError(t, l.Set([]Impairment{&Rate{Rate: 2_000_000, Queue: QueueLimit{Packets: 19}}}))
		require.Equal(t, Counter{Packets: 18, Bytes: 18 * 1250}, l.Stats().Backlog)
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		require.Equal(t, Counter{Packets: 1, Bytes: 1250}, l.Stats().Dropped[DropQueue])

		time.Sleep(time.Second)
		got := rec.arrivals()
		require.Len(t, got, 21)
		for i, a := range got[:20] {
			require.Equal(t, start.Add(bnMS(10*float64(i+1))), a.At)
		}
		// Without the inherited queue it would have left at 30 ms.
		require.Equal(t, start.Add(bnMS(205)), got[20].At)
		require.Equal(t, bnMS(175+5), got[20].At.Sub(got[20].P.Sent), "waited 175 ms, sent in 5")
	})
}

func TestRateQueueSurvivesATimelinePhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{
			Impairments: []Impairment{&Rate{Rate: 1_000_000}},
			Timeline: []Phase{
				{At: 50 * time.Millisecond, Impairments: []Impairment{&Rate{Rate: 500_000}}},
				{At: 100 * time.Millisecond, Impairments: []Impairment{&Rate{Rate: 1_000_000}, &Delay{Delay: time.Millisecond}}},
			},
		})
		start := time.Now()
		for range 10 { // 10 ms each at 1 Mbit/s: busy until 100 ms
			require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		}
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)})) // 20 ms at 0.5 Mbit/s: 100-120 ms
		require.Equal(t, Counter{Packets: 6, Bytes: 6 * 1250}, l.Stats().Backlog)
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)})) // 120-130 ms, then 1 ms of delay
		time.Sleep(time.Second)
		got := rec.arrivals()
		require.Len(t, got, 12)
		require.Equal(t, start.Add(bnMS(100)), got[9].At)
		require.Equal(t, start.Add(bnMS(120)), got[10].At)
		require.Equal(t, start.Add(bnMS(131)), got[11].At)
		require.Equal(t, bnMS(50+20), got[10].At.Sub(got[10].P.Sent), "waited 50 ms, sent in 20")
	})
}

func TestRateKeepsAnExactRateOverALongBusyPeriod(t *testing.T) {
	// 1000 bytes at 3 Mbit/s is 2666666.67 ns: rounding each packet down
	// would lose 2/3 ns a packet. The remainder is carried instead.
	d := newBNDriver(t, &Rate{Rate: 3_000_000})
	var last Verdict
	for range 30_000 {
		last = d.send(1000, 0)
	}
	require.Equal(t, t0.Add(80*time.Second), last.At)
}

func BenchmarkRate(b *testing.B) {
	// A sender slightly faster than the link into a bounded queue: every
	// path (queueing, sending, tail drop) is taken.
	r := &Rate{Rate: 100_000_000, Queue: QueueLimit{Packets: 100}}
	env := &Env{Epoch: t0}
	p := &Packet{Data: make([]byte, 1200)}
	at := t0
	b.ReportAllocs()
	for b.Loop() {
		r.Apply(p, at, env)
		at = at.Add(90 * time.Microsecond)
	}
}

func BenchmarkRateCoDel(b *testing.B) {
	r := &Rate{Rate: 100_000_000, Queue: QueueLimit{Packets: 1000, CoDel: &CoDelParams{}}}
	env := &Env{Epoch: t0}
	p := &Packet{Data: make([]byte, 1200)}
	at := t0
	b.ReportAllocs()
	for b.Loop() {
		r.Apply(p, at, env)
		at = at.Add(90 * time.Microsecond)
	}
}

// A 1 Mbit/s bottleneck with a 3-packet queue, inside a synctest bubble:
// 1250-byte packets take 10 ms each and the fourth sent at once is dropped.
func ExampleRate() {
	synctest.Test(&testing.T{}, func(*testing.T) {
		start := time.Now()
		l, _ := NewLink(LinkConfig{
			Impairments: []Impairment{&Rate{Rate: 1_000_000, Queue: QueueLimit{Packets: 3}}},
		}, func(p *Packet) { fmt.Println("delivered", p.Seq, "at", time.Since(start)) })
		defer l.Close()
		for range 4 {
			l.Send(&Packet{Data: make([]byte, 1250)})
		}
		time.Sleep(time.Second)
		fmt.Println("dropped", l.Stats().Dropped[DropQueue].Packets)
	})
	// Output:
	// delivered 1 at 10ms
	// delivered 2 at 20ms
	// delivered 3 at 30ms
	// dropped 1
}
