package netem

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/needs"
)

// bnTrace parses a trace written inline.
func bnTrace(t testing.TB, lines ...int) *Trace {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintln(&b, l)
	}
	tr, err := ParseTrace(strings.NewReader(b.String()), t.Name())
	require.NoError(t, err)
	return tr
}

func TestTraceLinkValidate(t *testing.T) {
	imp, err := New("trace")
	require.NoError(t, err)
	require.IsType(t, &TraceLink{}, imp)
	require.ErrorContains(t, imp.(Validator).Validate(), "no trace: set Path (a mahimahi trace file) or Trace")

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.trace")
	require.NoError(t, os.WriteFile(bad, []byte("1\n2\nx\n"), 0o644))
	_, err = NewLink(LinkConfig{Impairments: []Impairment{&TraceLink{Path: bad}}}, func(*Packet) {})
	require.ErrorContains(t, err, "trace: "+bad+`:3: "x" is not a number`)
	require.ErrorIs(t, (&TraceLink{Path: filepath.Join(dir, "missing")}).Validate(), os.ErrNotExist)
	require.ErrorContains(t, (&TraceLink{Trace: &Trace{Name: "zero"}}).Validate(), `trace "zero" has no period`)

	tl := &TraceLink{Trace: bnTrace(t, 1), Offset: -1, Overhead: -2, Queue: QueueLimit{Packets: -3}}
	err = tl.Validate()
	require.ErrorContains(t, err, "trace offset -1ns is negative")
	require.ErrorContains(t, err, "overhead -2 bytes is negative")
	require.ErrorContains(t, err, "queue packet limit -3 is negative")

	good := filepath.Join(dir, "good.trace")
	require.NoError(t, os.WriteFile(good, []byte("1\n"), 0o644))
	tl = &TraceLink{Path: good}
	require.NoError(t, tl.Validate())
	require.Equal(t, good, tl.Trace.Name, "Validate loads the trace")
}

// The delivery instants of a hand-built trace, through a real link: byte
// accounting, packets spanning opportunities, unused opportunities lost.
func TestTraceLinkExactDeliveries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Opportunities at 1, 1, 3 ms, repeating every 3 ms: 1, 1, 3, 4, 4,
		// 6, 7, 7, 9, 10, 10, 12...
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{&TraceLink{Trace: bnTrace(t, 1, 1, 3)}}})
		start := time.Now()
		send := func(at float64, size int) {
			time.Sleep(start.Add(bnMS(at)).Sub(time.Now()))
			require.NoError(t, l.Send(&Packet{Data: make([]byte, size)}))
		}
		send(0, 1504)    // A: all of the first opportunity at 1 ms
		send(0, 500)     // B and C share the second one at 1 ms,
		send(0, 500)     // whose last 504 bytes are then lost
		send(2, 3000)    // D: 1504 at 3 ms and 1496 at 4 ms, which has 8 left
		send(3.5, 8)     // E: the 8 bytes left at 4 ms
		send(4, 100)     // F: arrives at 4 ms, too late for the other one at 4 ms
		send(11, 1)      // G: opportunities at 7, 7, 9, 10, 10 ms went unused
		send(11.5, 1504) // H: queued behind G, takes the rest of 12 ms and 13 ms
		time.Sleep(time.Second)

		var got []string
		for _, a := range rec.arrivals() {
			got = append(got, fmt.Sprintf("%d@%v", a.P.Size(), a.At.Sub(start)))
		}
		require.Equal(t, []string{
			"1504@1ms", "500@1ms", "500@1ms", "3000@4ms", "8@4ms", "100@6ms", "1@12ms", "1504@13ms",
		}, got)
		s := l.Stats()
		// Waits for the first opportunity: 1+1+1 (A-C), 1 (D), 0.5 (E), 2 (F),
		// 1 (G), 0.5 (H).
		require.Equal(t, QueueStats{Packets: 8, Total: bnMS(8), Max: bnMS(2)}, s.Queued)
	})
}

