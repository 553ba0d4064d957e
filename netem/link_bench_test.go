package netem

import (
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// everyImpairment returns one of each impairment that lets traffic through,
// with parameters of the lab's documented links: the cost per packet of a
// link configured as heavily as any scenario will.
func everyImpairment() []Impairment {
	return []Impairment{
		&Outage{Every: 10 * time.Second, Duration: 100 * time.Millisecond, Offset: 5 * time.Second, Mode: OutageHold},
		&Loss{Probability: 0.01},
		&GilbertElliott{P: 0.001, R: 0.3},
		&Duplicate{Probability: 0.001},
		&Corrupt{Probability: 0.001},
		&Rate{Rate: 100_000_000, Queue: QueueLimit{Packets: 1000, CoDel: &CoDelParams{}}},
		&Delay{Delay: 25 * time.Millisecond},
		&Jitter{Jitter: 2 * time.Millisecond, Distribution: "normal", Correlation: 0.25},
		&Spikes{Min: 150 * time.Millisecond, Max: 600 * time.Millisecond, Every: 3 * time.Second, Duration: 200 * time.Millisecond, Random: true},
	}
}

// BenchmarkPipelineEveryImpairment is the cost of deciding one 1200-byte
// packet's fate with every impairment on (no clock, no delivery): packets
// enter every 100 us, just under the 100 Mbit/s cap.
func BenchmarkPipelineEveryImpairment(b *testing.B) {
	tp := newTestPipeline(b, 1, everyImpairment()...)
	pk := &Packet{Data: make([]byte, 1200)}
	out := make([]Delivery, 0, 4)
	at := time.Duration(0)
	b.ReportAllocs()
	for b.Loop() {
		pk.Duplicate, pk.Corrupted = false, false
		out = tp.pl.process(pk, t0.Add(at), out[:0])
		at += 100 * time.Microsecond
	}
}

// BenchmarkLinkEveryImpairment is the whole cost of a packet through a real
// Link in real time: the fate, the scheduling and the delivery by the link's
// goroutine (the payload's allocation is the caller's and not counted).
func BenchmarkLinkEveryImpairment(b *testing.B) {
	delivered := make(chan struct{}, 1)
	var count, want atomic.Int64
	want.Store(math.MaxInt64)
	imps := everyImpairment()
	imps[5] = &Rate{Rate: 100_000_000_000} // real time: the sender, not the cap, sets the pace
	l, err := NewLink(LinkConfig{Impairments: imps}, func(*Packet) {
		if count.Add(1) >= want.Load() {
			select {
			case delivered <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	pks := make([]Packet, b.N)
	for i := range pks {
		pks[i].Data = make([]byte, 1200)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range pks {
		l.Send(&pks[i])
	}
	b.StopTimer()
	s := l.Stats()
	want.Store(int64(s.Offered.Packets - s.DroppedTotal().Packets + s.Duplicated))
	if count.Load() < want.Load() {
		select {
		case <-delivered:
		case <-time.After(10 * time.Second):
			b.Fatalf("only %d of %d packets delivered", count.Load(), want.Load())
		}
	}
}
