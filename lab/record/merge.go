package record

import (
	"slices"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// MaxRects bounds the damage rectangles of one recorded frame. XFIXES
// hands a region over as its Y-X bands, which for a line of text is a
// rectangle per glyph and for a diagonal edge one per row: read one by
// one, each costs a GetImage round trip, and a screen model replaying the
// index learns nothing from a hundred slivers that a few rectangles
// around them would not say.
const MaxRects = 32

// mergeSlack is how many pixels a merge may add that no rectangle covered,
// at least: two glyphs a space apart are one rectangle, as a screen's
// damage tracker would make them.
const mergeSlack = 256

// Merge returns damage clipped to a w x h screen, empty rectangles
// dropped, and merged: two rectangles become their bounding box when it
// adds little that neither covered (at most mergeSlack pixels, or an
// eighth of the box), until no such pair is left, and then the pairs that
// add least until at most MaxRects are left. The rectangles it returns
// cover every pixel damage covered on the screen, and are ordered top to
// bottom, left to right. The input is not changed.
func Merge(damage []codec.Rect, w, h int) []codec.Rect {
	rs := make([]codec.Rect, 0, len(damage))
	// cov[i] is how many pixels the rectangles merged into rs[i] cover:
	// a box is judged by what it holds that was damaged, not by its
	// size, or a growing box would swallow everything near it.
	var cov []int
	for _, r := range damage {
		if c, ok := clip(r, w, h); ok {
			rs = append(rs, c)
			cov = append(cov, area(c))
		}
	}
	merge := func(i, j int) {
		b := join(rs[i], rs[j])
		cov[i] = min(area(b), cov[i]+cov[j]-overlap(rs[i], rs[j]))
		rs[i] = b
		rs = slices.Delete(rs, j, j+1)
		cov = slices.Delete(cov, j, j+1)
	}
	waste := func(i, j int) (codec.Rect, int) {
		b := join(rs[i], rs[j])
		return b, area(b) - (cov[i] + cov[j] - overlap(rs[i], rs[j]))
	}
	// Cheap merges first, until none is left: each pass joins every pair
	// it may, so a row of glyphs collapses in a few passes.
	for merged := true; merged && len(rs) > 1; {
		merged = false
		for i := 0; i < len(rs); i++ {
			for j := i + 1; j < len(rs); j++ {
				if b, wst := waste(i, j); wst <= max(mergeSlack, area(b)/8) {
					merge(i, j)
					merged = true
					j = i // rs[i] grew: look at every other again
				}
			}
		}
	}
	// Then the least wasteful merges, one at a time, down to MaxRects.
	for len(rs) > MaxRects {
		bi, bj, best := 0, 1, -1
		for i := range rs {
			for j := i + 1; j < len(rs); j++ {
				if _, wst := waste(i, j); best < 0 || wst < best {
					bi, bj, best = i, j, wst
				}
			}
		}
		merge(bi, bj)
	}
	slices.SortFunc(rs, func(a, b codec.Rect) int {
		if a.Y != b.Y {
			return a.Y - b.Y
		}
		return a.X - b.X
	})
	return rs
}

// clip is r inside a w x h screen, and whether anything is left.
func clip(r codec.Rect, w, h int) (codec.Rect, bool) {
	x0, y0 := max(r.X, 0), max(r.Y, 0)
	x1, y1 := min(r.X+r.W, w), min(r.Y+r.H, h)
	if x1 <= x0 || y1 <= y0 {
		return codec.Rect{}, false
	}
	return codec.Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}, true
}

// join is the bounding box of a and b.
func join(a, b codec.Rect) codec.Rect {
	x0, y0 := min(a.X, b.X), min(a.Y, b.Y)
	x1, y1 := max(a.X+a.W, b.X+b.W), max(a.Y+a.H, b.Y+b.H)
	return codec.Rect{X: x0, Y: y0, W: x1 - x0, H: y1 - y0}
}

func area(r codec.Rect) int { return r.W * r.H }

// overlap is how many pixels a and b share.
func overlap(a, b codec.Rect) int {
	w := min(a.X+a.W, b.X+b.W) - max(a.X, b.X)
	h := min(a.Y+a.H, b.Y+b.H) - max(a.Y, b.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	return w * h
}
