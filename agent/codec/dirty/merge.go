package dirty

import "github.com/nuvirahub/latencylab/agent/codec"

// Merge appends to dst[:0] the rectangles that cover exactly the tiles of
// rects, joined where they touch: first runs of adjacent tiles along a band
// of tiles, then runs of the same columns in consecutive bands. rects must
// may be any list of disjoint rectangles; it merges best when they are in
// Detect's order (grid tiles, row-major): only rectangles of the same top
// and height join along a band, and only runs of the same columns that
// touch join downwards, so the cover is exact whatever the input.
//
// Codecs that frame every rectangle (Hextile and ZRLE put a 12-byte header
// on each, and Hextile carries its background colour only within one
// rectangle) would otherwise pay that framing on every 32x32 tile; a
// keyframe merges into the one rectangle of the whole frame, as a VNC
// server would send it. The union of the output is the union of the input:
// no clean pixel is added.
func Merge(rects []codec.Rect, dst []codec.Rect) []codec.Rect {
	dst = dst[:0]
	// open holds indexes into dst of the rectangles that ended at the
	// previous band and may still grow downwards, in x order.
	var open, next []int
	for i := 0; i < len(rects); {
		// One band's runs.
		y, h := rects[i].Y, rects[i].H
		next = next[:0]
		k := 0 // position in open
		for i < len(rects) && rects[i].Y == y && rects[i].H == h {
			run := rects[i]
			i++
			for i < len(rects) && rects[i].Y == y && rects[i].H == h && rects[i].X == run.X+run.W {
				run.W += rects[i].W
				i++
			}
			// Extend the open rectangle with the same columns that ends
			// right above this band, if any.
			for k < len(open) && dst[open[k]].X < run.X {
				k++
			}
			if k < len(open) {
				if r := &dst[open[k]]; r.X == run.X && r.W == run.W && r.Y+r.H == y {
					r.H += h
					next = append(next, open[k])
					k++
					continue
				}
			}
			dst = append(dst, run)
			next = append(next, len(dst)-1)
		}
		open, next = next, open
	}
	return dst
}
