package zrle

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// The tests in this file check the decoder (and, where the bytes are fully
// determined, the encoder) against tile bytes built by hand from the text of
// RFC 6143 sections 7.7.5-7.7.6 (as reproduced in rfbproto.rst), not from
// the encoder. Each one would fail if the rule it names were wrong.

// cp is a CPIXEL of the package's pixel format: 32 bpp little-endian with
// the colour in the least significant 3 bytes, so those 3 bytes in
// little-endian order: B, G, R.
func cp(c uint32) []byte { return []byte{byte(c), byte(c >> 8), byte(c >> 16)} }

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// zconn is a hand-made server side of one connection: one zlib stream, each
// rectangle's bytes sync-flushed and prefixed by their U32 length.
type zconn struct {
	buf bytes.Buffer
	zw  *zlib.Writer
}

func newZconn() *zconn {
	z := &zconn{}
	z.zw = zlib.NewWriter(&z.buf)
	return z
}

// frame is a frame body: U16 count, then per rectangle its header, U32
// length and the zlib data of tiles[i] (already-built tile bytes).
func (z *zconn) frame(t testing.TB, rects []codec.Rect, tiles [][]byte) []byte {
	t.Helper()
	out := binary.BigEndian.AppendUint16(nil, uint16(len(rects)))
	for i, rc := range rects {
		for _, v := range []int{rc.X, rc.Y, rc.W, rc.H} {
			out = binary.BigEndian.AppendUint16(out, uint16(v))
		}
		out = binary.BigEndian.AppendUint32(out, EncodingType)
		z.buf.Reset()
		_, err := z.zw.Write(tiles[i])
		require.NoError(t, err)
		require.NoError(t, z.zw.Flush())
		out = binary.BigEndian.AppendUint32(out, uint32(z.buf.Len()))
		out = append(out, z.buf.Bytes()...)
	}
	return out
}

func decodeOne(t *testing.T, w, h int, rc codec.Rect, tiles []byte) *codec.Frame {
	t.Helper()
	f, err := NewDecoder().Decode(nil, w, h, newZconn().frame(t, []codec.Rect{rc}, [][]byte{tiles}))
	require.NoError(t, err)
	return f
}

func decodeErr(t *testing.T, w, h int, rc codec.Rect, tiles []byte) error {
	t.Helper()
	_, err := NewDecoder().Decode(nil, w, h, newZconn().frame(t, []codec.Rect{rc}, [][]byte{tiles}))
	return err
}

// wireRect is one rectangle of an encoded frame.
type wireRect struct {
	rc   codec.Rect
	zlib []byte
}

// parseFrame splits a frame body by the wire format of RFC 6143 section
// 7.6.1 and section 7.7.6 (U32 length, then that many bytes of zlib data),
// requiring every byte to be accounted for.
func parseFrame(t *testing.T, data []byte) []wireRect {
	t.Helper()
	require.GreaterOrEqual(t, len(data), 2)
	n := int(binary.BigEndian.Uint16(data))
	data = data[2:]
	var out []wireRect
	for range n {
		require.GreaterOrEqual(t, len(data), 16)
		rc := codec.Rect{
			X: int(binary.BigEndian.Uint16(data[0:])), Y: int(binary.BigEndian.Uint16(data[2:])),
			W: int(binary.BigEndian.Uint16(data[4:])), H: int(binary.BigEndian.Uint16(data[6:])),
		}
		require.Equal(t, uint32(EncodingType), binary.BigEndian.Uint32(data[8:]))
		length := int(binary.BigEndian.Uint32(data[12:]))
		require.LessOrEqual(t, length, len(data)-16)
		out = append(out, wireRect{rc, data[16 : 16+length]})
		data = data[16+length:]
	}
	require.Empty(t, data, "bytes after the last rectangle")
	return out
}

// inflate returns everything the zlib stream prefix z decompresses to (the
// stream is never closed, so it ends without a zlib trailer).
func inflate(t *testing.T, z []byte) []byte {
	t.Helper()
	zr, err := zlib.NewReader(bytes.NewReader(z))
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = io.Copy(&out, zr)
	require.True(t, errors.Is(err, io.ErrUnexpectedEOF), "stream should stop unterminated, got %v", err)
	return out.Bytes()
}

// encodeTiles is the inflated tile bytes the encoder sends for rc of f, on
// a new connection.
func encodeTiles(t *testing.T, f *codec.Frame, rc codec.Rect) []byte {
	t.Helper()
	data, err := NewEncoder().Encode(nil, nil, f, []codec.Rect{rc})
	require.NoError(t, err)
	rs := parseFrame(t, data)
	require.Len(t, rs, 1)
	require.Equal(t, rc, rs[0].rc)
	return inflate(t, rs[0].zlib)
}

