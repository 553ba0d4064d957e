package hextile

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// The tests in this file check the decoder (and, where the wire bytes are
// fully determined, the encoder) against byte strings built by hand from
// the text of RFC 6143 section 7.7.4 (as reproduced in rfbproto.rst), not
// from the encoder. Each one would fail if the rule it names were wrong.

// px is a pixel in the package's pixel format (32 bpp, little-endian,
// red-shift 16, green-shift 8, blue-shift 0): 0x00RRGGBB is sent as the
// bytes BB GG RR 00.
func px(c uint32) []byte { return []byte{byte(c), byte(c >> 8), byte(c >> 16), 0} }

// rect1 is a one-rectangle frame body: count, header, then the tiles.
func rect1(x, y, w, h int, tiles ...[]byte) []byte {
	return cat(append([][]byte{{0, 1}, header(x, y, w, h, EncodingType)}, tiles...)...)
}

func decodeSpec(t *testing.T, w, h int, data []byte) *codec.Frame {
	t.Helper()
	f, err := NewDecoder().Decode(nil, w, h, data)
	require.NoError(t, err)
	return f
}

// requireRect checks that every pixel of r in f is c.
func requireRect(t *testing.T, f *codec.Frame, r codec.Rect, c uint32) {
	t.Helper()
	for y := r.Y; y < r.Y+r.H; y++ {
		for x := r.X; x < r.X+r.W; x++ {
			require.Equal(t, c, f.At(x, y), "pixel %d,%d", x, y)
		}
	}
}

// "The rectangle is split into tiles starting at the top left going in
// left-to-right, top-to-bottom order ... If the width of the whole rectangle
// is not an exact multiple of 16 then the width of the last tile in each row
// will be correspondingly smaller", and likewise the height of the last row.
func TestSpecTiles16LeftToRightTopToBottom(t *testing.T) {
	const a, b, c, d = 0x0000AA, 0x00BB00, 0xCC0000, 0x123456
	// 20x18 at 1,2: tiles 16x16, 4x16, then 16x2, 4x2.
	data := rect1(1, 2, 20, 18,
		cat([]byte{BackgroundSpecified}, px(a)),
		cat([]byte{BackgroundSpecified}, px(b)),
		cat([]byte{BackgroundSpecified}, px(c)),
		cat([]byte{BackgroundSpecified}, px(d)),
	)
	f := decodeSpec(t, 24, 24, data)
	requireRect(t, f, codec.Rect{X: 1, Y: 2, W: 16, H: 16}, a)
	requireRect(t, f, codec.Rect{X: 17, Y: 2, W: 4, H: 16}, b)
	requireRect(t, f, codec.Rect{X: 1, Y: 18, W: 16, H: 2}, c)
	requireRect(t, f, codec.Rect{X: 17, Y: 18, W: 4, H: 2}, d)
	requireRect(t, f, codec.Rect{X: 0, Y: 0, W: 24, H: 2}, 0) // untouched
}

// "If the Raw bit is set then the other bits are irrelevant; width*height
// pixel values follow", in left-to-right scanline order (section 7.7.1).
// Pixel values are bytesPerPixel bytes in the agreed format.
func TestSpecRawTileAndPixelBytes(t *testing.T) {
	raw := cat(px(0x010203), px(0x040506), px(0x070809), px(0x0A0B0C), px(0x0D0E0F), px(0x101112))
	for _, mask := range []byte{Raw, Raw | BackgroundSpecified | AnySubrects, Raw | SubrectsColoured | ForegroundSpecified, 0xFF} {
		f := decodeSpec(t, 3, 2, rect1(0, 0, 3, 2, cat([]byte{mask}, raw)))
		require.Equal(t, []uint32{0x010203, 0x040506, 0x070809, 0x0A0B0C, 0x0D0E0F, 0x101112}, f.Pix, "mask %#x", mask)
	}
	// The encoder sends a noise tile as Raw: mask 1 then BB GG RR 00 per
	// pixel.
	cur := codec.NewFrame(2, 2)
	copy(cur.Pix, []uint32{0x112233, 0x445566, 0x778899, 0xAABBCC})
	data, err := NewEncoder().Encode(nil, nil, cur, []codec.Rect{{W: 2, H: 2}})
	require.NoError(t, err)
	require.Equal(t, rect1(0, 0, 2, 2, []byte{Raw}, px(0x112233), px(0x445566), px(0x778899), px(0xAABBCC)), data)
}

