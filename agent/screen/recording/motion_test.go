package recording

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// desktop is a flat background with a window of noise at x, y.
func desktop(w, h, x, y, ww, wh int, seed uint64) *codec.Frame {
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = 0x204060
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for yy := y; yy < y+wh; yy++ {
		for xx := x; xx < x+ww; xx++ {
			f.Pix[yy*w+xx] = rng.Uint32() & 0xffffff
		}
	}
	return f
}

// bruteMoved is the share of the changed pixels (all of the screen's)
// that prev shifted by dx, dy gives, counted plainly.
func bruteMoved(prev, cur *codec.Frame, dx, dy int) float64 {
	changed, got := 0, 0
	for y := range cur.H {
		for x := range cur.W {
			i := y*cur.W + x
			if prev.Pix[i] == cur.Pix[i] {
				continue
			}
			changed++
			sx, sy := x+dx, y+dy
			if sx >= 0 && sx < cur.W && sy >= 0 && sy < cur.H && cur.Pix[i] == prev.Pix[sy*cur.W+sx] {
				got++
			}
		}
	}
	return float64(got) / float64(changed)
}

// Known answers: a window dragged diagonally is found at its true shift
// (the share equals a plain count at that shift), and so is a scroll; new
// content, no change and the first frame are no motion.
func TestMoved(t *testing.T) {
	const w, h = 640, 360
	whole := []codec.Rect{{W: w, H: h}}
	var m motion
	for _, tc := range []struct {
		name   string
		dx, dy int // the window's move
	}{{"diagonal", 37, -23}, {"right", 90, 0}, {"down", 0, 130}, {"far", -170, 130}} {
		prev := desktop(w, h, 200, 100, 200, 120, 1)
		cur := desktop(w, h, 200+tc.dx, 100+tc.dy, 200, 120, 1)
		got := m.moved(prev, cur, whole)
		// cur at the window's new place is prev at the old: the shift
		// from cur to prev is minus the move.
		require.InDelta(t, bruteMoved(prev, cur, -tc.dx, -tc.dy), got, 1e-12, tc.name)
		require.Greater(t, got, 0.5, tc.name)
	}

	// A window dragged further than MaxShift is not a shift it looks for.
	prev := desktop(w, h, 0, 0, 200, 120, 1)
	cur := desktop(w, h, MaxShift+60, 0, 200, 120, 1)
	require.Less(t, m.moved(prev, cur, whole), 0.5)

	// New content: noise replaced by other noise.
	prev, cur = desktop(w, h, 0, 0, w, h, 1), desktop(w, h, 0, 0, w, h, 2)
	require.Less(t, m.moved(prev, cur, whole), 0.01)
	require.Zero(t, m.moved(prev, prev, whole))
	require.Zero(t, m.moved(nil, cur, whole))

	// A scroll of a page by 48 rows: what scrolled in at the bottom is
	// new, the rest is the page before moved up.
	page := desktop(w, 2*h, 0, 0, w, 2*h, 3)
	prev, cur = codec.NewFrame(w, h), codec.NewFrame(w, h)
	copy(prev.Pix, page.Pix[:w*h])
	copy(cur.Pix, page.Pix[48*w:48*w+w*h])
	got := m.moved(prev, cur, whole)
	require.InDelta(t, bruteMoved(prev, cur, 0, 48), got, 1e-12)
	require.InDelta(t, float64(h-48)/float64(h), got, 0.01)

	// Only the damage is looked at: a change outside it is none.
	require.Zero(t, m.moved(prev, cur, []codec.Rect{{X: 0, Y: 0, W: 1, H: 1}}[:0]))
}

// BenchmarkMoved1080pScroll measures the motion search on its costliest
// frame: a whole 1080p screen scrolled by 48 rows, searched all over.
func BenchmarkMoved1080pScroll(b *testing.B) {
	const w, h = 1920, 1080
	page := desktop(w, 2*h, 0, 0, w, 2*h, 3)
	prev, cur := codec.NewFrame(w, h), codec.NewFrame(w, h)
	copy(prev.Pix, page.Pix[:w*h])
	copy(cur.Pix, page.Pix[48*w:48*w+w*h])
	whole := []codec.Rect{{W: w, H: h}}
	var m motion
	var got float64
	for b.Loop() {
		got = m.moved(prev, cur, whole)
	}
	if got < 0.9 {
		b.Fatalf("moved %.3f of a scrolled screen: not the search it names", got)
	}
}