func TestTraceLinkBacklogAndLimits(t *testing.T) {
	d := newBNDriver(t, &TraceLink{Trace: bnTrace(t, 10), Queue: QueueLimit{Bytes: 3000}})
	require.Empty(t, d.send(1000, 0).Drop)
	require.Empty(t, d.send(2000, 0).Drop)
	require.Equal(t, DropQueue, d.send(1, 0).Drop)
	p, b := d.backlog(bnMS(9))
	require.Equal(t, 2, p)
	require.Equal(t, 3000, b)
	p, b = d.backlog(bnMS(10)) // the first left at 10 ms, the second spans to 20 ms
	require.Equal(t, 1, p)
	require.Equal(t, 2000, b)

	// A time limit counts the wait for an opportunity, even in an empty
	// queue.
	d = newBNDriver(t, &TraceLink{Trace: bnTrace(t, 10), Queue: QueueLimit{Delay: 5 * time.Millisecond}})
	require.Equal(t, DropQueue, d.send(100, bnMS(4)).Drop)
	v := d.send(100, bnMS(5))
	require.Equal(t, t0.Add(bnMS(10)), v.At)
	require.Equal(t, bnMS(5), v.Queued)
}

func TestTraceLinkOffset(t *testing.T) {
	// At the epoch the trace is 2 ms in: its opportunities at 3, 4, 4 and
	// 6 ms come 1, 2, 2 and 4 ms after the epoch.
	d := newBNDriver(t, &TraceLink{Trace: bnTrace(t, 1, 1, 3), Offset: 5 * time.Millisecond}) // modulo 3 ms
	var got []time.Duration
	for range 4 {
		got = append(got, d.send(1504, 0).At.Sub(t0))
	}
	require.Equal(t, []time.Duration{bnMS(1), bnMS(2), bnMS(2), bnMS(4)}, got)
}

// A trace played once carries its opportunities, from the offset, and then
// nothing: a packet the opportunities left cannot carry whole is lost at
// once, and the link stays dark. Through a real link, in virtual time.
func TestTraceLinkNoLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset time.Duration
		sends  []bnSend
		want   []string // size@instant of each delivery
		lost   uint64
	}{
		{
			// Opportunities at 1, 1 and 3 ms, and none after.
			name: "from the start",
			sends: []bnSend{
				{0, 1504}, {0, 1504}, // the two at 1 ms
				{2, 3000},  // needs two opportunities, one is left: lost
				{2, 1000},  // 3 ms: the lost packet took nothing
				{2.5, 504}, // the 504 bytes left at 3 ms
				{2.5, 1},   // nothing left
				{10, 1},    // the link is dark: a looping trace would carry it at 10 ms
			},
			want: []string{"1504@1ms", "1504@1ms", "1000@3ms", "504@3ms"},
			lost: 3,
		},
		{
			// 2 ms in at the epoch: the opportunity at 3 ms comes 1 ms
			// after it, and is the last.
			name:   "from an offset",
			offset: 2 * time.Millisecond,
			sends:  []bnSend{{0, 1504}, {0, 1}, {5, 1}},
			want:   []string{"1504@1ms"},
			lost:   2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{
					&TraceLink{Trace: bnTrace(t, 1, 1, 3), Offset: tc.offset, NoLoop: true}}})
				start := time.Now()
				for _, s := range tc.sends {
					time.Sleep(start.Add(bnMS(s.at)).Sub(time.Now()))
					require.NoError(t, l.Send(&Packet{Data: make([]byte, s.size)}))
				}
				time.Sleep(time.Second)
				var got []string
				for _, a := range rec.arrivals() {
					got = append(got, fmt.Sprintf("%d@%v", a.P.Size(), a.At.Sub(start)))
				}
				require.Equal(t, tc.want, got)
				s := l.Stats()
				require.Equal(t, tc.lost, s.Dropped[DropOutage].Packets)
				require.Equal(t, Counter{}, s.Backlog, "nothing is left waiting for an opportunity that never comes")
			})
		})
	}

	// Played once, an offset at or past the end would carry nothing.
	tr := bnTrace(t, 1, 1, 3)
	require.ErrorContains(t, (&TraceLink{Trace: tr, Offset: 3 * time.Millisecond, NoLoop: true}).Validate(),
		"trace offset 3ms is not below the trace's length 3ms: played once, it would carry nothing")
	require.NoError(t, (&TraceLink{Trace: tr, Offset: 3 * time.Millisecond}).Validate(), "a looping trace counts it modulo the period")
	require.NoError(t, (&TraceLink{Trace: tr, Offset: 2 * time.Millisecond, NoLoop: true}).Validate())
}