// "The most-significant four bits of x-and-y-position specify the X
// position, the least-significant specify the Y position. The
// most-significant four bits of width-and-height specify the width minus
// one, the least-significant specify the height minus one."
func TestSpecSubrectNibbles(t *testing.T) {
	const bg, fg = 0x112233, 0xAABBCC
	// One subrect at x=3, y=5, 4 wide, 2 high: 0x35, 0x31.
	tile := cat([]byte{BackgroundSpecified | ForegroundSpecified | AnySubrects}, px(bg), px(fg), []byte{1, 0x35, 0x31})
	f := decodeSpec(t, 16, 16, rect1(0, 0, 16, 16, tile))
	want := codec.NewFrame(16, 16)
	for i := range want.Pix {
		want.Pix[i] = bg
	}
	for y := 5; y < 7; y++ {
		for x := 3; x < 7; x++ {
			want.Pix[y*16+x] = fg
		}
	}
	require.Equal(t, want.Pix, f.Pix)

	// The encoder's bytes for that tile are fully determined: background
	// (most frequent colour) and foreground specified, one subrect.
	data, err := NewEncoder().Encode(nil, nil, want, []codec.Rect{{W: 16, H: 16}})
	require.NoError(t, err)
	require.Equal(t, rect1(0, 0, 16, 16, tile), data)
}

// "SubrectsColoured: If set then each subrectangle is preceded by a pixel
// value giving the colour of that subrectangle."
func TestSpecSubrectsColoured(t *testing.T) {
	const bg, c1, c2 = 0x000000, 0xFF0000, 0x00FF00
	tile := cat([]byte{BackgroundSpecified | AnySubrects | SubrectsColoured}, px(bg),
		[]byte{2}, px(c1), []byte{0x00, 0x00}, px(c2), []byte{0x11, 0x10})
	f := decodeSpec(t, 4, 4, rect1(0, 0, 4, 4, tile))
	require.Equal(t, []uint32{
		c1, 0, 0, 0,
		0, c2, c2, 0,
		0, 0, 0, 0,
		0, 0, 0, 0,
	}, f.Pix)
}

// "AnySubrects: If not set, there are no subrectangles (i.e. the whole tile
// is just solid background colour)"; "BackgroundSpecified: ... If this bit
// isn't set then the background is the same as the last tile."
func TestSpecBackgroundCarriedOver(t *testing.T) {
	const bg = 0x336699
	data := rect1(0, 0, 48, 1, cat([]byte{BackgroundSpecified}, px(bg)), []byte{0}, []byte{0})
	f := decodeSpec(t, 48, 1, data)
	requireRect(t, f, codec.Rect{W: 48, H: 1}, bg)

	// "The first non-raw tile in a rectangle must have this bit set":
	// nothing carries from one rectangle into the next.
	two := cat([]byte{0, 2},
		header(0, 0, 16, 1, EncodingType), []byte{BackgroundSpecified}, px(bg),
		header(16, 0, 16, 1, EncodingType), []byte{0})
	_, err := NewDecoder().Decode(nil, 32, 1, two)
	require.ErrorIs(t, err, ErrNoColour)
}

// "the background pixel value may not be carried over if the previous tile
// was raw."
func TestSpecBackgroundNotCarriedOverRaw(t *testing.T) {
	const bg = 0x336699
	// 34x1: three tiles, a specified background, a Raw tile, then a tile
	// that tries to carry the background over the Raw one.
	bad := rect1(0, 0, 34, 1, cat([]byte{BackgroundSpecified}, px(bg)), cat([]byte{Raw}, make([]byte, 16*4)), []byte{0})
	_, err := NewDecoder().Decode(nil, 34, 1, bad)
	require.ErrorIs(t, err, ErrNoColour)

	good := rect1(0, 0, 34, 1, cat([]byte{BackgroundSpecified}, px(bg)), cat([]byte{Raw}, make([]byte, 16*4)), cat([]byte{BackgroundSpecified}, px(bg)))
	f := decodeSpec(t, 34, 1, good)
	requireRect(t, f, codec.Rect{W: 16, H: 1}, bg)
	requireRect(t, f, codec.Rect{X: 16, W: 16, H: 1}, 0)
	requireRect(t, f, codec.Rect{X: 32, W: 2, H: 1}, bg)
}

