package measure

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
)

// FrameBytes gives, for any interval, the bytes a frame-by-frame sum gives,
// frames never sent (instant 0) counting nowhere.
func TestFrameBytesMatchesASumOverTheFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	fs := make([]result.FrameRecord, 500)
	for i := range fs {
		fs[i].Bytes = 1 + rng.IntN(50_000)
		if rng.IntN(10) > 0 {
			fs[i].Sent = time.Duration(rng.Int64N(int64(10 * time.Second)))
		}
	}
	fs[3].Sent, fs[4].Sent = fs[5].Sent, fs[5].Sent // equal instants
	sent := func(f result.FrameRecord) time.Duration { return f.Sent }
	fb := NewFrameBytes(fs, sent)
	for range 2000 {
		a := time.Duration(rng.Int64N(int64(11*time.Second))) - time.Second
		b := a + time.Duration(rng.Int64N(int64(3*time.Second)))
		if rng.IntN(20) == 0 {
			a = fs[5].Sent // an interval starting on a frame counts it
		}
		var want int64
		for _, f := range fs {
			if f.Sent > 0 && f.Sent >= a && f.Sent < b {
				want += int64(f.Bytes)
			}
		}
		if got := fb.In(a, b); got != want {
			t.Fatalf("In(%v, %v) = %d bytes, want %d", a, b, got, want)
		}
	}
	if got := fb.In(time.Second, time.Second); got != 0 {
		t.Errorf("an empty interval holds %d bytes, want 0", got)
	}
}
