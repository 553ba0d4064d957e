// Package bench is the codec lab's benchmark (findings E9, E13): the same
// synthetic screens through every lossless codec, bytes and encode time per
// case, and the same codecs on recorded real desktops (RunRecorded).
//
// Method, as EvertyDesk's write-up measured and beyond it:
//   - Cases: keyframes (nothing to diff against) of a solid colour and of a
//     gradient with no two pixels equal, at 720p, 1080p and 4K (E5, E6);
//     P-frames at 1080p over a solid-colour desktop, as the write-up's
//     (E3), with 0 (static), 1, 5, 10, 25, 50 and 90% of the pixels changed
//     as scattered points, solid blocks, scattered noise and one block of
//     noise, "video in a corner" (E3, E7, E8). Not over a gradient: there
//     one changed pixel makes a Hextile tile Raw (no two pixels of a
//     gradient tile share a colour), and the matrix would measure nothing
//     but Raw tiles. Frames come from agent/codec/frames, seeded: every run sees the
//     same pixels.
//   - Every codec is charged the same honest dirty-tile detector
//     (agent/codec/dirty, 32x32 tiles) inside its timed region: no codec is
//     handed the changed tiles for free (E10), so the static case costs each
//     the scan of the frame, not 0.1 us.
//   - Time: each case runs Warmup encodes that are not counted, then Iters
//     timed ones (E9: 20 and 200); the figure is the median. The codecs of
//     a case take turns encode by encode (RunCase), so that on a machine
//     shared with other work they see the same load, and their ratios hold.
//   - Bytes: what a fresh encoder writes for the frame. A stateful codec
//     (ZRLE's one zlib stream per connection) would otherwise shrink the
//     same frame on every repeat as its dictionary learns it.
//   - Every encoded frame is decoded once and compared with the source: a
//     codec that is fast because it is wrong is an error, not a result.
package bench

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/agent/codec/hextile"
	"github.com/nuvirahub/latencylab/agent/codec/tile"
	"github.com/nuvirahub/latencylab/agent/codec/zrle"
	"github.com/nuvirahub/latencylab/internal/quantile"
)

// Case is one screen: a keyframe, or a P-frame over a solid colour.
type Case struct {
	Name string `json:"name"`
	W    int    `json:"w"`
	H    int    `json:"h"`
	// Kind is the keyframe kind (Key) or the P-frame's kind of change.
	Kind string  `json:"kind"`
	Key  bool    `json:"key"`
	Pct  float64 `json:"pct"`
}

// Cases returns the benchmark matrix.
func Cases() []Case {
	var out []Case
	for _, r := range []struct {
		name string
		w, h int
	}{{"720p", frames.Width720p, frames.Height720p}, {"1080p", frames.Width1080p, frames.Height1080p}, {"4K", frames.Width4K, frames.Height4K}} {
		for _, k := range []string{frames.Solid, frames.Gradient} {
			out = append(out, Case{Name: fmt.Sprintf("key-%s-%s", k, r.name), W: r.w, H: r.h, Kind: k, Key: true})
		}
	}
	for _, k := range []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock} {
		for _, p := range frames.Percentages {
			if p == 0 && k != frames.Points {
				continue // one static case is enough: nothing changed is nothing changed
			}
			name := fmt.Sprintf("p-%s-%gpct", k, p)
			if p == 0 {
				name = "p-static-0pct"
			}
			out = append(out, Case{Name: name, W: frames.Width1080p, H: frames.Height1080p, Kind: k, Pct: p})
		}
	}
	return out
}

// Frames builds a case's previous and current frame (prev is nil for a
// keyframe).
func (c Case) Frames() (prev, cur *codec.Frame) {
	if c.Key {
		return nil, frames.Keyframe(c.Kind, c.W, c.H, 1)
	}
	prev = frames.Keyframe(frames.Solid, c.W, c.H, 1)
	return prev, frames.PFrame(prev, c.Kind, c.Pct, 2)
}

// Codec makes a fresh encoder and its decoder.
type Codec struct {
	Name string
	New  func() (codec.Encoder, codec.Decoder, error)
}

// Codecs are the codecs compared: the tile XOR+zstd codec (EVRTCK-like, E1)
// with and without carry-forward (E12), Hextile (E2, E4), ZRLE (E12), and
// the tile codec with one zstd frame per tile (tile-pertile), the lab's
// hypothesis for the write-up's per-tile cost (E5, E6).
func Codecs() []Codec {
	tileCodec := func(opts tile.Options) func() (codec.Encoder, codec.Decoder, error) {
		return func() (codec.Encoder, codec.Decoder, error) {
			e, err := tile.NewEncoder(opts)
			if err != nil {
				return nil, nil, err
			}
			d, err := tile.NewDecoder()
			return e, d, err
		}
	}
	return []Codec{
		{"tile", tileCodec(tile.Options{})},
		{"tile-carry", tileCodec(tile.Options{CarryForward: true})},
		{"hextile", func() (codec.Encoder, codec.Decoder, error) { return hextile.NewEncoder(), hextile.NewDecoder(), nil }},
		{"zrle", func() (codec.Encoder, codec.Decoder, error) { return zrle.NewEncoder(), zrle.NewDecoder(), nil }},
		{TilePerTile, tileCodec(tile.Options{PerTileFrame: true})},
	}
}

