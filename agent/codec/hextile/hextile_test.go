package hextile

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
)

// allTiles is every tile of a w x h frame, as the shared detector reports
// them for a keyframe (nothing to diff against).
func allTiles(w, h int) []codec.Rect { return dirty.Detect(nil, codec.NewFrame(w, h), nil) }

// The frames below are made here rather than by agent/codec/frames: these
// tests need specific shapes (a given colour, subrect layouts) the
// benchmark's generator does not make.

func solidFrame(w, h int, c uint32) *codec.Frame {
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = c
	}
	return f
}

// gradientFrame has no two pixels equal (up to 2^24 pixels), the worst case
// for Hextile (finding E6).
func gradientFrame(w, h int) *codec.Frame {
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = uint32(i*0x9E3779B1) & pixelMask
		if w*h <= 1<<24 {
			f.Pix[i] = uint32(i) & pixelMask
		}
	}
	return f
}

func noiseFrame(r *rand.Rand, w, h int) *codec.Frame {
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = r.Uint32() & pixelMask
	}
	return f
}

// scatteredFrame is base with n single pixels of colour c at random places.
func scatteredFrame(r *rand.Rand, base *codec.Frame, n int, c uint32) *codec.Frame {
	f := base.Clone()
	for range n {
		f.Pix[r.IntN(len(f.Pix))] = c
	}
	return f
}

// blocksFrame is base with n solid blocks of random colours and sizes.
func blocksFrame(r *rand.Rand, base *codec.Frame, n int) *codec.Frame {
	f := base.Clone()
	for range n {
		bw, bh := 1+r.IntN(40), 1+r.IntN(40)
		x0, y0 := r.IntN(f.W), r.IntN(f.H)
		c := r.Uint32() & pixelMask
		for y := y0; y < min(f.H, y0+bh); y++ {
			for x := x0; x < min(f.W, x0+bw); x++ {
				f.Pix[y*f.W+x] = c
			}
		}
	}
	return f
}

// expected is prev with the rectangles in dirty taken from cur.
func expected(prev, cur *codec.Frame, dirty []codec.Rect) *codec.Frame {
	var f *codec.Frame
	if prev == nil {
		f = codec.NewFrame(cur.W, cur.H)
	} else {
		f = prev.Clone()
	}
	for _, r := range dirty {
		for y := r.Y; y < r.Y+r.H; y++ {
			copy(f.Pix[y*f.W+r.X:y*f.W+r.X+r.W], cur.Pix[y*cur.W+r.X:y*cur.W+r.X+r.W])
		}
	}
	return f
}

func roundTrip(t *testing.T, prev, cur *codec.Frame, dirty []codec.Rect) []byte {
	t.Helper()
	data, err := NewEncoder().Encode(nil, prev, cur, dirty)
	require.NoError(t, err)
	got, err := NewDecoder().Decode(prev, cur.W, cur.H, data)
	require.NoError(t, err)
	want := expected(prev, cur, dirty)
	require.Equal(t, want.W, got.W)
	require.Equal(t, want.H, got.H)
	require.True(t, equalPix(want.Pix, got.Pix), "decoded frame differs")
	return data
}

func equalPix(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRoundTripKeyframes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const w, h = 200, 130 // not multiples of 32 or 16: partial tiles
	black := codec.NewFrame(w, h)
	grey := solidFrame(w, h, 0x808080)
	cases := map[string]*codec.Frame{
		"solid":     grey,
		"gradient":  gradientFrame(w, h),
		"scattered": scatteredFrame(r, grey, 300, 0xFF0000),
		"blocks":    blocksFrame(r, black, 30),
		"noise":     noiseFrame(r, w, h),
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			roundTrip(t, nil, f, allTiles(w, h))
		})
	}
}

func TestRoundTripPFrames(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const w, h = 160, 96
	prev := blocksFrame(r, solidFrame(w, h, 0x203040), 10)
	cases := map[string]*codec.Frame{
		"scattered": scatteredFrame(r, prev, 50, 0x00FF00),
		"blocks":    blocksFrame(r, prev, 5),
		"noise":     noiseFrame(r, w, h),
	}
	for name, cur := range cases {
		t.Run(name, func(t *testing.T) {
			var dirty []codec.Rect
			for _, tr := range allTiles(w, h) {
				if !equalRect(prev, cur, tr) {
					dirty = append(dirty, tr)
				}
			}
			roundTrip(t, prev, cur, dirty)
		})
	}
}

