package zrle

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

var (
	_ codec.Encoder = (*Encoder)(nil)
	_ codec.Decoder = (*Decoder)(nil)
)

// The test makes its own screens rather than use agent/codec/frames: it
// needs shapes that exercise each ZRLE subencoding, which the benchmark's
// generator does not aim at.

func solidFrame(w, h int, c uint32) *codec.Frame {
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = c
	}
	return f
}

func gradientFrame(w, h int) *codec.Frame {
	f := codec.NewFrame(w, h)
	for y := range h {
		for x := range w {
			f.Pix[y*w+x] = uint32(x*255/max(w-1, 1))<<16 | uint32(y*255/max(h-1, 1))<<8 | 0x40
		}
	}
	return f
}

func scatterPoints(r *rand.Rand, f *codec.Frame, n int) *codec.Frame {
	g := f.Clone()
	for range n {
		g.Pix[r.IntN(len(g.Pix))] = r.Uint32() & 0xFFFFFF
	}
	return g
}

func fillRect(f *codec.Frame, rc codec.Rect, c uint32) {
	for y := rc.Y; y < rc.Y+rc.H; y++ {
		for x := rc.X; x < rc.X+rc.W; x++ {
			f.Pix[y*f.W+x] = c
		}
	}
}

func noiseRect(r *rand.Rand, f *codec.Frame, rc codec.Rect) {
	for y := rc.Y; y < rc.Y+rc.H; y++ {
		for x := rc.X; x < rc.X+rc.W; x++ {
			f.Pix[y*f.W+x] = r.Uint32() & 0xFFFFFF
		}
	}
}

// dirtyTiles is a plain 32x32-grid diff (the lab's detector lives elsewhere).
func dirtyTiles(prev, cur *codec.Frame) []codec.Rect {
	var out []codec.Rect
	for ty := 0; ty < cur.H; ty += codec.TileSize {
		for tx := 0; tx < cur.W; tx += codec.TileSize {
			rc := codec.Rect{X: tx, Y: ty, W: min(codec.TileSize, cur.W-tx), H: min(codec.TileSize, cur.H-ty)}
			if prev == nil {
				out = append(out, rc)
				continue
			}
			for y := rc.Y; y < rc.Y+rc.H; y++ {
				a := prev.Pix[y*cur.W+rc.X : y*cur.W+rc.X+rc.W]
				b := cur.Pix[y*cur.W+rc.X : y*cur.W+rc.X+rc.W]
				if !slicesEqual(a, b) {
					out = append(out, rc)
					break
				}
			}
		}
	}
	return out
}

func slicesEqual(a, b []uint32) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRoundTripSequence(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const w, h = 200, 150 // not multiples of 64: partial edge tiles
	var frames []*codec.Frame
	frames = append(frames, solidFrame(w, h, 0x336699))
	frames = append(frames, gradientFrame(w, h))
	frames = append(frames, scatterPoints(r, frames[1], 40))
	blocks := frames[2].Clone()
	fillRect(blocks, codec.Rect{X: 10, Y: 20, W: 90, H: 70}, 0xFF0000)
	fillRect(blocks, codec.Rect{X: 130, Y: 5, W: 60, H: 140}, 0x00FF00)
	frames = append(frames, blocks)
	noise := blocks.Clone()
	noiseRect(r, noise, codec.Rect{X: 0, Y: 0, W: w, H: h})
	frames = append(frames, noise)
	corner := frames[1].Clone()
	noiseRect(r, corner, codec.Rect{X: 140, Y: 100, W: 60, H: 50})
	frames = append(frames, corner, corner.Clone()) // the last is static

	enc, dec := NewEncoder(), NewDecoder()
	var prev *codec.Frame
	for i, cur := range frames {
		// Both a full keyframe and a tile diff, through the same streams.
		for _, dirty := range [][]codec.Rect{dirtyTiles(prev, cur), {{X: 0, Y: 0, W: w, H: h}}} {
			data, err := enc.Encode(nil, prev, cur, dirty)
			require.NoError(t, err, "frame %d", i)
			got, err := dec.Decode(prev, w, h, data)
			require.NoError(t, err, "frame %d", i)
			require.Equal(t, cur.Pix, got.Pix, "frame %d", i)
			t.Logf("frame %d: %d rects, %d bytes", i, len(dirty), len(data))
			prev = got
		}
	}
}