func fillFrame(f *codec.Frame, rc codec.Rect, c uint32) {
	for y := rc.Y; y < rc.Y+rc.H; y++ {
		for x := rc.X; x < rc.X+rc.W; x++ {
			f.Pix[y*f.W+x] = c
		}
	}
}

func requireFilled(t *testing.T, f *codec.Frame, rc codec.Rect, c uint32) {
	t.Helper()
	for y := rc.Y; y < rc.Y+rc.H; y++ {
		for x := rc.X; x < rc.X+rc.W; x++ {
			require.Equal(t, c, f.At(x, y), "pixel %d,%d", x, y)
		}
	}
}

// Section 7.7.6: "The zlibData when uncompressed represents tiles of 64x64
// pixels in left-to-right, top-to-bottom order ... If the width of the
// rectangle is not an exact multiple of 64 then the width of the last tile
// in each row is smaller, and if the height ... then the height of each tile
// in the final row is smaller." Subencoding 1 is "A solid tile consisting of
// a single colour. The pixel value follows".
func TestSpecTiles64LeftToRightTopToBottom(t *testing.T) {
	rect := codec.Rect{X: 3, Y: 4, W: 130, H: 70}
	tiles := []struct {
		rc codec.Rect
		c  uint32
	}{
		{codec.Rect{X: 3, Y: 4, W: 64, H: 64}, 0x0000A1},
		{codec.Rect{X: 67, Y: 4, W: 64, H: 64}, 0x00A200},
		{codec.Rect{X: 131, Y: 4, W: 2, H: 64}, 0xA30000},
		{codec.Rect{X: 3, Y: 68, W: 64, H: 6}, 0x0000A4},
		{codec.Rect{X: 67, Y: 68, W: 64, H: 6}, 0x00A500},
		{codec.Rect{X: 131, Y: 68, W: 2, H: 6}, 0xA60000},
	}
	var raw []byte
	for _, tl := range tiles {
		raw = join(raw, []byte{1}, cp(tl.c))
	}
	f := decodeOne(t, 140, 80, rect, raw)
	for _, tl := range tiles {
		requireFilled(t, f, tl.rc, tl.c)
	}
	requireFilled(t, f, codec.Rect{W: 140, H: 4}, 0)

	// The encoder, given that picture, must send exactly those six solid
	// tiles.
	src := codec.NewFrame(140, 80)
	for _, tl := range tiles {
		fillFrame(src, tl.rc, tl.c)
	}
	require.Equal(t, raw, encodeTiles(t, src, rect))
}

// Section 7.7.6: CPIXEL is "only 3 bytes long, and contains the least
// significant or the most significant 3 bytes as appropriate" when the
// format is true colour, 32 bpp, depth <= 24 and the colour bits fit in 3
// bytes. Here the colour is in the low 3 bytes of a little-endian pixel, so
// a CPIXEL is the first 3 bytes the pixel would have on the wire: B, G, R.
func TestSpecCPixelIsLowThreeBytesLittleEndian(t *testing.T) {
	f := decodeOne(t, 1, 1, codec.Rect{W: 1, H: 1}, []byte{1, 0x33, 0x22, 0x11})
	require.Equal(t, uint32(0x112233), f.Pix[0])

	// (2x1, so that solid, 4 bytes, beats raw, 7.)
	src := codec.NewFrame(2, 1)
	src.Pix[0], src.Pix[1] = 0x112233, 0x112233
	require.Equal(t, []byte{1, 0x33, 0x22, 0x11}, encodeTiles(t, src, codec.Rect{W: 2, H: 1}))
}

// Subencoding 0: "Raw pixel data. width*height pixel values follow", as
// CPIXELs, in the order of the Raw encoding (left to right, top to bottom).
func TestSpecRawTile(t *testing.T) {
	want := []uint32{0x010203, 0x040506, 0x070809, 0x0A0B0C, 0x0D0E0F, 0x101112}
	raw := []byte{0}
	for _, c := range want {
		raw = join(raw, cp(c))
	}
	f := decodeOne(t, 3, 2, codec.Rect{W: 3, H: 2}, raw)
	require.Equal(t, want, f.Pix)
}