func equalRect(a, b *codec.Frame, r codec.Rect) bool {
	for y := r.Y; y < r.Y+r.H; y++ {
		if !equalPix(a.Pix[y*a.W+r.X:y*a.W+r.X+r.W], b.Pix[y*b.W+r.X:y*b.W+r.X+r.W]) {
			return false
		}
	}
	return true
}

// TestPropertyRandom round-trips random frames of random kinds with random
// dirty rectangle lists (any size and place, overlapping allowed).
func TestPropertyRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for iter := range 300 {
		w, h := 1+r.IntN(120), 1+r.IntN(90)
		palette := make([]uint32, 1+r.IntN(4))
		for i := range palette {
			palette[i] = r.Uint32() & pixelMask
		}
		var prev *codec.Frame
		if r.IntN(3) > 0 {
			prev = noiseFrame(r, w, h)
		}
		cur := codec.NewFrame(w, h)
		switch r.IntN(4) {
		case 0: // few colours: exercises mono and coloured subrects
			for i := range cur.Pix {
				cur.Pix[i] = palette[r.IntN(len(palette))]
			}
		case 1:
			cur = blocksFrame(r, solidFrame(w, h, palette[0]), r.IntN(8))
		case 2:
			cur = scatteredFrame(r, solidFrame(w, h, palette[0]), r.IntN(w*h/4+1), palette[len(palette)-1])
		default:
			cur = noiseFrame(r, w, h)
		}
		dirty := make([]codec.Rect, r.IntN(6))
		for i := range dirty {
			x, y := r.IntN(w), r.IntN(h)
			dirty[i] = codec.Rect{X: x, Y: y, W: 1 + r.IntN(w-x), H: 1 + r.IntN(h-y)}
		}
		t.Run("", func(t *testing.T) {
			_ = iter
			roundTrip(t, prev, cur, dirty)
		})
	}
}

// TestRawTileResetsBackground checks finding E4 (RFC 6143 section 7.7.4):
// the background of a tile following a Raw tile must be specified even when
// it equals the background before the Raw tile.
func TestRawTileResetsBackground(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const a = 0x112233
	f := solidFrame(48, 16, a)
	for y := range 16 {
		for x := 16; x < 32; x++ {
			f.Pix[y*48+x] = r.Uint32() & pixelMask
		}
	}
	dirty := []codec.Rect{{X: 0, Y: 0, W: 48, H: 16}}
	data := roundTrip(t, nil, f, dirty)

	off := 2 + rectHeaderSize
	assert.Equal(t, byte(BackgroundSpecified), data[off], "first tile specifies its background")
	off += 1 + BytesPerPixel
	assert.Equal(t, byte(Raw), data[off], "noise tile is Raw")
	off += 1 + 16*16*BytesPerPixel
	assert.Equal(t, byte(BackgroundSpecified), data[off], "tile after Raw specifies its background")
	assert.Len(t, data, off+1+BytesPerPixel)

	// A stream that carries the background over the Raw tile is rejected.
	bad := append([]byte(nil), data[:off]...)
	bad = append(bad, 0)
	_, err := NewDecoder().Decode(nil, 48, 16, bad)
	assert.ErrorIs(t, err, ErrNoColour)
}

// TestSolidKeyframeCost checks E5's structural cost: per rectangle a 12-byte
// header, 5 bytes for the first tile (mask + background) and 1 byte for each
// further tile (mask only, background carried).
func TestSolidKeyframeCost(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{1280, 720}, {1920, 1080}, {3840, 2160}} {
		f := solidFrame(sz.w, sz.h, 0x3366CC)
		data := roundTrip(t, nil, f, allTiles(sz.w, sz.h))
		// The encoder joins the keyframe's dirty tiles into the one
		// rectangle of the frame: its header, the first tile with its
		// background, then one subencoding byte per tile, the background
		// carried (E5's per-tile structural cost).
		tiles := ((sz.w + 15) / 16) * ((sz.h + 15) / 16)
		want := 2 + rectHeaderSize + 1 + BytesPerPixel + (tiles - 1)
		assert.Equal(t, want, len(data), "%dx%d", sz.w, sz.h)
		if sz.w == 1920 {
			// 120 x 68 Hextile tiles: 2 + 12 + 5 + 8159.
			assert.Equal(t, 8178, len(data))
		}
	}
}

