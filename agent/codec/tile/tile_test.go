package tile

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
)

func newPair(t testing.TB, cf bool) (*Encoder, *Decoder) {
	return newPairOpts(t, Options{CarryForward: cf})
}

func newPairOpts(t testing.TB, opts Options) (*Encoder, *Decoder) {
	e, err := NewEncoder(opts)
	require.NoError(t, err)
	d, err := NewDecoder()
	require.NoError(t, err)
	return e, d
}

// roundTrip encodes cur against prev with the shared detector's dirty list
// and checks the decoder rebuilds cur exactly; it returns the encoded size.
func roundTrip(t testing.TB, e *Encoder, d *Decoder, prev, cur *codec.Frame) int {
	data, err := e.Encode(nil, prev, cur, dirty.Detect(prev, cur, nil))
	require.NoError(t, err)
	var base *codec.Frame
	if prev != nil {
		base = prev.Clone()
	}
	got, err := d.Decode(base, cur.W, cur.H, data)
	require.NoError(t, err)
	require.Equal(t, cur.Pix, got.Pix)
	if prev != nil {
		require.Equal(t, prev.Pix, base.Pix, "decoder modified prev")
	}
	return len(data)
}

// allOptions are every framing with and without carry-forward.
var allOptions = []Options{{}, {CarryForward: true}, {PerTileFrame: true}, {PerTileFrame: true, CarryForward: true}}

func TestRoundTripMatrix(t *testing.T) {
	for _, opts := range allOptions {
		e, d := newPairOpts(t, opts)
		for _, key := range []string{frames.Solid, frames.Gradient, frames.Noise} {
			k0 := frames.Keyframe(key, 320, 200, 1)
			roundTrip(t, e, d, nil, k0)
			for _, kind := range []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock} {
				for _, pct := range frames.Percentages {
					t.Run(fmt.Sprintf("%s/%s/%s/%v", e.Name(), key, kind, pct), func(t *testing.T) {
						roundTrip(t, e, d, k0, frames.PFrame(k0, kind, pct, 2))
					})
				}
			}
		}
	}
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, opts := range allOptions {
		e, d := newPairOpts(t, opts)
		for i := range 100 {
			w, h := 1+r.IntN(130), 1+r.IntN(130)
			prev := randomFrame(r, w, h)
			roundTrip(t, e, d, nil, prev)
			cur := prev.Clone()
			for range r.IntN(w * h) {
				cur.Pix[r.IntN(len(cur.Pix))] = pick(r)
			}
			roundTrip(t, e, d, prev, cur)
			_ = i
		}
	}
}

// randomFrame mixes solid runs and noise from a small palette, so that
// solid tiles (and carry-forward) occur as well as noisy ones.
func randomFrame(r *rand.Rand, w, h int) *codec.Frame {
	f := codec.NewFrame(w, h)
	c := pick(r)
	for i := range f.Pix {
		if r.IntN(200) == 0 {
			c = pick(r)
		}
		f.Pix[i] = c
	}
	return f
}

func pick(r *rand.Rand) uint32 {
	if r.IntN(2) == 0 {
		return []uint32{0, 0xffffff, 0x123456}[r.IntN(3)]
	}
	return r.Uint32() & 0xffffff
}

func TestCarryForwardShrinksSolidBlocks(t *testing.T) {
	prev := frames.Keyframe(frames.Gradient, 640, 480, 1)
	cur := frames.PFrame(prev, frames.Blocks, 50, 2)
	plain, d := newPair(t, false)
	cf, _ := newPair(t, true)
	a := roundTrip(t, plain, d, prev, cur)
	b := roundTrip(t, cf, d, prev, cur)
	assert.Less(t, b, a)
	t.Logf("blocks 50%% 640x480: plain %d B, carry-forward %d B", a, b)
}

func TestEncodeDirtyRects(t *testing.T) {
	// A rectangle that spans tiles and leaves the frame sends each touched
	// tile once and ignores the outside part.
	e, d := newPair(t, false)
	prev := frames.Keyframe(frames.Noise, 100, 100, 1)
	cur := prev.Clone()
	for y := 30; y < 40; y++ {
		for x := 30; x < 100; x++ {
			cur.Pix[y*100+x] ^= 0x10
		}
	}
	data, err := e.Encode(nil, prev, cur, []codec.Rect{{X: 30, Y: 30, W: 200, H: 10}, {X: 31, Y: 31, W: 1, H: 1}})
	require.NoError(t, err)
	got, err := d.Decode(prev, 100, 100, data)
	require.NoError(t, err)
	assert.Equal(t, cur.Pix, got.Pix)
}

func TestEncodeErrors(t *testing.T) {
	e, _ := newPair(t, false)
	_, err := e.Encode(nil, codec.NewFrame(2, 2), codec.NewFrame(3, 3), nil)
	assert.Error(t, err)
	f := codec.NewFrame(2, 2)
	f.Pix[0] = 0x01000000
	_, err = e.Encode(nil, nil, f, dirty.Detect(nil, f, nil))
	assert.Error(t, err)
}