// Subencodings 2-16: "For paletteSize 2, a 1-bit field is used, for
// paletteSize 3 or 4 a 2-bit field is used and for paletteSize from 5 to 16
// a 4-bit field is used. The bit fields are packed into bytes, the most
// significant bits representing the leftmost pixel (i.e. big endian). For
// tiles not a multiple of 8, 4 or 2 pixels wide (as appropriate), padding
// bits are used to align each row to an exact number of bytes."
func TestSpecPackedPalette(t *testing.T) {
	pal := []uint32{0xA00000, 0x00B000, 0x0000C0, 0xD0D000, 0x00E0E0}
	cases := []struct {
		name   string
		n      int // palette size = subencoding
		w      int
		idx    [][]int // per row
		packed []byte  // hand-packed rows
	}{
		{
			"2 colours, 1 bit, 10 wide", 2, 10,
			[][]int{{1, 0, 0, 0, 0, 0, 0, 1, 1, 0}, {0, 1, 0, 1, 0, 1, 0, 1, 0, 1}},
			// 10000001 10|000000, 01010101 01|000000
			[]byte{0x81, 0x80, 0x55, 0x40},
		},
		{
			"3 colours, 2 bits, 5 wide", 3, 5,
			[][]int{{0, 1, 2, 1, 0}, {2, 2, 2, 2, 1}},
			// 00 01 10 01, 00|000000; 10 10 10 10, 01|000000
			[]byte{0x19, 0x00, 0xAA, 0x40},
		},
		{
			"4 colours, 2 bits, 4 wide", 4, 4,
			[][]int{{3, 2, 1, 0}},
			[]byte{0xE4},
		},
		{
			"5 colours, 4 bits, 3 wide", 5, 3,
			[][]int{{4, 3, 0}, {1, 2, 4}},
			// 0100 0011, 0000|0000; 0001 0010, 0100|0000
			[]byte{0x43, 0x00, 0x12, 0x40},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := len(tc.idx)
			raw := []byte{byte(tc.n)}
			for _, c := range pal[:tc.n] {
				raw = join(raw, cp(c))
			}
			raw = join(raw, tc.packed)
			f := decodeOne(t, tc.w, h, codec.Rect{W: tc.w, H: h}, raw)
			for y, row := range tc.idx {
				for x, i := range row {
					require.Equal(t, pal[i], f.At(x, y), "pixel %d,%d", x, y)
				}
			}
		})
	}
}

// specPack packs one tile's palette indices as the text of subencodings
// 2-16 describes (independently of the encoder's own packing).
func specPack(idx []int, w, h, n int) []byte {
	bits := 4
	switch {
	case n == 2:
		bits = 1
	case n <= 4:
		bits = 2
	}
	var out []byte
	for y := range h {
		row := make([]byte, (w*bits+7)/8)
		for x := range w {
			pos := x * bits // from the most significant bit
			row[pos/8] |= byte(idx[y*w+x]) << (8 - bits - pos%8)
		}
		out = append(out, row...)
	}
	return out
}

// The encoder's packed palette tiles: bit widths, most significant bits
// first, and per-row padding, checked against specPack using the palette
// the encoder itself sent; and m, the size of the packed pixels, is the
// section's floor((w+7)/8)*h, floor((w+3)/4)*h or floor((w+1)/2)*h.
func TestSpecEncoderPackedPalette(t *testing.T) {
	for _, tc := range []struct{ n, w, h, m int }{
		{2, 10, 3, (10 + 7) / 8 * 3},
		{3, 5, 4, (5 + 3) / 4 * 4},
		{4, 7, 2, (7 + 3) / 4 * 2},
		{5, 3, 8, (3 + 1) / 2 * 8},
		{16, 9, 9, (9 + 1) / 2 * 9},
	} {
		pix := make([]uint32, tc.w*tc.h)
		for i := range pix {
			pix[i] = uint32((i+i/tc.w)%tc.n) * 0x0A0B0C
		}
		var a analysis
		a.analyse(pix)
		require.Equal(t, tc.n, a.nPal)
		tile := a.emit(nil, kindPacked, pix, tc.w, tc.h)
		require.Equal(t, byte(tc.n), tile[0], "subencoding is the palette size")
		require.Len(t, tile, 1+tc.n*cpixelSize+tc.m)
		index := map[uint32]int{}
		for i := range tc.n {
			b := tile[1+i*cpixelSize:]
			index[uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16] = i
		}
		idx := make([]int, len(pix))
		for i, c := range pix {
			j, ok := index[c]
			require.True(t, ok, "colour %#x not in the palette", c)
			idx[i] = j
		}
		require.Equal(t, specPack(idx, tc.w, tc.h, tc.n), tile[1+tc.n*cpixelSize:], "%d colours %dx%d", tc.n, tc.w, tc.h)
	}
}