// TilePerTile names the tile codec that compresses each dirty tile as its
// own zstd frame (tile.Options.PerTileFrame) in tables and plots.
const TilePerTile = "tile-pertile"

// SelectCodecs returns the codecs whose name matches re, in Codecs' order.
func SelectCodecs(re *regexp.Regexp) []Codec {
	var out []Codec
	for _, cd := range Codecs() {
		if re.MatchString(cd.Name) {
			out = append(out, cd)
		}
	}
	return out
}

// Result is one codec on one case.
type Result struct {
	Case  string `json:"case"`
	Codec string `json:"codec"`
	// Bytes is what a fresh encoder writes; Median the median encode time,
	// dirty-tile detection included; MBps the input pixels (4 bytes each)
	// encoded per second at that median.
	Bytes  int           `json:"bytes"`
	Median time.Duration `json:"median_ns"`
	MBps   float64       `json:"mb_per_s"`
}

// Run measures one codec on one case: warmup encodes not counted, then
// iters timed ones.
func Run(c Case, cd Codec, warmup, iters int) (Result, error) {
	rs, err := RunCase(c, []Codec{cd}, warmup, iters)
	if err != nil {
		return Result{}, err
	}
	return rs[0], nil
}

// RunCase measures codecs on one case, interleaved: each of the
// warmup+iters rounds times one encode of every codec in turn, so that the
// codecs of a case see the same state of a machine shared with other work,
// and the ratios between them hold even while its load moves (run one after
// the other, a codec's median moved with the load of its own minute).
func RunCase(c Case, cds []Codec, warmup, iters int) ([]Result, error) {
	prev, cur := c.Frames()
	return runFrames(c.Name, prev, cur, cds, warmup, iters)
}

// runFrames measures codecs on one pair of frames (prev nil for a
// keyframe), as RunCase says, naming the results' case name.
func runFrames(name string, prev, cur *codec.Frame, cds []Codec, warmup, iters int) ([]Result, error) {
	c := Case{Name: name, W: cur.W, H: cur.H}
	type running struct {
		enc   codec.Encoder
		buf   []byte
		times []time.Duration
	}
	rs := make([]running, len(cds))
	out := make([]Result, len(cds))
	var rects []codec.Rect
	rects = dirty.Detect(prev, cur, rects)
	for i, cd := range cds {
		enc, dec, err := cd.New()
		if err != nil {
			return nil, err
		}
		data, err := enc.Encode(nil, prev, cur, rects)
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", cd.Name, c.Name, err)
		}
		got, err := dec.Decode(prev, c.W, c.H, data)
		if err != nil {
			return nil, fmt.Errorf("%s on %s: its own output does not decode: %w", cd.Name, c.Name, err)
		}
		if !slices.Equal(got.Pix, cur.Pix) {
			return nil, fmt.Errorf("%s on %s: the decoded frame differs from the source", cd.Name, c.Name)
		}
		rs[i] = running{enc: enc, buf: data[:0], times: make([]time.Duration, 0, iters)}
		out[i] = Result{Case: c.Name, Codec: cd.Name, Bytes: len(data)}
	}

	for round := range warmup + iters {
		for i := range rs {
			r := &rs[i]
			start := time.Now()
			rects = dirty.Detect(prev, cur, rects[:0])
			var err error
			if r.buf, err = r.enc.Encode(r.buf[:0], prev, cur, rects); err != nil {
				return out, err
			}
			if round >= warmup {
				r.times = append(r.times, time.Since(start))
			}
		}
	}
	for i, r := range rs {
		out[i].Median = quantile.Median(r.times)
		out[i].MBps = float64(c.W*c.H*4) / out[i].Median.Seconds() / 1e6
	}
	return out, nil
}

// Table writes results as Markdown: one row per case, and per codec the
// bytes, the median encode time and the input it encodes per second.
func Table(cases []Case, codecs []Codec, results []Result) string {
	by := map[string]Result{}
	for _, r := range results {
		by[r.Case+"/"+r.Codec] = r
	}
	var b strings.Builder
	b.WriteString("| case |")
	for _, cd := range codecs {
		fmt.Fprintf(&b, " %s bytes | %s time |", cd.Name, cd.Name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|---|", len(codecs)) + "\n")
	for _, c := range cases {
		fmt.Fprintf(&b, "| %s |", c.Name)
		for _, cd := range codecs {
			r, ok := by[c.Name+"/"+cd.Name]
			if !ok {
				b.WriteString(" | |")
				continue
			}
			fmt.Fprintf(&b, " %d | %s (%.0f MB/s) |", r.Bytes, r.Median.Round(time.Microsecond), r.MBps)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// runDetect is the detector every codec is charged with.
func runDetect(prev, cur *codec.Frame, dst []codec.Rect) []codec.Rect {
	return dirty.Detect(prev, cur, dst)
}