func TestStaticFrameIsTwoBytes(t *testing.T) {
	f := gradientFrame(64, 64)
	data, err := NewEncoder().Encode(nil, f, f, nil)
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 0}, data)
	got, err := NewDecoder().Decode(f, 64, 64, data)
	require.NoError(t, err)
	assert.Equal(t, f.Pix, got.Pix)
}

// TestProperty: random frames, random dirty rectangles (content changes
// only inside them), one stream per run.
func TestProperty(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 99))
		w, h := 1+r.IntN(300), 1+r.IntN(200)
		enc, dec := NewEncoder(), NewDecoder()
		var prev *codec.Frame
		cur := codec.NewFrame(w, h)
		for frame := range 8 {
			var dirty []codec.Rect
			if prev == nil {
				noiseRect(r, cur, codec.Rect{W: w, H: h})
				dirty = []codec.Rect{{W: w, H: h}}
			} else {
				cur = prev.Clone()
				for range r.IntN(6) {
					x, y := r.IntN(w), r.IntN(h)
					rc := codec.Rect{X: x, Y: y, W: r.IntN(w - x + 1), H: r.IntN(h - y + 1)}
					switch r.IntN(4) {
					case 0:
						noiseRect(r, cur, rc)
					case 1:
						fillRect(cur, rc, r.Uint32()&0xFFFFFF)
					case 2: // few colours
						cols := []uint32{r.Uint32() & 0xFFFFFF, r.Uint32() & 0xFFFFFF, r.Uint32() & 0xFFFFFF}
						for y := rc.Y; y < rc.Y+rc.H; y++ {
							for x := rc.X; x < rc.X+rc.W; x++ {
								cur.Pix[y*w+x] = cols[r.IntN(len(cols))]
							}
						}
					case 3: // horizontal runs of many colours
						for y := rc.Y; y < rc.Y+rc.H; y++ {
							c := r.Uint32() & 0xFFFFFF
							for x := rc.X; x < rc.X+rc.W; x++ {
								cur.Pix[y*w+x] = c
							}
						}
					}
					dirty = append(dirty, rc)
				}
			}
			data, err := enc.Encode(nil, prev, cur, dirty)
			require.NoError(t, err)
			got, err := dec.Decode(prev, w, h, data)
			require.NoError(t, err, "seed %d frame %d", seed, frame)
			require.Equal(t, cur.Pix, got.Pix, "seed %d frame %d", seed, frame)
			prev = got
		}
	}
}

// tileCase builds a 64x64 tile meant to make one subencoding the smallest.
func tileCases() map[string]struct {
	pix  []uint32
	want int // the subencoding byte expected
} {
	r := rand.New(rand.NewPCG(7, 7))
	const n = TileSize * TileSize
	mk := func(f func(i int) uint32) []uint32 {
		p := make([]uint32, n)
		for i := range p {
			p[i] = f(i)
		}
		return p
	}
	return map[string]struct {
		pix  []uint32
		want int
	}{
		"raw: noise":            {mk(func(int) uint32 { return r.Uint32() & 0xFFFFFF }), subRaw},
		"solid":                 {mk(func(int) uint32 { return 0x123456 }), subSolid},
		"packed 2: checker":     {mk(func(i int) uint32 { return uint32((i + i/TileSize) % 2 * 0xFFFFFF) }), 2},
		"packed 16: random":     {mk(func(int) uint32 { return uint32(r.IntN(16)) * 0x111111 }), 16},
		"packed 4: random":      {mk(func(int) uint32 { return uint32(r.IntN(4)) * 0x010101 }), 4},
		"plain RLE: 200 colors": {mk(func(i int) uint32 { return uint32(i/20) * 0x010203 }), subPlainRLE},
		"palette RLE: 3 rows":   {mk(func(i int) uint32 { return uint32(i/TileSize%3) * 0x0F0F0F }), 128 + 3},
		"palette RLE: 100 cols": {mk(func(i int) uint32 { return uint32(i/10%100) * 0x020202 }), 128 + 100},
	}
}

// decodeTile runs one raw (uncompressed) tile through the decoder.
func decodeTile(t *testing.T, tile []byte, tw, th int) ([]uint32, error) {
	t.Helper()
	data := frameBody(t, []codec.Rect{{W: tw, H: th}}, [][]byte{tile})
	f, err := NewDecoder().Decode(nil, tw, th, data)
	if err != nil {
		return nil, err
	}
	return f.Pix, nil
}