// Subencoding 128: "Runs may continue from the end of one row to the
// beginning of the next ... The length is calculated as one more than the
// sum of all the bytes representing the length. Any byte value other than
// 255 indicates the final byte. So for example length 1 is represented as
// [0], 255 as [254], 256 as [255,0], 257 as [255,1], 510 as [255,254], 511
// as [255,255,0] and so on."
func TestSpecPlainRLE(t *testing.T) {
	lengths := []struct {
		l   int
		enc []byte
	}{
		{1, []byte{0}}, {255, []byte{254}}, {256, []byte{255, 0}}, {257, []byte{255, 1}},
		{510, []byte{255, 254}}, {511, []byte{255, 255, 0}},
	}
	for _, c := range lengths {
		require.Equal(t, c.enc, appendRunLen(nil, c.l), "encoder, length %d", c.l)
		require.Equal(t, len(c.enc), runLenBytes(c.l), "size, length %d", c.l)
	}

	// A 64x64 tile of those runs, then one run for the rest (2306 pixels:
	// 2305 = 9*255 + 10). Every run but the first crosses rows.
	raw := []byte{128}
	var want []uint32
	for i, c := range lengths {
		col := uint32(i+1) * 0x101010
		raw = join(raw, cp(col), c.enc)
		for range c.l {
			want = append(want, col)
		}
	}
	rest := TileSize*TileSize - len(want)
	require.Equal(t, 2306, rest)
	raw = join(raw, cp(0xFEDCBA), bytes.Repeat([]byte{255}, 9), []byte{10})
	for range rest {
		want = append(want, 0xFEDCBA)
	}
	f := decodeOne(t, TileSize, TileSize, codec.Rect{W: TileSize, H: TileSize}, raw)
	require.Equal(t, want, f.Pix)

	// A small tile: one run of 8 covers both rows of a 4x2 tile.
	f = decodeOne(t, 4, 2, codec.Rect{W: 4, H: 2}, join([]byte{128}, cp(0x123456), []byte{7}))
	require.Equal(t, []uint32{0x123456, 0x123456, 0x123456, 0x123456, 0x123456, 0x123456, 0x123456, 0x123456}, f.Pix)
}

// Runs are "repeated until the tile is done": they continue across rows but
// not into the next tile.
func TestSpecRunsStopAtTheTile(t *testing.T) {
	// 65x1: a 64x1 tile and a 1x1 tile. A run of 65 in the first is
	// malformed ...
	err := decodeErr(t, 65, 1, codec.Rect{W: 65, H: 1}, join([]byte{128}, cp(0x010101), []byte{64}))
	require.Error(t, err)
	// ... and two runs, one per tile, are right.
	f := decodeOne(t, 65, 1, codec.Rect{W: 65, H: 1}, join([]byte{128}, cp(0x010101), []byte{63}, []byte{1}, cp(0x020202)))
	requireFilled(t, f, codec.Rect{W: 64, H: 1}, 0x010101)
	require.Equal(t, uint32(0x020202), f.At(64, 0))
}

// Subencodings 130-255: "Palette RLE. Followed by the palette, consisting of
// paletteSize = (subencoding - 128) pixel values ... A run of length one is
// represented simply by a palette index ... A run of length more than one
// is represented by a palette index with the top bit set, followed by the
// length of the run as for plain RLE."
func TestSpecPaletteRLE(t *testing.T) {
	const a, b, c = 0x0A0A0A, 0x0B0B0B, 0x0C0C0C
	raw := join([]byte{128 + 3}, cp(a), cp(b), cp(c),
		[]byte{0x00},    // a, run 1
		[]byte{0x81, 4}, // b, run 5 (crosses into row 2)
		[]byte{0x02},    // c, run 1
		[]byte{0x80, 0}, // a, run 1 in the long form
	)
	f := decodeOne(t, 4, 2, codec.Rect{W: 4, H: 2}, raw)
	require.Equal(t, []uint32{a, b, b, b, b, b, c, a}, f.Pix)

	// 255: the largest palette, 127 colours, one pixel each, in a 64x2
	// tile.
	raw = []byte{255}
	var want []uint32
	for i := range 127 {
		raw = join(raw, cp(uint32(i)*0x020202))
		want = append(want, uint32(i)*0x020202)
	}
	for i := range 127 {
		raw = append(raw, byte(i))
	}
	raw = append(raw, 0x80|126, 0) // and the last colour once more, long form
	want = append(want, 126*0x020202)
	f = decodeOne(t, 64, 2, codec.Rect{W: 64, H: 2}, raw)
	require.Equal(t, want, f.Pix)

	// The encoder's palette RLE: a bare index for runs of one, index|128
	// and the length otherwise.
	pix := []uint32{a, b, b, b, b, b, c, a}
	var an analysis
	an.analyse(pix)
	tile := an.emit(nil, kindPaletteRLE, pix, 4, 2)
	require.Equal(t, byte(128+3), tile[0])
	require.Equal(t, join(cp(a), cp(b), cp(c)), tile[1:10], "palette in first-seen order")
	require.Equal(t, []byte{0x00, 0x81, 4, 0x02, 0x00}, tile[10:])
}

