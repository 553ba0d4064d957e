package glass

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
)

// desktop is a w x h picture of seeded noise (the hardest background for
// a search: every position has contrast) with version v's marker stamped
// at its top left, as the driver draws it.
func desktop(w, h int, v uint32, seed uint64) *codec.Frame {
	f := codec.NewFrame(w, h)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range f.Pix {
		f.Pix[i] = rng.Uint32() & 0xFFFFFF
	}
	screendrive.Stamp(f, v)
	return f
}

// viewer is what a viewer window shows of src: scaled by s (a box filter,
// as a smooth scaler averages), placed at (x, y) on a grey w x h display,
// every channel shifted by shift and noised by up to noise (a colour
// conversion, a lossy coder's error).
func viewer(src *codec.Frame, w, h, x, y int, s float64, shift, noise int, seed uint64) *codec.Frame {
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = 0x808080
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	sw, sh := int(float64(src.W)*s), int(float64(src.H)*s)
	for dy := range sh {
		for dx := range sw {
			if x+dx >= w || y+dy >= h {
				continue
			}
			// The source pixels this one covers, averaged.
			x0, x1 := float64(dx)/s, float64(dx+1)/s
			y0, y1 := float64(dy)/s, float64(dy+1)/s
			var sum [3]int
			n := 0
			for sy := int(y0); sy < int(math.Ceil(y1)) && sy < src.H; sy++ {
				for sx := int(x0); sx < int(math.Ceil(x1)) && sx < src.W; sx++ {
					p := src.Pix[sy*src.W+sx]
					sum[0] += int(p >> 16 & 0xFF)
					sum[1] += int(p >> 8 & 0xFF)
					sum[2] += int(p & 0xFF)
					n++
				}
			}
			var out uint32
			for c := range 3 {
				v := sum[c]/n + shift
				if noise > 0 {
					v += rng.IntN(2*noise+1) - noise
				}
				out = out<<8 | uint32(min(max(v, 0), 255))
			}
			f.Pix[(y+dy)*w+x+dx] = out
		}
	}
	return f
}

func TestFindReadsTheMarkerWhereverAViewerPutsIt(t *testing.T) {
	const v = 0xA5C3F
	src := desktop(320, 180, v, 1)
	for _, tc := range []struct {
		name        string
		x, y        int
		scale       float64
		shift, nois int
	}{
		{"unscaled at the origin", 0, 0, 1, 0, 0},
		{"in a window", 37, 61, 1, 0, 0},
		{"colour-converted and noisy", 37, 61, 1, -20, 30},
		{"scaled up by 1.5", 11, 5, 1.5, 0, 10},
		{"scaled down to 0.75", 11, 5, 0.75, 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := viewer(src, 640, 400, tc.x, tc.y, tc.scale, tc.shift, tc.nois, 3)
			p, got, ok := Find(f, []float64{screendrive.MarkerBlock, screendrive.MarkerBlock * tc.scale}, nil)
			require.True(t, ok)
			require.Equal(t, uint32(v), got)
			require.InDelta(t, tc.x, p.X, math.Max(1, p.Block/2))
			require.InDelta(t, tc.y, p.Y, math.Max(1, p.Block/2))
			// Read on the marker's rectangle alone, as Watch does.
			r := p.Rect()
			sub := codec.NewFrame(r.W, r.H)
			for y := range r.H {
				copy(sub.Pix[y*r.W:(y+1)*r.W], f.Pix[(r.Y+y)*f.W+r.X:(r.Y+y)*f.W+r.X+r.W])
			}
			got, ok = Read(sub, p)
			require.True(t, ok)
			require.Equal(t, uint32(v), got)
		})
	}
}