// TestSizes logs the sizes quoted in the report.
func TestSizes(t *testing.T) {
	if testing.Short() {
		t.Skip("large frames")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, sz := range []struct{ w, h int }{{1280, 720}, {1920, 1080}, {3840, 2160}} {
		dirty := allTiles(sz.w, sz.h)
		solid := roundTrip(t, nil, solidFrame(sz.w, sz.h, 0x3366CC), dirty)
		grad := roundTrip(t, nil, gradientFrame(sz.w, sz.h), dirty)
		raw := sz.w * sz.h * BytesPerPixel
		t.Logf("%dx%d keyframe: solid %d B, gradient %d B (raw pixels %d B)", sz.w, sz.h, len(solid), len(grad), raw)
	}
	const w, h = 1920, 1080
	prev := solidFrame(w, h, 0xFFFFFF)
	cur := scatteredFrame(r, prev, 2000, 0x000000)
	var dirty []codec.Rect
	for _, tr := range allTiles(w, h) {
		if !equalRect(prev, cur, tr) {
			dirty = append(dirty, tr)
		}
	}
	data := roundTrip(t, prev, cur, dirty)
	t.Logf("1080p 2000 scattered points: %d dirty tiles, %d B", len(dirty), len(data))
}

func TestEncodeRejectsBadInput(t *testing.T) {
	f := codec.NewFrame(64, 64)
	e := NewEncoder()
	for _, r := range []codec.Rect{{X: 0, Y: 0, W: 0, H: 8}, {X: -1, Y: 0, W: 8, H: 8}, {X: 60, Y: 0, W: 8, H: 8}, {X: 0, Y: 60, W: 8, H: 8}} {
		_, err := e.Encode(nil, nil, f, []codec.Rect{r})
		assert.Error(t, err, "%+v", r)
	}
	_, err := e.Encode(nil, codec.NewFrame(32, 32), f, nil)
	assert.Error(t, err)
	_, err = e.Encode(nil, nil, nil, nil)
	assert.Error(t, err)
}

func header(x, y, w, h int, enc int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(x))
	b = binary.BigEndian.AppendUint16(b, uint16(y))
	b = binary.BigEndian.AppendUint16(b, uint16(w))
	b = binary.BigEndian.AppendUint16(b, uint16(h))
	return binary.BigEndian.AppendUint32(b, uint32(enc))
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestDecodeRejectsMalformed(t *testing.T) {
	one := []byte{0, 1}
	bg := []byte{BackgroundSpecified, 1, 2, 3, 0}
	cases := []struct {
		name string
		data []byte
		err  error
	}{
		{"empty", nil, ErrTruncated},
		{"short count", []byte{0}, ErrTruncated},
		{"missing rect", one, ErrTruncated},
		{"short header", cat(one, header(0, 0, 8, 8, 5)[:7]), ErrTruncated},
		{"no tile", cat(one, header(0, 0, 8, 8, 5)), ErrTruncated},
		{"short background", cat(one, header(0, 0, 8, 8, 5), bg[:3]), ErrTruncated},
		{"short raw", cat(one, header(0, 0, 2, 2, 5), []byte{Raw, 1, 2, 3}), ErrTruncated},
		{"unknown encoding", cat(one, header(0, 0, 8, 8, 0), bg), ErrEncoding},
		{"zero width", cat(one, header(0, 0, 0, 8, 5)), ErrZeroSize},
		{"zero height", cat(one, header(0, 0, 8, 0, 5)), ErrZeroSize},
		{"out of bounds x", cat(one, header(60, 0, 8, 8, 5), bg), ErrBounds},
		{"out of bounds y", cat(one, header(0, 41, 8, 8, 5), bg), ErrBounds},
		{"no background", cat(one, header(0, 0, 8, 8, 5), []byte{0}), ErrNoColour},
		{"short subrect count", cat(one, header(0, 0, 8, 8, 5), []byte{BackgroundSpecified | AnySubrects, 1, 2, 3, 0}), ErrTruncated},
		{"short subrect", cat(one, header(0, 0, 8, 8, 5), []byte{BackgroundSpecified | SubrectsColoured | AnySubrects, 1, 2, 3, 0, 1, 9, 9, 9, 0, 0x00}), ErrTruncated},
		{"no foreground carried", cat(one, header(0, 0, 8, 8, 5), []byte{BackgroundSpecified | AnySubrects, 1, 2, 3, 0, 1, 0x00, 0x00}), ErrNoColour},
		{"subrect out of tile", cat(one, header(0, 0, 8, 8, 5), []byte{BackgroundSpecified | ForegroundSpecified | AnySubrects, 1, 2, 3, 0, 4, 5, 6, 0, 1, 0x70, 0x10}), ErrSubrect},
		{"bad mask", cat(one, header(0, 0, 8, 8, 5), []byte{0x20}), ErrSubencoding},
		{"fg with coloured", cat(one, header(0, 0, 8, 8, 5), []byte{BackgroundSpecified | ForegroundSpecified | SubrectsColoured, 1, 2, 3, 0, 4, 5, 6, 0}), ErrSubencoding},
		{"trailing", cat(one, header(0, 0, 8, 8, 5), bg, []byte{9}), ErrTrailing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewDecoder().Decode(nil, 64, 48, c.data)
			assert.ErrorIs(t, err, c.err)
		})
	}
	_, err := NewDecoder().Decode(codec.NewFrame(10, 10), 64, 48, []byte{0, 0})
	assert.ErrorIs(t, err, ErrFrame)
	_, err = NewDecoder().Decode(nil, 0, 48, []byte{0, 0})
	assert.ErrorIs(t, err, ErrFrame)
}

