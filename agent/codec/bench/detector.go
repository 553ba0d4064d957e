package bench

import (
	"bytes"
	"time"
	"unsafe"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/internal/quantile"
)

// DetectorResult is the dirty-tile detector alone on one case, beside the
// floor of any scan: a plain bytes.Equal over the same two frames.
type DetectorResult struct {
	Case string `json:"case"`
	// Detect and BytesEqual are median times over the same iterations.
	Detect     time.Duration `json:"detect_ns"`
	BytesEqual time.Duration `json:"bytes_equal_ns"`
	// Dirty is how many tiles the detector found.
	Dirty int `json:"dirty_tiles"`
}

// Ratio is the detector's time over bytes.Equal's (the goal is at most
// 1.5 on a static frame, where bytes.Equal has to read every byte too).
func (d DetectorResult) Ratio() float64 {
	if d.BytesEqual <= 0 {
		return 0
	}
	return float64(d.Detect) / float64(d.BytesEqual)
}

// RunDetector times the detector and bytes.Equal on a case, interleaved
// iteration by iteration so that both see the same state of the machine.
// bytes.Equal stops at the first difference, so the ratio means something
// only on the static case; the detector's own time is the price every codec
// pays on every case.
func RunDetector(c Case, warmup, iters int) DetectorResult {
	prev, cur := c.Frames()
	res := DetectorResult{Case: c.Name}
	var rects []codec.Rect
	var pb []byte
	if prev != nil {
		pb = pixelBytes(prev)
	}
	cb := pixelBytes(cur)
	det := make([]time.Duration, 0, iters)
	eq := make([]time.Duration, 0, iters)
	sink := false
	for i := range warmup + iters {
		start := time.Now()
		rects = dirty.Detect(prev, cur, rects[:0])
		d := time.Since(start)
		start = time.Now()
		sink = sink != bytes.Equal(pb, cb)
		e := time.Since(start)
		if i >= warmup {
			det, eq = append(det, d), append(eq, e)
		}
	}
	_ = sink
	res.Dirty = len(rects)
	res.Detect, res.BytesEqual = quantile.Median(det), quantile.Median(eq)
	return res
}

// pixelBytes views a frame's pixels as bytes, as the detector compares
// them: the same memory, no copy.
func pixelBytes(f *codec.Frame) []byte {
	if len(f.Pix) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f.Pix[0])), 4*len(f.Pix))
}
