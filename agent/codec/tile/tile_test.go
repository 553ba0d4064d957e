package tile

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
)

func newPair(t testing.TB, cf bool) (*Encoder, *Decoder) {
	e, err := NewEncoder(Options{CarryForward: cf})
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

func TestRoundTripMatrix(t *testing.T) {
	for _, cf := range []bool{false, true} {
		e, d := newPair(t, cf)
		for _, key := range []string{frames.Solid, frames.Gradient, frames.Noise} {
			k0 := frames.Keyframe(key, 320, 200, 1)
			roundTrip(t, e, d, nil, k0)
			for _, kind := range []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock} {
				for _, pct := range frames.Percentages {
					t.Run(fmt.Sprintf("cf=%v/%s/%s/%v", cf, key, kind, pct), func(t *testing.T) {
						roundTrip(t, e, d, k0, frames.PFrame(k0, kind, pct, 2))
					})
				}
			}
		}
	}
}

func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, cf := range []bool{false, true} {
		e, d := newPair(t, cf)
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
	for name, data := range cases {
		_, err := d.Decode(nil, 64, 64, data)
		assert.Error(t, err, name)
	}
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
	e, err := NewEncoder(Options{CarryForward: true})
	require.NoError(f, err)
	k := frames.Keyframe(frames.Solid, 70, 40, 1)
	p := frames.PFrame(k, frames.Blocks, 30, 2)
	for _, pair := range [][2]*codec.Frame{{nil, k}, {k, p}} {
		data, err := e.Encode(nil, pair[0], pair[1], dirty.Detect(pair[0], pair[1], nil))
		require.NoError(f, err)
		f.Add(data, true)
		f.Add(data, false)
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
	for _, key := range []string{frames.Solid, frames.Gradient, frames.Noise} {
		k := frames.Keyframe(key, frames.Width1080p, frames.Height1080p, 1)
		b, _ := plain.Encode(nil, nil, k, dirty.Detect(nil, k, nil))
		t.Logf("1080p keyframe %-8s %9d B", key, len(b))
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