func TestDecodeDoesNotModifyPrev(t *testing.T) {
	prev := solidFrame(32, 32, 0x010203)
	cur := solidFrame(32, 32, 0x040506)
	dirty := allTiles(32, 32)
	data, err := NewEncoder().Encode(nil, prev, cur, dirty)
	require.NoError(t, err)
	_, err = NewDecoder().Decode(prev, 32, 32, data)
	require.NoError(t, err)
	assert.Equal(t, uint32(0x010203), prev.Pix[0])
}

// FuzzDecode checks that the decoder never panics and that whatever it
// accepts stays a well-formed frame.
func FuzzDecode(f *testing.F) {
	const w, h = 64, 48
	r := rand.New(rand.NewPCG(11, 12))
	e := NewEncoder()
	for _, fr := range []*codec.Frame{
		solidFrame(w, h, 0xABCDEF),
		scatteredFrame(r, solidFrame(w, h, 0), 40, 0xFFFFFF),
		blocksFrame(r, noiseFrame(r, w, h), 4),
	} {
		data, err := e.Encode(nil, nil, fr, []codec.Rect{{X: 3, Y: 5, W: 40, H: 20}})
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte{0, 1})
	prev := noiseFrame(r, w, h)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := NewDecoder().Decode(prev, w, h, data)
		if err != nil {
			return
		}
		if got.W != w || got.H != h || len(got.Pix) != w*h {
			t.Fatalf("bad frame %dx%d with %d pixels", got.W, got.H, len(got.Pix))
		}
		for _, p := range got.Pix {
			if p&^pixelMask != 0 {
				t.Fatalf("pixel %#x has the padding byte set", p)
			}
		}
	})
}

func BenchmarkEncodeGradient1080p(b *testing.B) {
	f := gradientFrame(1920, 1080)
	dirty := allTiles(1920, 1080)
	e := NewEncoder()
	var buf []byte
	b.SetBytes(int64(len(f.Pix) * 4))
	for b.Loop() {
		buf, _ = e.Encode(buf[:0], nil, f, dirty)
	}
}