// A phase that plays the same trace once keeps the position of the one
// that looped before it, and ends with the trace's first repetition.
func TestTraceLinkNoLoopKeepsThePosition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := bnTrace(t, 1, 1, 3)
		l, rec := newTestLink(t, LinkConfig{
			Impairments: []Impairment{&TraceLink{Trace: tr}},
			Timeline:    []Phase{{At: bnMS(0.5), Impairments: []Impairment{&TraceLink{Trace: tr, NoLoop: true}}}},
		})
		start := time.Now()
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 500)})) // 1 ms, 1004 bytes left
		time.Sleep(bnMS(0.5))
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1004)})) // the rest of it
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 3008)})) // the other 1 ms one and 3 ms: the last
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1)}))    // nothing left: lost
		time.Sleep(bnMS(3))
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1)}))
		time.Sleep(time.Second)
		var got []string
		for _, a := range rec.arrivals() {
			got = append(got, fmt.Sprintf("%d@%v", a.P.Size(), a.At.Sub(start)))
		}
		require.Equal(t, []string{"500@1ms", "1004@1ms", "3008@3ms"}, got, "a looping trace would carry the last two at 4 ms")
		require.Equal(t, uint64(2), l.Stats().Dropped[DropOutage].Packets)
	})
}

// bnSend is a packet of size bytes sent at ms milliseconds.
type bnSend struct {
	at   float64
	size int
}

func TestTraceLinkKeepsItsPositionAcrossSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := bnTrace(t, 1, 1, 3)
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{&TraceLink{Trace: tr}}})
		start := time.Now()
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 500)})) // 1 ms, 1004 bytes left

		// The same trace goes on: the bytes left at 1 ms are still there.
		time.Sleep(bnMS(0.5))
		require.NoError(t, l.Set([]Impairment{&TraceLink{Trace: tr, Queue: QueueLimit{Packets: 10}}}))
		require.Equal(t, Counter{Packets: 1, Bytes: 500}, l.Stats().Backlog, "the queue survives")
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1004)})) // 1 ms
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1504)})) // the other one at 1 ms

		// A different trace takes over the queue but not the position: it
		// serves once what is queued has left (1 ms).
		require.NoError(t, l.Set([]Impairment{&TraceLink{Trace: bnTrace(t, 2)}}))
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 10)})) // 2 ms
		time.Sleep(time.Second)

		var got []time.Duration
		for _, a := range rec.arrivals() {
			got = append(got, a.At.Sub(start))
		}
		require.Equal(t, []time.Duration{bnMS(1), bnMS(1), bnMS(1), bnMS(2)}, got)
	})
}

// bnTraceThroughput keeps the trace link busy (every packet queued at the
// epoch, sizes from size) for periods periods and returns the delivered rate
// over them, in bits per second.
func bnTraceThroughput(t *testing.T, tr *Trace, periods int, size func() int) float64 {
	capacity := periods * tr.Opportunities() * TraceMTU
	tp := newTestPipeline(t, 1, &TraceLink{Trace: tr})
	end := t0.Add(time.Duration(periods) * tr.Period())
	delivered, queued := 0, 0
	var ds []Delivery
	for queued < capacity+10*TraceMTU {
		n := size()
		queued += n
		ds = tp.pl.process(&Packet{Data: make([]byte, n)}, t0, ds[:0])
		require.Len(t, ds, 1)
		if !ds[0].At.After(end) {
			delivered += n
		}
	}
	return float64(delivered) * 8 / (time.Duration(periods) * tr.Period()).Seconds()
}

