package lossless

import (
	"math"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// rates is a codec's encode time model: what the real encode costs on the
// machine the figures were measured on, as throughputs in bytes of input
// (4 bytes a pixel) per second.
//
//   - scan: the dirty-tile detector over a whole frame that it compares
//     with the previous one. A keyframe has nothing to compare with and
//     pays no scan.
//   - kind: the codec over the dirty tiles, by the kind of content painted
//     there last.
//
// A frame's modelled time is the scan plus the sum over its dirty tiles of
// their bytes at their kind's rate; it depends only on the frame's size
// and its dirty tiles, so it is the same on every machine and every run.
type rates struct {
	scan float64
	kind [numKinds]float64
}

// The figures. Every one is a median by the codec benchmark's method
// (agent/codec/bench: the dirty-tile detector and the encoder timed
// together, 5 warm-up encodes, the median of 20 timed ones) at 1080p, on
// the lab's 2-CPU linux/amd64 machine with go1.26, while other work shared
// the machine. Contention only ever slows an encode down (it did, by up to
// 4x between runs), so each figure is the fastest of the runs' medians. A
// rate is the dirty tiles' bytes over the median less the scan.
//
// The scan and the photo kind are the benchmark's own cases, from four
// runs of (one of them the full matrix)
//
//	go run ./cmd/lab codecs -iters 20 -warmup 5 -run 'p-static|p-blocks-90|p-noise-block-90'
//
//	case                        dirty tiles (bytes)   tile      hextile   zrle
//	p-static-0pct, detector     0                     215-278 us: 260 us taken
//	p-noise-block-90pct         1905 (7,802,880 B)    18.2 ms   73.6 ms   178 ms
//	p-blocks-90pct (not used)   1934 (7,868,416 B)    14.0 ms   1.85 ms   6.14 ms
//
// The benchmark has no text. Its nearest case, solid blocks on a solid
// desktop, would charge Hextile a ninth of what it takes on text (its
// subrectangle search is what text costs), so the text kind is measured by
// the same method on the painter's own text: a 1080p desktop (detail 0.5)
// 90% repainted at detail 0.6, three runs of TestThroughput,
//
//	go test ./agent/encoder/lossless -run TestThroughput -throughput -v
//
//	text, detail 0.6            1914 (7,839,744 B)    35.3 ms   11.3 ms   20.5 ms
//
// The same runs put the painter's photo (detail 0.9) at 23.9, 91.5 and
// 102 ms: within a factor of two of the benchmark's noise, which is the
// painter's photo at full detail.
const (
	scan1080p  = 260 * time.Microsecond
	frame1080p = 1920 * 1080 * 4
	textDirty  = 7_839_744
	noiseDirty = 7_802_880
)

// rate is bytes over a median less the scan, in bytes per second.
func rate(bytes float64, median time.Duration) float64 {
	return bytes / (median - scan1080p).Seconds()
}

var scanRate = frame1080p / scan1080p.Seconds()

var codecRates = map[string]rates{
	CodecTile: {scan: scanRate, kind: [numKinds]float64{
		kindText:  rate(textDirty, 35_254*time.Microsecond),
		kindPhoto: rate(noiseDirty, 18_241*time.Microsecond),
	}},
	CodecHextile: {scan: scanRate, kind: [numKinds]float64{
		kindText:  rate(textDirty, 11_320*time.Microsecond),
		kindPhoto: rate(noiseDirty, 73_552*time.Microsecond),
	}},
	CodecZRLE: {scan: scanRate, kind: [numKinds]float64{
		kindText:  rate(textDirty, 20_524*time.Microsecond),
		kindPhoto: rate(noiseDirty, 178_350*time.Microsecond),
	}},
}

// encodeTime is the modelled time of one encode of a w x h frame whose
// detector found rects (one per dirty tile, as dirty.Detect lists them);
// kinds holds the content kind of every tile, cols tiles a row.
func (r rates) encodeTime(w, h int, key bool, rects []codec.Rect, kinds []uint8, cols int) time.Duration {
	var s float64
	if !key {
		s = float64(4*w*h) / r.scan
	}
	for _, t := range rects {
		k := kinds[t.Y/codec.TileSize*cols+t.X/codec.TileSize]
		s += float64(4*t.W*t.H) / r.kind[k]
	}
	return time.Duration(math.Round(s * 1e9))
}