// payload compresses a hand-made payload, for malformed-input tests.
func payload(t *testing.T, p ...byte) []byte {
	z, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer z.Close()
	return z.EncodeAll(p, nil)
}

func TestDecodeRejects(t *testing.T) {
	_, d := newPair(t, false)
	e, _ := newPair(t, false)
	k := frames.Keyframe(frames.Noise, 64, 64, 1)
	good, err := e.Encode(nil, nil, k, dirty.Detect(nil, k, nil))
	require.NoError(t, err)
	tile := make([]byte, 3*32*32)
	cases := map[string][]byte{
		"zstd garbage":       []byte("definitely not zstd"),
		"truncated zstd":     good[:len(good)/2],
		"empty payload":      payload(t),
		"unknown flags":      payload(t, 0x80, 0),
		"count too large":    payload(t, 1, 5),
		"bad tile index":     payload(t, append([]byte{1, 1, 4, 0}, tile...)...),
		"truncated record":   payload(t, 1, 1, 0),
		"truncated tile":     payload(t, 1, 1, 0, 0, 1, 2, 3),
		"unknown tag":        payload(t, 1, 1, 0, 7),
		"carry without flag": payload(t, 1, 1, 0, 1),
		"carry without base": payload(t, 3, 1, 0, 1),
		"trailing bytes":     payload(t, append(append([]byte{1, 1, 0, 0}, tile...), 9)...),
		"p-frame no prev":    payload(t, 0, 0),
	}
	// Per-tile frames: raw records, each XOR tile a zstd frame of its own.
	zframe := func(n int) []byte { return payload(t, make([]byte, n)...) }
	perTile := func(frame []byte) []byte {
		return binary.AppendUvarint([]byte{flagKeyframe | flagTileFrames, 1, 0, tagXOR}, uint64(len(frame)))
	}
	goodTile := append(perTile(zframe(len(tile))), zframe(len(tile))...)
	twoFrames := append(zframe(len(tile)), zframe(len(tile))...)
	cases["per-tile flag in a stream"] = payload(t, append([]byte{flagKeyframe | flagTileFrames, 1, 0, 0}, tile...)...)
	cases["tile frame truncated"] = goodTile[:len(goodTile)-3]
	cases["tile frame size beyond"] = append(perTile(make([]byte, 200)), 1, 2, 3)
	cases["tile frame garbage"] = append(perTile([]byte("not zstd")), "not zstd"...)
	cases["tile frame short"] = append(perTile(zframe(30)), zframe(30)...)
	cases["tile frame twice"] = append(perTile(twoFrames), twoFrames...)
	cases["tile trailing bytes"] = append(slices.Clone(goodTile), 9)
	for name, data := range cases {
		_, err := d.Decode(nil, 64, 64, data)
		assert.Error(t, err, name)
	}
	_, err = d.Decode(nil, 64, 64, goodTile)
	assert.NoError(t, err, "the hand-made per-tile baseline")
	_, err = d.Decode(nil, 0, 64, good)
	assert.Error(t, err, "bad size")
	_, err = d.Decode(codec.NewFrame(8, 8), 64, 64, payload(t, 0, 0))
	assert.Error(t, err, "prev size")
	// The hand-made baseline itself is valid: the cases fail for their
	// stated reason, not for a bad fixture.
	_, err = d.Decode(nil, 64, 64, payload(t, append([]byte{1, 1, 0, 0}, tile...)...))
	assert.NoError(t, err)
}

func FuzzDecode(f *testing.F) {
	k := frames.Keyframe(frames.Solid, 70, 40, 1)
	p := frames.PFrame(k, frames.Blocks, 30, 2)
	for _, opts := range []Options{{CarryForward: true}, {CarryForward: true, PerTileFrame: true}} {
		e, err := NewEncoder(opts)
		require.NoError(f, err)
		for _, pair := range [][2]*codec.Frame{{nil, k}, {k, p}} {
			data, err := e.Encode(nil, pair[0], pair[1], dirty.Detect(pair[0], pair[1], nil))
			require.NoError(f, err)
			f.Add(data, true)
			f.Add(data, false)
		}
	}
	f.Add([]byte("garbage"), false)
	d, err := NewDecoder()
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, data []byte, withPrev bool) {
		var prev *codec.Frame
		if withPrev {
			prev = k
		}
		got, err := d.Decode(prev, 70, 40, data)
		if err == nil {
			require.Len(t, got.Pix, 70*40)
		}
	})
}