func TestTraceLinkDeliversItsAverageRate(t *testing.T) {
	t.Run("written", func(t *testing.T) {
		// A bursty trace with gaps, written to a file and loaded like a
		// scenario's: 0-3 opportunities a millisecond for 400 ms.
		rng := rand.New(rand.NewPCG(7, 8))
		var b strings.Builder
		for ms := range 400 {
			for range rng.IntN(4) {
				fmt.Fprintln(&b, ms)
			}
		}
		fmt.Fprintln(&b, 400)
		path := filepath.Join(t.TempDir(), "bursty.trace")
		require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
		tl := &TraceLink{Path: path}
		require.NoError(t, tl.Validate())
		sizes := rand.New(rand.NewPCG(9, 10))
		got := bnTraceThroughput(t, tl.Trace, 10, func() int { return 40 + sizes.IntN(3000) })
		t.Logf("%v: delivered %.4f Mbit/s", tl.Trace, got/1e6)
		require.InEpsilon(t, tl.Trace.AverageRate(), got, 0.01)
	})
	for _, name := range []string{"Verizon-LTE-short.down", "ATT-LTE-driving-2016.up"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "shared", "traces", "mahimahi", name)
			if _, err := os.Stat(path); err != nil {
				needs.Missing(t, needs.Shared, "mahimahi trace not found at %s (shared/ sits beside the repository, outside it): %v", path, err)
			}
			tr, err := LoadTrace(path)
			require.NoError(t, err)
			got := bnTraceThroughput(t, tr, 1, func() int { return 1200 })
			t.Logf("%v: delivered %.4f Mbit/s", tr, got/1e6)
			require.InEpsilon(t, tr.AverageRate(), got, 0.01)
		})
	}
}

func BenchmarkTrace(b *testing.B) {
	// A sender slightly faster than a 12 Mbit/s trace into a bounded queue.
	tl := &TraceLink{Trace: bnTrace(b, 1, 1, 1, 2, 3, 3, 5, 8, 8, 8, 10), Queue: QueueLimit{Packets: 100}}
	require.NoError(b, tl.Validate())
	env := &Env{Epoch: t0}
	p := &Packet{Data: make([]byte, 1200)}
	at := t0
	b.ReportAllocs()
	for b.Loop() {
		tl.Apply(p, at, env)
		at = at.Add(700 * time.Microsecond)
	}
}

// bnRefTrace is a plain simulation of mahimahi's link queue, written from its
// description: opportunity by opportunity, the packets that arrived before
// it join the queue, then it gives TraceMTU bytes to the packet in transit
// and those behind it. It returns each packet's delivery instant (ns from
// the epoch). Arrivals are ns from the epoch, in order.
func bnRefTrace(tr *Trace, arrive []int64, size []int) []int64 {
	out := make([]int64, len(arrive))
	n := len(tr.ms)
	period := int64(tr.Period())
	next, done := 0, 0
	var queue []int
	transit, remaining := -1, 0
	for k := 0; done < len(arrive); k++ {
		o := int64(k/n)*period + int64(tr.ms[k%n])*int64(time.Millisecond)
		for next < len(arrive) && arrive[next] < o {
			queue = append(queue, next)
			next++
		}
		for bytes := TraceMTU; bytes > 0; {
			if transit < 0 {
				if len(queue) == 0 {
					break // the rest of this opportunity is lost
				}
				transit, remaining = queue[0], size[queue[0]]
				queue = queue[1:]
			}
			remaining -= bytes
			bytes = 0
			if remaining <= 0 {
				bytes = -remaining
				out[transit] = o
				transit = -1
				done++
			}
		}
	}
	return out
}