// The subencoding values: 0 raw, 1 solid, 2-16 packed palette, "17 to 127
// Unused (no advantage over palette RLE)", 128 plain RLE, "129 Unused",
// 130-255 palette RLE. (127 and 129 are TRLE's palette-reuse values in RFC
// 6143 section 7.7.5; ZRLE has no palette reuse.)
func TestSpecUnusedSubencodings(t *testing.T) {
	for sub := 17; sub <= 129; sub++ {
		if sub == 128 {
			continue
		}
		raw := join([]byte{byte(sub)}, bytes.Repeat([]byte{0}, 512))
		require.Error(t, decodeErr(t, 4, 2, codec.Rect{W: 4, H: 2}, raw), "subencoding %d", sub)
	}
	// The encoder never sends them, whatever the tile.
	for name, tc := range tileCases() {
		var a analysis
		sub := a.encodeTile(nil, tc.pix, TileSize, TileSize)[0]
		require.False(t, sub >= 17 && sub <= 127 || sub == 129, "%s: subencoding %d", name, sub)
	}
}

// Section 7.7.6: "On the wire, the rectangle begins with a 4-byte length
// field, and is followed by that many bytes of zlib-compressed data. A
// single zlib "stream" object is used for a given RFB protocol connection,
// so that ZRLE rectangles must be encoded and decoded strictly in order."
func TestSpecOneZlibStreamPerConnection(t *testing.T) {
	// Decoder: two frames of one hand-made stream decode in order on one
	// decoder; the second alone, on a new decoder, does not (it has no
	// zlib header and refers to the first's dictionary).
	z := newZconn()
	rc := codec.Rect{W: 4, H: 2}
	solid := func(c uint32) []byte { return join([]byte{1}, cp(c)) }
	f1 := z.frame(t, []codec.Rect{rc, {X: 4, W: 4, H: 2}}, [][]byte{solid(0x111111), solid(0x222222)})
	f2 := z.frame(t, []codec.Rect{rc}, [][]byte{solid(0x333333)})
	d := NewDecoder()
	got, err := d.Decode(nil, 8, 2, f1)
	require.NoError(t, err)
	requireFilled(t, got, rc, 0x111111)
	requireFilled(t, got, codec.Rect{X: 4, W: 4, H: 2}, 0x222222)
	got, err = d.Decode(got, 8, 2, f2)
	require.NoError(t, err)
	requireFilled(t, got, rc, 0x333333)
	_, err = NewDecoder().Decode(nil, 8, 2, f2)
	require.Error(t, err)

	// Encoder: the length prefix is a big-endian U32 counting exactly the
	// zlib bytes that follow; only the connection's first rectangle starts
	// with a zlib header; every later rectangle continues the same stream,
	// so the concatenation of all of them inflates to all the tiles.
	enc := NewEncoder()
	src := codec.NewFrame(8, 2)
	var zall []byte
	var want []byte
	for i, c := range []uint32{0x0A0B0C, 0x0D0E0F, 0x101112} {
		fillFrame(src, codec.Rect{W: 8, H: 2}, c)
		data, err := enc.Encode(nil, nil, src, []codec.Rect{{W: 4, H: 2}, {X: 4, W: 4, H: 2}})
		require.NoError(t, err)
		for j, r := range parseFrame(t, data) {
			hasHeader := len(r.zlib) >= 2 && r.zlib[0]&0x0F == 8 && (uint16(r.zlib[0])<<8|uint16(r.zlib[1]))%31 == 0
			require.Equal(t, i == 0 && j == 0, hasHeader, "frame %d rect %d", i, j)
			zall = append(zall, r.zlib...)
			want = join(want, solid(c))
		}
	}
	require.Equal(t, want, inflate(t, zall))
}
