package dirty

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// cover paints the rectangles on a w x h mask, counting overlaps.
func cover(w, h int, rects []codec.Rect) []int {
	m := make([]int, w*h)
	for _, r := range rects {
		for y := r.Y; y < r.Y+r.H; y++ {
			for x := r.X; x < r.X+r.W; x++ {
				m[y*w+x]++
			}
		}
	}
	return m
}

func TestMergeKeyframeIsOneRectangle(t *testing.T) {
	cur := codec.NewFrame(1000, 500) // edge tiles are cut: 1000 = 31*32+8
	got := Merge(Detect(nil, cur, nil), nil)
	require.Equal(t, []codec.Rect{{X: 0, Y: 0, W: 1000, H: 500}}, got)
}

func TestMergeJoinsRunsAndColumns(t *testing.T) {
	T := codec.TileSize
	tiles := []codec.Rect{
		rc(0, 0, T, T), rc(T, 0, T, T), rc(3*T, 0, T, T), // a run of two, a single
		rc(0, T, T, T), rc(T, T, T, T), rc(3*T, T, T, T), rc(4*T, T, T, T), // the run of two grows down; the single does not match a run of two
		rc(T, 2*T, T, T), // a new single
	}
	got := Merge(tiles, nil)
	require.Equal(t, []codec.Rect{
		rc(0, 0, 2*T, 2*T),
		rc(3*T, 0, T, T),
		rc(3*T, T, 2*T, T),
		rc(T, 2*T, T, T),
	}, got)
}

// On random dirty sets the merged rectangles cover exactly the dirty tiles,
// each pixel once, and never outnumber them.
func TestMergeCoversExactlyTheDirtyTiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		w, h := 1+r.IntN(400), 1+r.IntN(300)
		prev, cur := codec.NewFrame(w, h), codec.NewFrame(w, h)
		for range r.IntN(40) {
			cur.Pix[r.IntN(len(cur.Pix))] = 1
		}
		tiles := Detect(prev, cur, nil)
		merged := Merge(tiles, nil)
		require.LessOrEqual(t, len(merged), len(tiles))
		require.Equal(t, cover(w, h, tiles), cover(w, h, merged), "%dx%d", w, h)
	}
}

// Rectangles off the grid, of mixed heights and out of order, still come
// out as an exact cover.
func TestMergeKeepsAnyDisjointInputExact(t *testing.T) {
	in := []codec.Rect{rc(0, 0, 10, 5), rc(10, 0, 10, 7), rc(20, 0, 5, 5), rc(0, 5, 10, 5), rc(40, 40, 3, 3), rc(0, 30, 10, 10)}
	got := Merge(in, nil)
	require.Equal(t, cover(50, 50, in), cover(50, 50, got))
	require.LessOrEqual(t, len(got), len(in))
	require.Equal(t, []codec.Rect{{X: 0, Y: 0, W: 10, H: 10}}, Merge([]codec.Rect{rc(0, 0, 10, 5), rc(0, 5, 10, 5)}, nil), "same columns, touching: joined")
}

func rc(x, y, w, h int) codec.Rect { return codec.Rect{X: x, Y: y, W: w, H: h} }
