// Package dirty is the one dirty-tile detector every codec of the lab is
// charged with (finding E10): it compares a frame with the previous one on
// the codec.TileSize grid and lists the tiles that changed. Running the same
// detector in front of every encoder keeps the comparison honest: no codec
// gets the list of changed tiles for free while another scans the frame.
package dirty

import (
	"bytes"
	"unsafe"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// Detect appends to dst[:0] the tiles of cur that differ from prev, in
// row-major tile order, and returns the result. Tiles are codec.TileSize
// square; those on the right and bottom edges are cut to the frame. A nil
// prev, or one of another size, makes every tile dirty: the decoder has
// nothing usable to diff against.
//
// The scan is shaped for the common case, a frame that barely changed. A
// band of TileSize full rows is contiguous in Pix, so it is first compared
// as one slice; only a band that differs is compared row by row, and only
// a row that differs is split into tiles. A static frame therefore costs one
// linear comparison, the same memory traffic as comparing the whole frame,
// instead of the strided 32-pixel accesses of a tile-by-tile walk.
func Detect(prev, cur *codec.Frame, dst []codec.Rect) []codec.Rect {
	dst = dst[:0]
	w, h := cur.W, cur.H
	all := prev == nil || prev.W != w || prev.H != h
	var dirtyCol []bool // per tile column of the current band
	cols := (w + codec.TileSize - 1) / codec.TileSize
	if !all {
		dirtyCol = make([]bool, cols)
	}
	for y0 := 0; y0 < h; y0 += codec.TileSize {
		th := min(codec.TileSize, h-y0)
		if all {
			for x0 := 0; x0 < w; x0 += codec.TileSize {
				dst = append(dst, codec.Rect{X: x0, Y: y0, W: min(codec.TileSize, w-x0), H: th})
			}
			continue
		}
		band := y0 * w
		if equal(prev.Pix[band:band+th*w], cur.Pix[band:band+th*w]) {
			continue
		}
		clear(dirtyCol)
		left := cols // tile columns not yet known dirty: stop when none left
		for y := y0; y < y0+th && left > 0; y++ {
			pr, cr := prev.Pix[y*w:(y+1)*w], cur.Pix[y*w:(y+1)*w]
			if equal(pr, cr) {
				continue
			}
			for c := range cols {
				if dirtyCol[c] {
					continue // early exit: this tile is already known dirty
				}
				x0 := c * codec.TileSize
				x1 := min(x0+codec.TileSize, w)
				if !equal(pr[x0:x1], cr[x0:x1]) {
					dirtyCol[c] = true
					left--
				}
			}
		}
		for c, d := range dirtyCol {
			if d {
				x0 := c * codec.TileSize
				dst = append(dst, codec.Rect{X: x0, Y: y0, W: min(codec.TileSize, w-x0), H: th})
			}
		}
	}
	return dst
}

// equal compares two pixel runs through byte views, so that the runtime's
// vectorised memory comparison (bytes.Equal) does the work: slices.Equal on
// []uint32 goes element by element and is about five times slower. The
// views are read-only and never outlive the call.
func equal(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	ab := unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a)*4)
	bb := unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b)*4)
	return bytes.Equal(ab, bb)
}