func TestTraceLinkMatchesAnOpportunityByOpportunitySimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var lines []int
	for ms := range 50 {
		for range rng.IntN(3) {
			lines = append(lines, ms)
		}
	}
	tr := bnTrace(t, append(lines, 57)...)
	// Bursts and pauses, at instants on and off whole milliseconds, with
	// sizes from empty to several opportunities.
	var arrive []int64
	var size []int
	at := int64(0)
	for range 20000 {
		// About 75% of the capacity on average: queues build and empty.
		switch r := rng.IntN(50); {
		case r < 3:
			at += int64(rng.IntN(40)) * int64(time.Millisecond)
		case r < 10:
			at += int64(rng.IntN(5)) * int64(time.Millisecond)
		default:
			at += rng.Int64N(int64(time.Millisecond / 4))
		}
		arrive = append(arrive, at)
		size = append(size, rng.IntN(3200))
	}
	want := bnRefTrace(tr, arrive, size)
	d := newBNDriver(t, &TraceLink{Trace: tr})
	var maxWait time.Duration
	empty := 0
	for i, a := range arrive {
		if p, _ := d.backlog(time.Duration(a)); p == 0 {
			empty++
		}
		v := d.send(size[i], time.Duration(a))
		require.Empty(t, v.Drop)
		require.Equal(t, time.Duration(want[i]), v.At.Sub(t0), "packet %d (%d bytes at %v)", i, size[i], time.Duration(a))
		maxWait = max(maxWait, v.Queued)
	}
	t.Logf("%d packets, same instants as the simulation; %d found the queue empty, the longest wait %v", len(arrive), empty, maxWait)
	require.Greater(t, empty, 200, "the queue empties often enough to lose opportunities")
	require.Greater(t, maxWait, 100*time.Millisecond)
}

// A trace with two opportunities every 3 ms: small packets share an
// opportunity, a large one spans two.
func ExampleTraceLink() {
	tr, _ := ParseTrace(strings.NewReader("1\n1\n3\n"), "example")
	fmt.Println(tr)
	synctest.Test(&testing.T{}, func(*testing.T) {
		start := time.Now()
		l, _ := NewLink(LinkConfig{
			Impairments: []Impairment{&TraceLink{Trace: tr}},
		}, func(p *Packet) { fmt.Println(p.Size(), "bytes at", time.Since(start)) })
		defer l.Close()
		for _, size := range []int{700, 700, 2000} {
			l.Send(&Packet{Data: make([]byte, size)})
		}
		time.Sleep(time.Second)
	})
	// Output:
	// example (3 opportunities in 3ms, 12.032 Mbit/s)
	// 700 bytes at 1ms
	// 700 bytes at 1ms
	// 2000 bytes at 3ms
}

// A switch from a fixed rate to a trace (a timeline phase) keeps the queue:
// what waited behind the rate is still sent at the old rate, and the trace
// takes over after it.
func TestBottleneckQueueSurvivesASwitchFromRateToTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{
			Impairments: []Impairment{&Rate{Rate: 1_000_000}},
			Timeline: []Phase{
				{At: 50 * time.Millisecond, Impairments: []Impairment{&TraceLink{Trace: bnTrace(t, 1)}}},
			},
		})
		start := time.Now()
		for range 10 { // 10 ms each at 1 Mbit/s: busy until 100 ms
			require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		}
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 1250)}))
		require.Equal(t, Counter{Packets: 6, Bytes: 6 * 1250}, l.Stats().Backlog, "5 inherited + 1 new")
		time.Sleep(time.Second)
		got := rec.arrivals()
		require.Len(t, got, 11)
		for i := range 10 {
			require.Equal(t, start.Add(bnMS(float64(10*(i+1)))), got[i].At)
		}
		require.True(t, got[10].At.After(start.Add(bnMS(100))), "the trace serves after the inherited queue")
		require.False(t, got[10].At.After(start.Add(bnMS(102))), "at one of its next opportunities (one per ms)")
	})
}
