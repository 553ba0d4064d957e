package netem

import (
	"net"
	"slices"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// waitsOf is the median wait of flow's packets sent after from.
func waitsOf(out []schedOut, flow int, from time.Duration) (median time.Duration, n int) {
	var w []time.Duration
	for _, o := range out {
		if o.Flow == flow && o.Left >= from {
			w = append(w, o.Wait)
		}
	}
	if len(w) == 0 {
		return 0, 0
	}
	return bnMedian(w), len(w)
}

func TestFQCoDelIsolatesASparseFlow(t *testing.T) {
	// A 10 Mbit/s link. Flow 1 is unresponsive bulk at 12 Mbit/s (1500 B
	// every 1 ms); flow 2 is sparse: 100 B every 20 ms, like a session's
	// input. With drop-tail the sparse flow waits behind the bulk flow's
	// standing queue; with FQ-CoDel it is a new flow at each packet and
	// goes first.
	const end = 10 * time.Second
	arr := append(schedEvery(1, 1500, NotECT, time.Millisecond, 0, end), schedEvery(2, 100, NotECT, 20*time.Millisecond, 5*time.Millisecond, end)...)
	tail := schedRun(&fifoQueue{}, append([]schedArrival(nil), arr...), 10_000_000, end)
	fq := newFQCoDel(FQCoDelParams{})
	out := schedRun(fq, arr, 10_000_000, end)
	tailSparse, _ := waitsOf(tail, 2, 5*time.Second)
	fqSparse, n := waitsOf(out, 2, 5*time.Second)
	fqBulk, _ := waitsOf(out, 1, 5*time.Second)
	t.Logf("sparse flow's median wait: drop-tail %v, FQ-CoDel %v (%d packets); bulk under FQ-CoDel %v, %d dropped",
		tailSparse, fqSparse, n, fqBulk, len(fq.Dropped))
	require.Greater(t, tailSparse, time.Second, "drop-tail: the bulk flow's standing queue")
	require.Less(t, fqSparse, 1300*time.Microsecond, "FQ-CoDel: at most the packet being sent")
	require.InDelta(t, 5*time.Second/(20*time.Millisecond), n, 2, "every sparse packet sent")
	tailBulk, _ := waitsOf(tail, 1, 5*time.Second)
	// CoDel works down the bulk flow's own queue (slowly: 20% more than
	// the link of unresponsive traffic needs a high drop rate, which its
	// control law reaches in seconds).
	require.Less(t, fqBulk, tailBulk/5, "drop-tail's bulk wait %v", tailBulk)
}

func TestFQCoDelSharesFairlyBetweenBulkFlows(t *testing.T) {
	// Two unresponsive bulk flows, one of 1500-byte packets at 9 Mbit/s,
	// one of 500-byte packets at 6 Mbit/s, through 10 Mbit/s: DRR shares
	// the bytes equally.
	const end = 10 * time.Second
	arr := append(schedEvery(1, 1500, NotECT, 1333*time.Microsecond, 0, end), schedEvery(2, 500, NotECT, 666*time.Microsecond, 0, end)...)
	out := schedRun(newFQCoDel(FQCoDelParams{}), arr, 10_000_000, end)
	bytes := map[int]int{}
	for _, o := range out {
		if o.Left >= 2*time.Second {
			bytes[o.Flow] += o.Size
		}
	}
	t.Logf("bytes after 2 s: %v", bytes)
	require.InEpsilon(t, bytes[1], bytes[2], 0.03)
	require.InDelta(t, 10e6/8*8, bytes[1]+bytes[2], 10e6/8*8*0.01, "the link kept full")
}

func TestFQCoDelDropsFromTheFattestFlowOnOverflow(t *testing.T) {
	fq := newFQCoDel(FQCoDelParams{Limit: 10})
	for i := range 8 {
		fq.enqueue(schedPacket(schedArrival{Flow: 1, Size: 1000}), t0.Add(time.Duration(i)))
	}
	for i := range 3 {
		fq.enqueue(schedPacket(schedArrival{Flow: 2, Size: 100}), t0.Add(time.Duration(10+i)))
	}
	require.Len(t, fq.Overflow, 1)
	require.Equal(t, 1000, fq.Overflow[0].Size(), "from the flow with the most bytes, not the arrival's")
}

func TestECNFQCoDelMarksInsteadOfDropping(t *testing.T) {
	const end = 3 * time.Second
	for _, c := range []struct {
		ecn   ECN
		marks bool
	}{{NotECT, false}, {ECT0, true}, {ECT1, true}} {
		fq := newFQCoDel(FQCoDelParams{})
		out := schedRun(fq, schedEvery(1, 1200, c.ecn, 914*time.Microsecond, 0, end), 10_000_000, end)
		ce := 0
		for _, o := range out {
			if o.ECN == CE {
				ce++
			}
		}
		t.Logf("%v: %d dropped, %d marked (%d CE seen)", c.ecn, len(fq.Dropped), fq.Marked, ce)
		if c.marks {
			require.Empty(t, fq.Dropped, "%v", c.ecn)
			require.Positive(t, fq.Marked)
			require.Equal(t, fq.Marked, ce)
		} else {
			require.NotEmpty(t, fq.Dropped)
			require.Zero(t, fq.Marked)
		}
	}
}

func TestFQCoDelThroughALink(t *testing.T) {
	// The same sparse-beside-bulk load through a link (10 Mbit/s with
	// FQ-CoDel, 10 ms of delay), in virtual time: the sparse flow's
	// packets cross in the delay and their own serialisation (plus at
	// most the bulk packet being sent); the counters add up.
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		lat := map[uint64][]time.Duration{}
		l, err := NewLink(LinkConfig{Name: "fq", Impairments: []Impairment{
			&Rate{Rate: 10_000_000, Queue: QueueLimit{Packets: 1000, FQCoDel: &FQCoDelParams{}}},
			&Delay{Delay: 10 * time.Millisecond},
		}}, func(p *Packet) {
			mu.Lock()
			defer mu.Unlock()
			flow := uint64(p.From.(*net.UDPAddr).Port - 5000)
			lat[flow] = append(lat[flow], time.Since(p.Sent))
		})
		require.NoError(t, err)
		arr := append(schedEvery(1, 1500, NotECT, time.Millisecond, 0, 4*time.Second), schedEvery(2, 100, ECT0, 20*time.Millisecond, 5*time.Millisecond, 4*time.Second)...)
		sort.SliceStable(arr, func(i, j int) bool { return arr[i].At < arr[j].At })
		for _, a := range arr {
			time.Sleep(start.Add(a.At).Sub(time.Now()))
			require.NoError(t, l.Send(schedPacket(a)))
		}
		time.Sleep(3 * time.Second)
		st := l.Stats()
		require.NoError(t, l.Close())
		mu.Lock()
		defer mu.Unlock()
		sparse := lat[2]
		slices.Sort(sparse)
		t.Logf("sparse: %d delivered, max one-way %v; bulk %d delivered; drops %v, queued mean %v", len(sparse), sparse[len(sparse)-1], len(lat[1]), st.Dropped, st.Queued.Mean())
		require.Len(t, sparse, len(arr)-4000)
		require.Less(t, sparse[len(sparse)-1], 10*time.Millisecond+1300*time.Microsecond)
		require.Positive(t, st.Dropped[DropCoDel].Packets)
		require.Equal(t, st.Offered.Packets, st.Delivered.Packets+st.DroppedTotal().Packets, "every packet accounted for")
		require.Zero(t, st.InFlight.Packets)
	})
}

func TestFQCoDelInRealTime(t *testing.T) {
	// The link's own goroutine lets the held packets go on the wall clock
	// (as the UDP proxy's links do): 40 packets of 1250 bytes at 10 Mbit/s
	// take 40 ms, and all arrive, in about that.
	got := make(chan time.Time, 64)
	l, err := NewLink(LinkConfig{Name: "rt", Precise: true, Impairments: []Impairment{
		&Rate{Rate: 10_000_000, Queue: QueueLimit{FQCoDel: &FQCoDelParams{}}},
	}}, func(p *Packet) { got <- time.Now() })
	require.NoError(t, err)
	defer l.Close()
	start := time.Now()
	for i := range 40 {
		require.NoError(t, l.Send(schedPacket(schedArrival{Flow: i % 2, Size: 1250})))
	}
	var last time.Time
	for range 40 {
		select {
		case last = <-got:
		case <-time.After(2 * time.Second):
			t.Fatal("a held packet never left")
		}
	}
	took := last.Sub(start)
	t.Logf("40 packets through in %v", took)
	require.GreaterOrEqual(t, took, 39*time.Millisecond)
	require.Less(t, took, 200*time.Millisecond)
}
