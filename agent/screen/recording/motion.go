package recording

import (
	"cmp"
	"slices"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// MaxShift is the largest shift, in pixels along either axis, that Moved
// looks for: a quarter of a 720p screen's height, what a window dragged
// fast or a page scrolled fast covers in one frame at 60 Hz.
const MaxShift = 180

// motionBlock is the side of the blocks whose places in the frame before
// vote for a shift: big enough that a block of a window's content is
// found only where that content is, small enough that a window of a few
// text lines holds many.
const motionBlock = 16

// motionSamples bounds the blocks of a change that vote, so that the
// search costs about the same for a small change and a whole screen.
const motionSamples = 256

// motionCandidates is how many of the best-voted shifts are checked pixel
// by pixel: votes come from blocks, the answer from pixels.
const motionCandidates = 3

// motion finds how much of a change a shift of the frame before explains,
// the way an encoder's motion search does for a dragged window or a
// scrolled page. It keeps its buffers from frame to frame.
type motion struct {
	rows, blocks []uint64
	mask         []uint64
}

// Polynomial hash bases for rows (p) and for the rows' hashes down a
// block (q); odd, so that every power is too and no pixel's weight is
// lost modulo 2^64. Candidates are confirmed pixel by pixel, so a
// collision costs a wasted check, never a wrong answer.
const hashP, hashQ = 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F

// changed marks the pixels inside damage that differ between prev and cur
// in m.mask (those under two rectangles once) and returns how many there
// are and their bounding box: what ChangedShare counts and what moved
// searches, found in one walk over the damage.
func (m *motion) changed(prev, cur *codec.Frame, damage []codec.Rect) (int, codec.Rect) {
	w, h := cur.W, cur.H
	m.mask = slices.Grow(m.mask[:0], (w*h+63)/64)[:(w*h+63)/64]
	clear(m.mask)
	x0, y0, x1, y1, n := w, h, -1, -1, 0
	for _, r := range damage {
		for y := r.Y; y < r.Y+r.H; y++ {
			for x := r.X; x < r.X+r.W; x++ {
				i := y*w + x
				if prev.Pix[i] != cur.Pix[i] && m.mask[i/64]&(1<<(i%64)) == 0 {
					m.mask[i/64] |= 1 << (i % 64)
					n++
					x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
				}
			}
		}
	}
	if n == 0 {
		return 0, codec.Rect{}
	}
	return n, codec.Rect{X: x0, Y: y0, W: x1 - x0 + 1, H: y1 - y0 + 1}
}

// moved is the share of the pixels inside damage that differ between prev
// and cur which the best single shift of prev (dx, dy, each within
// MaxShift, not both zero) gives exactly: 0 when nothing changed or no
// shift explains any of it (and for the first frame, prev nil).
func (m *motion) moved(prev, cur *codec.Frame, damage []codec.Rect) float64 {
	if prev == nil {
		return 0
	}
	n, box := m.changed(prev, cur, damage)
	return m.movedOf(prev, cur, n, box)
}

// movedOf is moved for the n changed pixels in box that changed just
// marked.
func (m *motion) movedOf(prev, cur *codec.Frame, n int, box codec.Rect) float64 {
	w, h := cur.W, cur.H
	if n == 0 || w < motionBlock || h < motionBlock {
		return 0
	}

	// The voters: blocks of cur inside the box on a grid that hold a
	// changed pixel and some detail (a flat block is found everywhere).
	type sample struct {
		x, y int
		hash uint64
	}
	var samples []sample
	for y := box.Y; y < box.Y+box.H; y += motionBlock {
		for x := box.X; x < box.X+box.W; x += motionBlock {
			bx, by := min(x, w-motionBlock), min(y, h-motionBlock)
			if m.blockChanged(w, bx, by) && detailed(cur, bx, by) {
				samples = append(samples, sample{x: bx, y: by})
			}
		}
	}
	if len(samples) == 0 {
		return 0
	}
	if len(samples) > motionSamples {
		// Evenly spread over the change.
		picked := make([]sample, motionSamples)
		for i := range picked {
			picked[i] = samples[i*len(samples)/motionSamples]
		}
		samples = picked
	}
	for i := range samples {
		samples[i].hash = blockHash(cur, samples[i].x, samples[i].y)
	}

	// Where the voters' blocks are in prev, within MaxShift of the box.
	ax0, ay0 := max(0, box.X-MaxShift), max(0, box.Y-MaxShift)
	ax1, ay1 := min(w, box.X+box.W+MaxShift+motionBlock), min(h, box.Y+box.H+MaxShift+motionBlock)
	byHash := make(map[uint64][]int, len(samples))
	for i, s := range samples {
		byHash[s.hash] = append(byHash[s.hash], i)
	}
	type shift struct{ dx, dy int }
	votes := map[shift]int{}
	m.hashBlocks(prev, ax0, ay0, ax1, ay1, func(x, y int, hash uint64) {
		for _, i := range byHash[hash] {
			d := shift{x - samples[i].x, y - samples[i].y}
			if d != (shift{}) && abs(d.dx) <= MaxShift && abs(d.dy) <= MaxShift {
				votes[d]++
			}
		}
	})
	if len(votes) == 0 {
		return 0
	}
	ranked := make([]shift, 0, len(votes))
	for d := range votes {
		ranked = append(ranked, d)
	}
	// Most votes first; ties to the shorter shift, then by place, so the
	// answer does not depend on the map's order.
	slices.SortFunc(ranked, func(a, b shift) int {
		return cmp.Or(cmp.Compare(votes[b], votes[a]), cmp.Compare(abs(a.dx)+abs(a.dy), abs(b.dx)+abs(b.dy)),
			cmp.Compare(a.dy, b.dy), cmp.Compare(a.dx, b.dx))
	})
	best := 0
	for _, d := range ranked[:min(len(ranked), motionCandidates)] {
		best = max(best, m.predicted(prev, cur, box, d.dx, d.dy))
	}
	return float64(best) / float64(n)
}

// blockChanged says whether the block at x, y holds a changed pixel.
func (m *motion) blockChanged(w, x, y int) bool {
	for yy := y; yy < y+motionBlock; yy++ {
		for xx := x; xx < x+motionBlock; xx++ {
			i := yy*w + xx
			if m.mask[i/64]&(1<<(i%64)) != 0 {
				return true
			}
		}
	}
	return false
}

// detailed says whether the block at x, y holds at least three colours:
// a block of one or two is as likely a patch of background or a bar as
// the piece of a window it came from.
func detailed(f *codec.Frame, x, y int) bool {
	var seen [3]uint32
	k := 0
	for yy := y; yy < y+motionBlock; yy++ {
		for _, px := range f.Pix[yy*f.W+x : yy*f.W+x+motionBlock] {
			if !slices.Contains(seen[:k], px) {
				seen[k] = px
				if k++; k == len(seen) {
					return true
				}
			}
		}
	}
	return false
}

// blockHash is the hash of f's block at x, y, the same as hashBlocks
// gives for it.
func blockHash(f *codec.Frame, x, y int) uint64 {
	var hash uint64
	for yy := y; yy < y+motionBlock; yy++ {
		var row uint64
		for _, px := range f.Pix[yy*f.W+x : yy*f.W+x+motionBlock] {
			row = row*hashP + uint64(px)
		}
		hash = hash*hashQ + row
	}
	return hash
}

// hashBlocks calls fn with the hash of every block of f whose top left
// corner lies in [x0, x1-motionBlock] x [y0, y1-motionBlock]: rolling
// hashes, first along each row, then down the columns of row hashes, so
// the cost is a few operations a pixel whatever the block's size.
func (m *motion) hashBlocks(f *codec.Frame, x0, y0, x1, y1 int, fn func(x, y int, hash uint64)) {
	cols, rows := x1-x0-motionBlock+1, y1-y0
	if cols <= 0 || rows < motionBlock {
		return
	}
	var pB, qB uint64 = 1, 1 // hashP and hashQ to the power motionBlock
	for range motionBlock {
		pB *= hashP
		qB *= hashQ
	}
	m.rows = slices.Grow(m.rows[:0], cols*rows)[:cols*rows]
	for y := range rows {
		line := f.Pix[(y0+y)*f.W+x0 : (y0+y)*f.W+x1]
		out := m.rows[y*cols : (y+1)*cols]
		var r uint64
		for i, px := range line {
			r = r*hashP + uint64(px)
			if i >= motionBlock {
				r -= uint64(line[i-motionBlock]) * pB
			}
			if i >= motionBlock-1 {
				out[i-motionBlock+1] = r
			}
		}
	}
	m.blocks = slices.Grow(m.blocks[:0], cols)[:cols]
	clear(m.blocks)
	for y := range rows {
		for c := range cols {
			b := m.blocks[c]*hashQ + m.rows[y*cols+c]
			if y >= motionBlock {
				b -= m.rows[(y-motionBlock)*cols+c] * qB
			}
			m.blocks[c] = b
			if y >= motionBlock-1 {
				fn(x0+c, y0+y-motionBlock+1, b)
			}
		}
	}
}

// predicted counts the changed pixels of box that prev shifted by dx, dy
// gives exactly: cur at (x, y) equals prev at (x+dx, y+dy), inside the
// screen.
func (m *motion) predicted(prev, cur *codec.Frame, box codec.Rect, dx, dy int) int {
	w, h := cur.W, cur.H
	n := 0
	for y := box.Y; y < box.Y+box.H; y++ {
		sy := y + dy
		if sy < 0 || sy >= h {
			continue
		}
		for x := box.X; x < box.X+box.W; x++ {
			sx := x + dx
			i := y*w + x
			if sx < 0 || sx >= w || m.mask[i/64]&(1<<(i%64)) == 0 {
				continue
			}
			if cur.Pix[i] == prev.Pix[sy*w+sx] {
				n++
			}
		}
	}
	return n
}
