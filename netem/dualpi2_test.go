package netem

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDualPI2KeepsL4SShallowAndCouplesTheQueues(t *testing.T) {
	// 100 Mbit/s; unresponsive classic traffic at 100 Mbit/s (flow 1, not
	// ECN-capable) and L4S at 10 Mbit/s (flow 2, ECT(1)): 10% too much.
	// The PI controller holds the classic queue near 15 ms by dropping
	// p'^2 of it; the L4S queue, served first, stays under the 1 ms step
	// and is marked with the coupled k x p'.
	const end = 6 * time.Second
	arr := append(schedEvery(1, 1500, NotECT, 120*time.Microsecond, 0, end), schedEvery(2, 1500, ECT1, 1200*time.Microsecond, 0, end)...)
	d := newDualPI2(DualPI2Params{}, rand.New(rand.NewPCG(1, 2)))
	out := schedRun(d, arr, 100_000_000, end)
	cWait, _ := waitsOf(out, 1, 3*time.Second)
	lWait, nL := waitsOf(out, 2, 3*time.Second)
	cFrac := float64(d.cSignal) / float64(d.cOut)
	lFrac := float64(d.lSignal) / float64(d.lOut)
	t.Logf("classic: median wait %v, %.3f dropped; L4S: median wait %v (%d packets), %.3f marked; p' now %.3f",
		cWait, cFrac, lWait, nL, lFrac, d.p)
	require.InDelta(t, DefaultDualPI2Target.Seconds(), cWait.Seconds(), 0.005, "the classic queue near its 15 ms target")
	require.Less(t, lWait, time.Millisecond, "the L4S queue under its 1 ms step")
	// The coupling: p_C = p'^2, p_L = k p', so p_L = k sqrt(p_C).
	require.InDelta(t, DefaultDualPI2K*math.Sqrt(cFrac), lFrac, 0.08)
	require.InDelta(t, 0.1, cFrac, 0.03, "the classic flow loses the excess")
}

func TestECNDualPI2MarksClassicECTAndDropsNotECT(t *testing.T) {
	const end = 4 * time.Second
	for _, ecn := range []ECN{NotECT, ECT0} {
		d := newDualPI2(DualPI2Params{}, rand.New(rand.NewPCG(1, 2)))
		schedRun(d, schedEvery(1, 1500, ecn, 110*time.Microsecond, 0, end), 100_000_000, end)
		t.Logf("%v: %d dropped, %d marked of %d", ecn, len(d.dropped), d.marked, d.cOut)
		if ecn == NotECT {
			require.Positive(t, len(d.dropped))
			require.Zero(t, d.marked)
		} else {
			// Marked while p_C = p'^2 is at most 25%; unresponsive ECT
			// traffic then pushes p' past 0.5, where it is dropped.
			require.Positive(t, d.marked)
			require.Less(t, len(d.dropped), d.marked)
		}
	}
}