// TestSizes logs encoded sizes of a few cases at 1080p (go test -v -run Sizes).
func TestSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("1080p")
	}
	plain, _ := newPair(t, false)
	cf, _ := newPair(t, true)
	perTile, _ := newPairOpts(t, Options{PerTileFrame: true})
	for _, key := range []string{frames.Solid, frames.Gradient, frames.Noise} {
		k := frames.Keyframe(key, frames.Width1080p, frames.Height1080p, 1)
		b, _ := plain.Encode(nil, nil, k, dirty.Detect(nil, k, nil))
		pt, _ := perTile.Encode(nil, nil, k, dirty.Detect(nil, k, nil))
		t.Logf("1080p keyframe %-8s %9d B  per-tile frames %9d B", key, len(b), len(pt))
	}
	k := frames.Keyframe(frames.Gradient, frames.Width1080p, frames.Height1080p, 1)
	for _, kind := range []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock} {
		for _, pct := range []float64{0, 1, 10, 90} {
			p := frames.PFrame(k, kind, pct, 2)
			dr := dirty.Detect(k, p, nil)
			a, _ := plain.Encode(nil, k, p, dr)
			b, _ := cf.Encode(nil, k, p, dr)
			t.Logf("1080p P %-11s %3v%% %9d B  cf %9d B", kind, pct, len(a), len(b))
		}
	}
}

// With per-tile frames every XOR tile is a zstd frame of its own: each
// decodes alone, with a fresh decoder and in any order, to exactly that
// tile's XORed planes, and nothing compresses the records as a whole.
func TestPerTileFramesDecodeAlone(t *testing.T) {
	for _, cf := range []bool{false, true} {
		prev := frames.Keyframe(frames.Gradient, 200, 120, 1)
		cur := frames.PFrame(prev, frames.Blocks, 25, 2)
		for _, pair := range [][2]*codec.Frame{{nil, prev}, {prev, cur}} {
			e, _ := newPairOpts(t, Options{PerTileFrame: true, CarryForward: cf})
			rects := dirty.Detect(pair[0], pair[1], nil)
			data, err := e.Encode(nil, pair[0], pair[1], rects)
			require.NoError(t, err)
			require.NotEqual(t, []byte{0x28, 0xb5, 0x2f, 0xfd}, data[:4], "one zstd stream over the frame")

			recs := tileRecords(t, data, pair[1].W, pair[1].H)
			require.Len(t, recs, len(rects), "one record per dirty tile (the detector's rectangles are tiles)")
			xor := 0
			for i := len(recs) - 1; i >= 0; i-- {
				rec := recs[i]
				if rec.frame == nil {
					require.True(t, cf, "a record without a frame is a carry-forward marker")
					continue
				}
				xor++
				zd, err := zstd.NewReader(nil)
				require.NoError(t, err)
				got, err := zd.DecodeAll(rec.frame, nil)
				zd.Close()
				require.NoError(t, err, "tile %d alone", rec.index)
				cols, _ := tiles(pair[1].W, pair[1].H)
				x0, y0 := rec.index%cols*codec.TileSize, rec.index/cols*codec.TileSize
				x1, y1 := min(x0+codec.TileSize, pair[1].W), min(y0+codec.TileSize, pair[1].H)
				want, err := appendPlanes(nil, pair[0], pair[1], x0, y0, x1, y1)
				require.NoError(t, err)
				require.Equal(t, want, got, "tile %d", rec.index)
			}
			require.NotZero(t, xor)
		}
	}
}

type tileRecord struct {
	index int
	frame []byte // nil for a carry-forward marker
}

// tileRecords walks a per-tile encoding's raw records, as the format in the
// package comment describes them, without the decoder.
func tileRecords(t *testing.T, data []byte, w, h int) []tileRecord {
	t.Helper()
	require.NotZero(t, data[0]&flagTileFrames, "flags %#x", data[0])
	p := data[1:]
	count, n := binary.Uvarint(p)
	require.Positive(t, n)
	p = p[n:]
	var out []tileRecord
	next := 0
	for range count {
		gap, n := binary.Uvarint(p)
		require.Positive(t, n)
		p = p[n:]
		rec := tileRecord{index: next + int(gap)}
		next = rec.index + 1
		tag := p[0]
		p = p[1:]
		if tag == tagXOR {
			size, n := binary.Uvarint(p)
			require.Positive(t, n)
			rec.frame, p = p[n:n+int(size)], p[n+int(size):]
		}
		out = append(out, rec)
	}
	require.Empty(t, p, "trailing bytes")
	return out
}

// The same frames give the same bytes: from a fresh encoder, and from one
// that has encoded other frames before (zstd keeps no history between
// frames of EncodeAll).
func TestEncodingIsDeterministic(t *testing.T) {
	k := frames.Keyframe(frames.Gradient, 300, 170, 1)
	seq := []*codec.Frame{k, frames.PFrame(k, frames.Blocks, 10, 2), frames.PFrame(k, frames.NoiseBlock, 25, 3), frames.PFrame(k, frames.Points, 5, 4)}
	for _, opts := range allOptions {
		encodeAll := func(e *Encoder) [][]byte {
			var out [][]byte
			var prev *codec.Frame
			for _, cur := range seq {
				data, err := e.Encode(nil, prev, cur, dirty.Detect(prev, cur, nil))
				require.NoError(t, err)
				out = append(out, data)
				prev = cur
			}
			return out
		}
		e1, _ := newPairOpts(t, opts)
		e2, _ := newPairOpts(t, opts)
		first := encodeAll(e1)
		require.Equal(t, first, encodeAll(e2), "%s: two fresh encoders", e1.Name())
		require.Equal(t, first, encodeAll(e1), "%s: the same encoder again", e1.Name())
	}
}