// frameBody compresses raw tile bytes per rectangle into a frame body, as
// the encoder would.
func frameBody(t testing.TB, rects []codec.Rect, raws [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	out := binary.BigEndian.AppendUint16(nil, uint16(len(rects)))
	for i, rc := range rects {
		for _, v := range []int{rc.X, rc.Y, rc.W, rc.H} {
			out = binary.BigEndian.AppendUint16(out, uint16(v))
		}
		out = binary.BigEndian.AppendUint32(out, EncodingType)
		buf.Reset()
		_, err := zw.Write(raws[i])
		require.NoError(t, err)
		require.NoError(t, zw.Flush())
		out = binary.BigEndian.AppendUint32(out, uint32(buf.Len()))
		out = append(out, buf.Bytes()...)
	}
	return out
}

func TestSubencodingsChosenAndSized(t *testing.T) {
	for name, tc := range tileCases() {
		t.Run(name, func(t *testing.T) {
			var a analysis
			tile := a.encodeTile(nil, tc.pix, TileSize, TileSize)
			assert.Equal(t, tc.want, int(tile[0]), "chosen subencoding")
			// Every usable candidate: its computed size is its real size,
			// it decodes back, and none is smaller than the chosen one.
			for _, k := range kinds {
				s := a.size(k, TileSize, TileSize)
				if s < 0 {
					continue
				}
				got := a.emit(nil, k, tc.pix, TileSize, TileSize)
				assert.Len(t, got, s, "kind %d", k)
				assert.GreaterOrEqual(t, s, len(tile), "kind %d beats the choice", k)
				pix, err := decodeTile(t, got, TileSize, TileSize)
				require.NoError(t, err, "kind %d", k)
				assert.Equal(t, tc.pix, pix, "kind %d", k)
			}
			t.Logf("%d bytes before zlib", len(tile))
		})
	}
}

func TestOddTileSizes(t *testing.T) {
	// Packed rows are padded to a byte; runs cross rows (section 7.7.5).
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range [][2]int{{1, 1}, {3, 5}, {7, 2}, {13, 64}, {64, 9}} {
		tw, th := sz[0], sz[1]
		for ncol := 1; ncol <= 130; ncol += 7 {
			pix := make([]uint32, tw*th)
			for i := range pix {
				pix[i] = uint32(r.IntN(ncol)) * 0x030507 & 0xFFFFFF
			}
			var a analysis
			a.analyse(pix)
			for _, k := range kinds {
				if a.size(k, tw, th) < 0 {
					continue
				}
				tile := a.emit(nil, k, pix, tw, th)
				require.Len(t, tile, a.size(k, tw, th))
				got, err := decodeTile(t, tile, tw, th)
				require.NoError(t, err, "%dx%d colours %d kind %d", tw, th, ncol, k)
				require.Equal(t, pix, got)
			}
		}
	}
}

func TestLongRuns(t *testing.T) {
	// Run lengths of 255, 256 and 511 need the 255-chained form.
	pix := make([]uint32, TileSize*TileSize)
	for i := range pix {
		switch {
		case i < 255:
			pix[i] = 1
		case i < 511:
			pix[i] = 2
		case i < 1022:
			pix[i] = 3
		default:
			pix[i] = uint32(i % 200)
		}
	}
	var a analysis
	a.analyse(pix)
	for _, k := range []int{subPlainRLE} {
		tile := a.emit(nil, k, pix, TileSize, TileSize)
		got, err := decodeTile(t, tile, TileSize, TileSize)
		require.NoError(t, err)
		require.Equal(t, pix, got)
	}
}

func TestMalformed(t *testing.T) {
	one := codec.Rect{W: 4, H: 2}
	cases := map[string][]byte{
		"empty":             {},
		"short count":       {0},
		"truncated header":  {0, 1, 0, 0, 0, 0},
		"trailing bytes":    {0, 0, 1},
		"bad encoding":      {0, 1, 0, 0, 0, 0, 0, 4, 0, 2, 0, 0, 0, 5, 0, 0, 0, 0},
		"length past end":   {0, 1, 0, 0, 0, 0, 0, 4, 0, 2, 0, 0, 0, 16, 0xFF, 0xFF, 0xFF, 0xFF},
		"out of bounds":     frameBody(t, []codec.Rect{{X: 7, Y: 0, W: 4, H: 2}}, [][]byte{{1, 0, 0, 0}}),
		"bad zlib":          {0, 1, 0, 0, 0, 0, 0, 4, 0, 2, 0, 0, 0, 16, 0, 0, 0, 2, 0xAB, 0xCD},
		"truncated tile":    frameBody(t, []codec.Rect{one}, [][]byte{{0, 1, 2, 3}}),
		"subencoding 17":    frameBody(t, []codec.Rect{one}, [][]byte{{17}}),
		"subencoding 127":   frameBody(t, []codec.Rect{one}, [][]byte{{127}}),
		"subencoding 129":   frameBody(t, []codec.Rect{one}, [][]byte{{129}}),
		"packed index":      frameBody(t, []codec.Rect{one}, [][]byte{{3, 0, 0, 0, 1, 1, 1, 2, 2, 2, 0xFF, 0xFF}}),
		"palette RLE index": frameBody(t, []codec.Rect{one}, [][]byte{{130, 0, 0, 0, 1, 1, 1, 2}}),
		"run past tile":     frameBody(t, []codec.Rect{one}, [][]byte{{128, 1, 2, 3, 8}}),
		"palette run past":  frameBody(t, []codec.Rect{one}, [][]byte{{130, 0, 0, 0, 1, 1, 1, 0x81, 255, 0}}),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			d := NewDecoder()
			_, err := d.Decode(nil, 10, 10, data)
			require.Error(t, err)
			// The stream is broken for good: the error sticks.
			_, err = d.Decode(nil, 10, 10, []byte{0, 0})
			require.Error(t, err)
		})
	}
	// The frame given must match the size.
	_, err := NewDecoder().Decode(codec.NewFrame(3, 3), 10, 10, []byte{0, 0})
	require.Error(t, err)
}

