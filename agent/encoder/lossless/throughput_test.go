package lossless

import (
	"flag"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/internal/seeded"
)

var throughput = flag.Bool("throughput", false, "measure the codecs' throughput on the painter's content (the figures of model.go)")

// TestThroughput measures what the encode time model's text figures come
// from, by the codec benchmark's method (agent/codec/bench): the dirty-tile
// detector and the encoder timed together, 5 warm-up encodes, the median
// of 20. The frame is a 1080p desktop (text at detail 0.5) with 90% of it
// repainted, as the benchmark's 90% cases, once as text (detail 0.6) and
// once as a photo (0.9, beside the benchmark's block of noise). It runs
// only when asked, since it takes half a minute and its figures depend on
// the machine:
//
//	go test ./agent/encoder/lossless -run TestThroughput -throughput -v
func TestThroughput(t *testing.T) {
	if !*throughput {
		t.Skip("run with -throughput")
	}
	const warmup, iters = 5, 20
	for _, detail := range []float64{0.6, 0.9} {
		p := frames.NewPainter(seeded.New(1, "throughput"))
		prev := codec.NewFrame(DefaultWidth, DefaultHeight)
		p.Paint(prev, codec.Rect{W: prev.W, H: prev.H}, 0.5)
		cur := prev.Clone()
		p.Paint(cur, p.Area(cur, 0.9), detail)
		rects := dirty.Detect(prev, cur, nil)
		in := 0
		for _, r := range rects {
			in += 4 * r.W * r.H
		}
		for _, name := range Codecs() {
			enc, err := codecs[name]()
			require.NoError(t, err)
			var times []time.Duration
			var size int
			for i := range warmup + iters {
				start := time.Now()
				rects = dirty.Detect(prev, cur, rects[:0])
				out, err := enc.Encode(nil, prev, cur, rects)
				took := time.Since(start)
				require.NoError(t, err)
				if i >= warmup {
					times = append(times, took)
				}
				size = len(out)
			}
			slices.Sort(times)
			med := times[len(times)/2]
			t.Logf("detail %.1f %-8s %d dirty tiles (%d B): %8d B, median %9v, %4.0f MB/s of dirty tiles (the scan taken off)",
				detail, name, len(rects), in, size, med, float64(in)/(med-scan1080p).Seconds()/1e6)
		}
	}
}
