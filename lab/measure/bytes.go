package measure

import (
	"slices"
	"sort"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
)

// FrameBytes counts the encoded bytes of frames by an instant of theirs
// (when they were sent, when they arrived) over any interval in O(log n).
// A series takes one interval for each of its points, and a loop over
// every frame for every point cost the product of the two: the larger
// part of computing a long session's measurements. The sums are of whole
// bytes, so a float made of one is the float the frame-by-frame sum made.
type FrameBytes struct {
	at  []time.Duration // the frames' instants, sorted; a frame without one (0) is left out
	sum []int64         // sum[i] is the bytes of the frames before at[i]; one longer than at
}

// NewFrameBytes indexes the frames by instant (0 meaning never: such a
// frame counts in no interval).
func NewFrameBytes(fs []result.FrameRecord, instant func(result.FrameRecord) time.Duration) FrameBytes {
	return newFrameBytes(len(fs), func(i int) (time.Duration, int) { return instant(fs[i]), fs[i].Bytes })
}

// flowFrameBytes indexes a session flow's frames by arrival.
func flowFrameBytes(fs []result.FlowFrame) FrameBytes {
	return newFrameBytes(len(fs), func(i int) (time.Duration, int) { return fs[i].Arrived, fs[i].Bytes })
}

func newFrameBytes(n int, frame func(int) (time.Duration, int)) FrameBytes {
	type entry struct {
		at    time.Duration
		bytes int
	}
	es := make([]entry, 0, n)
	for i := range n {
		if at, bytes := frame(i); at > 0 {
			es = append(es, entry{at, bytes})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return int(a.at - b.at) })
	fb := FrameBytes{at: make([]time.Duration, len(es)), sum: make([]int64, len(es)+1)}
	for i, e := range es {
		fb.at[i] = e.at
		fb.sum[i+1] = fb.sum[i] + int64(e.bytes)
	}
	return fb
}

// In is the bytes of the frames whose instant is in [from, to).
func (fb FrameBytes) In(from, to time.Duration) int64 {
	if to <= from {
		return 0
	}
	lo := sort.Search(len(fb.at), func(i int) bool { return fb.at[i] >= from })
	hi := sort.Search(len(fb.at), func(i int) bool { return fb.at[i] >= to })
	return fb.sum[hi] - fb.sum[lo]
}