func TestEncoderRejectsBadRects(t *testing.T) {
	enc, dec := NewEncoder(), NewDecoder()
	f := gradientFrame(100, 100)
	_, err := enc.Encode(nil, nil, f, []codec.Rect{{X: 50, Y: 50, W: 51, H: 10}})
	require.Error(t, err)
	// Nothing reached the stream: the pair still works.
	data, err := enc.Encode(nil, nil, f, []codec.Rect{{W: 100, H: 100}, {X: 5, Y: 5}})
	require.NoError(t, err)
	got, err := dec.Decode(nil, 100, 100, data)
	require.NoError(t, err)
	require.Equal(t, f.Pix, got.Pix)
	_, err = NewEncoderLevel(42)
	require.Error(t, err)
}

// TestSizes logs the bytes for a few screens (the benchmark proper lives
// elsewhere); it asserts only the obvious orderings.
func TestSizes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const w, h = 1280, 720
	full := []codec.Rect{{W: w, H: h}}
	size := func(f *codec.Frame, level int) int {
		enc, err := NewEncoderLevel(level)
		require.NoError(t, err)
		data, err := enc.Encode(nil, nil, f, full)
		require.NoError(t, err)
		return len(data)
	}
	solid := solidFrame(w, h, 0x202020)
	grad := gradientFrame(w, h)
	noise := codec.NewFrame(w, h)
	noiseRect(r, noise, full[0])
	for _, c := range []struct {
		name string
		f    *codec.Frame
	}{{"solid", solid}, {"gradient", grad}, {"noise", noise}} {
		t.Logf("720p %s keyframe: %d bytes (default level), %d (level 1), raw %d",
			c.name, size(c.f, zlib.DefaultCompression), size(c.f, 1), w*h*4)
	}
	assert.Less(t, size(solid, zlib.DefaultCompression), 2000)
	assert.Greater(t, size(noise, zlib.DefaultCompression), w*h*3)
}

func FuzzDecode(f *testing.F) {
	const w, h = 70, 40
	r := rand.New(rand.NewPCG(11, 12))
	enc := NewEncoder()
	fr := gradientFrame(w, h)
	noiseRect(r, fr, codec.Rect{X: 5, Y: 5, W: 20, H: 10})
	fillRect(fr, codec.Rect{X: 30, Y: 0, W: 40, H: 40}, 0xABCDEF)
	for _, dirty := range [][]codec.Rect{{{W: w, H: h}}, {{X: 1, Y: 2, W: 30, H: 20}, {X: 64, Y: 0, W: 6, H: 40}}} {
		data, err := enc.Encode(nil, nil, fr, dirty)
		require.NoError(f, err)
		f.Add(data)
	}
	for _, tc := range tileCases() {
		f.Add(frameBody(f, []codec.Rect{{W: TileSize, H: TileSize}}, [][]byte{new(analysis).encodeTile(nil, tc.pix, TileSize, TileSize)}))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := NewDecoder().Decode(nil, TileSize+6, TileSize+1, data)
		if err == nil {
			require.Len(t, got.Pix, (TileSize+6)*(TileSize+1))
		}
	})
}
