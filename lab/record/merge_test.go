package record

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// covered marks the pixels of a w x h screen the rectangles cover.
func covered(rs []codec.Rect, w, h int) []bool {
	m := make([]bool, w*h)
	for _, r := range rs {
		for y := r.Y; y < r.Y+r.H; y++ {
			for x := r.X; x < r.X+r.W; x++ {
				m[y*w+x] = true
			}
		}
	}
	return m
}

// Damage as XFIXES hands it over is clipped to the screen, glyphs a space
// apart become one rectangle, rectangles far apart stay apart, and what
// was damaged on the screen stays covered.
func TestMerge(t *testing.T) {
	const w, h = 200, 100
	require.Empty(t, Merge(nil, w, h))
	require.Empty(t, Merge([]codec.Rect{{X: 250, Y: 10, W: 5, H: 5}, {X: 10, Y: 10, W: 0, H: 5}}, w, h), "outside or empty")
	require.Equal(t, []codec.Rect{{X: 190, Y: 0, W: 10, H: 5}}, Merge([]codec.Rect{{X: 190, Y: -5, W: 30, H: 10}}, w, h), "clipped")

	// A word of four glyphs, 9x18 each and a pixel apart: one rectangle.
	var word []codec.Rect
	for i := range 4 {
		word = append(word, codec.Rect{X: 10 + 10*i, Y: 20, W: 9, H: 18})
	}
	require.Equal(t, []codec.Rect{{X: 10, Y: 20, W: 39, H: 18}}, Merge(word, w, h))

	// Two Y-X bands of an L shape join exactly; a far corner stays apart,
	// and the result is ordered top to bottom.
	in := []codec.Rect{{X: 150, Y: 80, W: 10, H: 10}, {X: 0, Y: 0, W: 40, H: 10}, {X: 0, Y: 10, W: 40, H: 30}}
	require.Equal(t, []codec.Rect{{X: 0, Y: 0, W: 40, H: 40}, {X: 150, Y: 80, W: 10, H: 10}}, Merge(in, w, h))
	require.Equal(t, codec.Rect{X: 150, Y: 80, W: 10, H: 10}, in[0], "the input is not changed")

	// A diagonal: one rectangle a row, too many and too wasteful to join
	// freely; at most MaxRects are left, covering all of it.
	var diag []codec.Rect
	for y := range h {
		diag = append(diag, codec.Rect{X: y, Y: y, W: 3, H: 1})
	}
	got := Merge(diag, w, h)
	require.LessOrEqual(t, len(got), MaxRects)
	require.Greater(t, len(got), 1, "a diagonal is not one box of the whole screen")
	want, have := covered(diag, w, h), covered(got, w, h)
	for i := range want {
		require.True(t, !want[i] || have[i], "pixel %d,%d damaged but not covered", i%w, i/w)
	}
}
