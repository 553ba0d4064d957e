package dirty

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
)

// naive is the reference: every tile compared pixel by pixel.
func naive(prev, cur *codec.Frame) []codec.Rect {
	var out []codec.Rect
	for y0 := 0; y0 < cur.H; y0 += codec.TileSize {
		for x0 := 0; x0 < cur.W; x0 += codec.TileSize {
			r := codec.Rect{X: x0, Y: y0, W: min(codec.TileSize, cur.W-x0), H: min(codec.TileSize, cur.H-y0)}
			d := prev == nil
			for y := r.Y; y < r.Y+r.H && !d; y++ {
				for x := r.X; x < r.X+r.W && !d; x++ {
					d = prev.At(x, y) != cur.At(x, y)
				}
			}
			if d {
				out = append(out, r)
			}
		}
	}
	return out
}

func TestDetectAllOnNil(t *testing.T) {
	cur := codec.NewFrame(100, 70) // 4x3 tiles, edge tiles 4 and 6 pixels
	got := Detect(nil, cur, nil)
	assert.Len(t, got, 12)
	assert.Equal(t, codec.Rect{X: 96, Y: 64, W: 4, H: 6}, got[11])
	assert.Len(t, Detect(codec.NewFrame(10, 10), cur, nil), 12, "size change")
}

func TestDetectStatic(t *testing.T) {
	f := frames.Keyframe(frames.Noise, 333, 201, 1)
	assert.Empty(t, Detect(f, f.Clone(), nil))
}

func TestDetectMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		w, h := 1+r.IntN(150), 1+r.IntN(150)
		prev := frames.Keyframe(frames.Noise, w, h, uint64(i))
		cur := prev.Clone()
		for range r.IntN(6) {
			cur.Pix[r.IntN(len(cur.Pix))] ^= 1 + r.Uint32N(0xffffff)
		}
		assert.Equal(t, naive(prev, cur), Detect(prev, cur, nil), "%dx%d", w, h)
	}
	for _, k := range []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock} {
		prev := frames.Keyframe(frames.Gradient, 320, 200, 1)
		cur := frames.PFrame(prev, k, 5, 2)
		assert.Equal(t, naive(prev, cur), Detect(prev, cur, nil), k)
	}
}

func TestDetectReusesDst(t *testing.T) {
	f := codec.NewFrame(64, 64)
	dst := make([]codec.Rect, 0, 8)
	got := Detect(nil, f, dst)
	assert.Same(t, &dst[:1][0], &got[0])
}

// The benchmarks below compare the detector with the cheapest possible
// answer to "did anything change" on a static 1080p frame (E10: the static
// case must cost every codec the detector's scan). Run with
//
//	go test -run '^$' -bench . -count 10 ./agent/codec/dirty/
func static1080() (prev, cur *codec.Frame) {
	prev = frames.Keyframe(frames.Gradient, frames.Width1080p, frames.Height1080p, 1)
	return prev, prev.Clone()
}

func BenchmarkDetectStatic1080p(b *testing.B) {
	prev, cur := static1080()
	dst := make([]codec.Rect, 0, 4096)
	b.SetBytes(int64(4 * len(cur.Pix)))
	for b.Loop() {
		dst = Detect(prev, cur, dst)
	}
}

func BenchmarkSlicesEqualStatic1080p(b *testing.B) {
	prev, cur := static1080()
	b.SetBytes(int64(4 * len(cur.Pix)))
	for b.Loop() {
		if !slices.Equal(prev.Pix, cur.Pix) {
			b.Fatal("differs")
		}
	}
}

// BenchmarkBytesEqualStatic1080p compares the same pixels serialised as
// bytes: bytes.Equal is the runtime's vectorised memequal, the floor any
// scan can hope for.
func BenchmarkBytesEqualStatic1080p(b *testing.B) {
	prev, cur := static1080()
	pb := binary.LittleEndian.AppendUint32(nil, 0)[:0]
	for _, p := range prev.Pix {
		pb = binary.LittleEndian.AppendUint32(pb, p)
	}
	cb := bytes.Clone(pb)
	_ = cur
	b.SetBytes(int64(len(pb)))
	for b.Loop() {
		if !bytes.Equal(pb, cb) {
			b.Fatal("differs")
		}
	}
}