func TestFindRefusesWhatIsNoMarker(t *testing.T) {
	// Noise, and a marker scaled by a factor not asked for.
	f := viewer(desktop(320, 180, 0, 1), 640, 400, 0, 0, 1, 0, 0, 1)
	for i := range screendrive.MarkerHeight {
		for x := range screendrive.MarkerWidth {
			f.Pix[i*f.W+x] = 0x808080
		}
	}
	_, _, ok := Find(f, []float64{screendrive.MarkerBlock}, nil)
	require.False(t, ok, "noise is no marker")
	// At twice the size, read at the unscaled size, the marker reads
	// each bit twice over stretches of it: never version 77, whose bits
	// 0b1001101 are no doubled pattern.
	f = viewer(desktop(320, 180, 77, 1), 640, 400, 0, 0, 2, 0, 0, 1)
	is77 := func(v uint32) bool { return v == 77 }
	_, _, ok = Find(f, []float64{screendrive.MarkerBlock}, is77)
	require.False(t, ok)
	p, v, ok := Find(f, []float64{screendrive.MarkerBlock, 2 * screendrive.MarkerBlock}, is77)
	require.True(t, ok)
	require.Equal(t, uint32(77), v)
	require.Equal(t, 2.0*screendrive.MarkerBlock, p.Block)
	// Without the check, the largest size goes first and reads right.
	_, v, ok = Find(f, []float64{screendrive.MarkerBlock, 2 * screendrive.MarkerBlock}, nil)
	require.True(t, ok)
	require.Equal(t, uint32(77), v)
}

func TestReadRejectsAMarkerHalfDrawn(t *testing.T) {
	// The next version's marker drawn over the right half only: its
	// left half's blocks are the old version's, and a block whose two
	// rows are not each other's inverse (one row drawn) is rejected.
	f := codec.NewFrame(screendrive.MarkerWidth, screendrive.MarkerHeight)
	screendrive.Stamp(f, 0x555555)
	g := codec.NewFrame(screendrive.MarkerWidth, screendrive.MarkerHeight)
	screendrive.Stamp(g, 0xAAAAAA)
	// The upper row of the new marker drawn, the lower still the old's.
	copy(f.Pix[:screendrive.MarkerBlock*f.W], g.Pix[:screendrive.MarkerBlock*f.W])
	_, ok := Read(f, Placement{Block: screendrive.MarkerBlock})
	require.False(t, ok)
	// Grey between black and white is unreadable.
	for i := range f.Pix {
		f.Pix[i] = 0x808080
	}
	_, ok = Read(f, Placement{Block: screendrive.MarkerBlock})
	require.False(t, ok)
}

// A marker read at a block size not its own can read as another number
// (its bits repeated or skipped where the sizes happen to line up), so a
// search is told the version it looks for, as a run's Locate is: then a
// wrong size finds nothing, and the right one the marker. Seeded versions,
// shown scaled by 1.5.
func TestFindAtAWrongSizeFindsNothingOfTheVersionSought(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20 {
		v := uint32(1 + rng.IntN(1<<20))
		f := viewer(desktop(320, 180, v, uint64(v)), 640, 400, 9, 13, 1.5, 0, 0, 1)
		is := func(got uint32) bool { return got == v }
		_, _, ok := Find(f, []float64{screendrive.MarkerBlock}, is)
		require.False(t, ok, "version %d found at the unscaled size", v)
		p, got, ok := Find(f, []float64{screendrive.MarkerBlock, 1.5 * screendrive.MarkerBlock}, is)
		require.True(t, ok, "version %d at its own size", v)
		require.Equal(t, v, got)
		require.Equal(t, 1.5*screendrive.MarkerBlock, p.Block)
	}
}

// A block whose points disagree (half white, half black: an edge blurred
// across it, or a placement straddling two blocks) is unreadable, and so is
// the marker.
func TestReadRejectsABlockOfTwoColours(t *testing.T) {
	f := codec.NewFrame(screendrive.MarkerWidth, screendrive.MarkerHeight)
	screendrive.Stamp(f, 0x5A5A5A)
	p := Placement{Block: screendrive.MarkerBlock}
	_, ok := Read(f, p)
	require.True(t, ok)
	// Block 5's upper row: its left half white, its right half black; its
	// lower row the inverse, so that each column still inverts.
	for y := range 2 * screendrive.MarkerBlock {
		for x := 5 * screendrive.MarkerBlock; x < 6*screendrive.MarkerBlock; x++ {
			white := x < 5*screendrive.MarkerBlock+screendrive.MarkerBlock/2
			if y >= screendrive.MarkerBlock {
				white = !white
			}
			f.Pix[y*f.W+x] = 0
			if white {
				f.Pix[y*f.W+x] = 0xFFFFFF
			}
		}
	}
	_, ok = Read(f, p)
	require.False(t, ok)
}