// "As with the background, the foreground pixel value can be left
// unspecified, meaning it is carried over from the previous tile. The
// foreground pixel value may not be carried over if the previous tile was
// raw or had the SubrectsColored bit set. It may, however, be carried over
// from a previous tile with the AnySubrects bit clear, as long as that tile
// itself carried over a valid foreground from its previous tile."
func TestSpecForegroundCarryOver(t *testing.T) {
	const bg, fg = 0x101010, 0xE0E0E0
	first := cat([]byte{BackgroundSpecified | ForegroundSpecified | AnySubrects}, px(bg), px(fg), []byte{1, 0x00, 0x00})
	noSubrects := []byte{0}                               // bg carried, fg untouched
	carried := []byte{AnySubrects, 1, 0x10, 0x00}         // fg carried: pixel x=1
	coloured := []byte{AnySubrects | SubrectsColoured, 0} // no subrects, but the bit is set
	rawTile := cat([]byte{Raw}, make([]byte, 16*4))
	withBg := func(b []byte) []byte { return cat([]byte{b[0] | BackgroundSpecified}, px(bg), b[1:]) }

	// fg set in tile 1, carried through tile 2 (AnySubrects clear) into
	// tile 3.
	f := decodeSpec(t, 48, 1, rect1(0, 0, 48, 1, first, noSubrects, carried))
	require.Equal(t, uint32(fg), f.At(0, 0))
	require.Equal(t, uint32(bg), f.At(16, 0))
	require.Equal(t, uint32(fg), f.At(33, 0))
	require.Equal(t, uint32(bg), f.At(32, 0))

	// Not over a tile with SubrectsColoured set ...
	_, err := NewDecoder().Decode(nil, 48, 1, rect1(0, 0, 48, 1, first, coloured, carried))
	require.ErrorIs(t, err, ErrNoColour)
	// ... nor over a Raw tile.
	_, err = NewDecoder().Decode(nil, 48, 1, rect1(0, 0, 48, 1, first, rawTile, withBg(carried)))
	require.ErrorIs(t, err, ErrNoColour)
	// Specifying it again after the Raw tile is fine.
	again := cat([]byte{BackgroundSpecified | ForegroundSpecified | AnySubrects}, px(bg), px(fg), []byte{1, 0x10, 0x00})
	f = decodeSpec(t, 48, 1, rect1(0, 0, 48, 1, first, rawTile, again))
	require.Equal(t, uint32(fg), f.At(33, 0))
}

// "ForegroundSpecified: ... If this bit is set then the SubrectsColoured bit
// must be zero."
func TestSpecForegroundExcludesColoured(t *testing.T) {
	tile := cat([]byte{BackgroundSpecified | ForegroundSpecified | AnySubrects | SubrectsColoured}, px(1), px(2), []byte{0})
	_, err := NewDecoder().Decode(nil, 16, 16, rect1(0, 0, 16, 16, tile))
	require.ErrorIs(t, err, ErrSubencoding)
}

// The encoder, given the frame from the carry-over test, must itself respect
// the Raw-tile rule: a tile after a Raw tile specifies its background, and
// a mono tile after a Raw tile specifies its foreground.
func TestSpecEncoderRespectsCarryRules(t *testing.T) {
	const bg, fg = 0x101010, 0xE0E0E0
	f := codec.NewFrame(48, 16)
	for i := range f.Pix {
		f.Pix[i] = bg
	}
	f.Pix[0] = fg // tile 0: mono, bg and fg specified
	for y := range 16 {
		for x := 16; x < 32; x++ {
			f.Pix[y*48+x] = uint32(y*16+x-16) * 0x010101 // tile 1: Raw, 256 colours
		}
	}
	f.Pix[33] = fg // tile 2: mono again, after Raw
	data, err := NewEncoder().Encode(nil, nil, f, []codec.Rect{{W: 48, H: 16}})
	require.NoError(t, err)
	off := 2 + rectHeaderSize
	require.Equal(t, cat([]byte{BackgroundSpecified | ForegroundSpecified | AnySubrects}, px(bg), px(fg), []byte{1, 0x00, 0x00}), data[off:off+12])
	off += 12
	require.Equal(t, byte(Raw), data[off])
	off += 1 + 16*16*4
	require.Equal(t, cat([]byte{BackgroundSpecified | ForegroundSpecified | AnySubrects}, px(bg), px(fg), []byte{1, 0x10, 0x00}), data[off:])
}
