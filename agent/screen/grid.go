package screen

import (
	"math"
	"math/bits"
)

// The screen is tracked on a grid of Cols x Rows cells: a 1920x1080 desktop
// in 10x10-pixel cells. Changed fractions are counted in whole cells, so a
// region that touches a cell changes all of it, as a dirty rectangle in
// Desktop Duplication or a macroblock in an encoder does. The grid is fine
// enough for the smallest change the models make (a keystroke, about 0.2% of
// the screen, is some forty cells) and small enough that a union over a
// hundred versions costs a few microseconds.
const (
	Cols = 192
	Rows = 108
)

const (
	nCells = Cols * Rows
	// rowWords is how many uint64 hold one row of the bitset.
	rowWords = (Cols + 63) / 64
)

// cellRect is a half-open rectangle of cells.
type cellRect struct{ x0, y0, x1, y1 int }

func (c cellRect) cells() int { return (c.x1 - c.x0) * (c.y1 - c.y0) }

func (c cellRect) full() bool { return c == cellRect{0, 0, Cols, Rows} }

// span maps [lo, hi) of one axis, in fractions of the screen, to the cells it
// touches. The small tolerance keeps fractions that are exact multiples of a
// cell (0.25 of 108 rows) from spilling into the next cell through rounding.
func span(lo, hi float64, n int) (int, int) {
	const eps = 1e-9
	a := int(math.Floor(lo*float64(n) + eps))
	b := int(math.Ceil(hi*float64(n) - eps))
	a = max(0, min(a, n))
	b = max(0, min(b, n))
	if b <= a && hi > lo {
		// A region thinner than a cell still changes the cell it lies in.
		if a == n {
			a--
		}
		b = a + 1
	}
	return a, b
}

func toCells(r Rect) cellRect {
	x0, x1 := span(r.X, r.X+r.W, Cols)
	y0, y1 := span(r.Y, r.Y+r.H, Rows)
	return cellRect{x0, y0, x1, y1}
}

// part is one region of a change with the detail of its new content.
type part struct {
	r          cellRect
	mask       [rowWords]uint64 // the columns x0..x1 of every row
	complexity float64
	// fill is the share of the part's pixels that change (Change.Fill,
	// 1 when every one does).
	fill float64
	// source and phase say what made it, for a painter (Model.Version):
	// the source's kind and the phase's index, -1 for the desktop.
	source string
	phase  int
}

func newPart(r Rect, complexity float64) part {
	p := part{r: toCells(r), complexity: complexity, fill: 1, phase: -1}
	for x := p.r.x0; x < p.r.x1; x++ {
		p.mask[x/64] |= 1 << (x % 64)
	}
	return p
}

// bitset marks cells already counted in a union.
type bitset [Rows][rowWords]uint64

// cover marks p's cells and returns how many of them were not marked yet.
func (b *bitset) cover(p *part) int {
	n := 0
	for y := p.r.y0; y < p.r.y1; y++ {
		row := &b[y]
		for w, m := range p.mask {
			if fresh := m &^ row[w]; fresh != 0 {
				n += bits.OnesCount64(fresh)
				row[w] |= fresh
			}
		}
	}
	return n
}

// canvas holds the detail of every cell of the current picture, so that the
// mean detail of the whole screen (what a keyframe encodes) is known at every
// version. A full-screen change does not touch the cells: it bumps the
// generation and sets the base value, so an animation costs O(1) per frame.
type canvas struct {
	gen     []uint32
	val     []float64
	cur     uint32
	base    float64
	sum     float64
	painted int // cells of the current generation; none: the mean is base exactly
	// last is the region painted last: painting it again with the same
	// detail changes nothing, which makes the periodic sources (a video, a
	// scroll repainting the same window) cost O(1) per frame too.
	last     cellRect
	lastC    float64
	lastSeen bool
}

func newCanvas(complexity float64) *canvas {
	return &canvas{
		gen:  make([]uint32, nCells),
		val:  make([]float64, nCells),
		cur:  1,
		base: complexity,
		sum:  complexity * nCells,
	}
}

func (c *canvas) paint(p *part) {
	if c.lastSeen && p.r == c.last && p.complexity == c.lastC {
		return
	}
	c.last, c.lastC, c.lastSeen = p.r, p.complexity, true
	if p.r.full() {
		c.cur++
		c.base = p.complexity
		c.sum = p.complexity * nCells
		c.painted = 0
		return
	}
	for y := p.r.y0; y < p.r.y1; y++ {
		for x := p.r.x0; x < p.r.x1; x++ {
			i := y*Cols + x
			old := c.base
			if c.gen[i] == c.cur {
				old = c.val[i]
			} else {
				c.painted++
			}
			c.sum += p.complexity - old
			c.val[i], c.gen[i] = p.complexity, c.cur
		}
	}
}

// mean is the detail of the whole picture, clamped against the rounding
// that a long run of small updates accumulates in the running sum.
func (c *canvas) mean() float64 {
	if c.painted == 0 {
		return c.base
	}
	return max(0, min(1, c.sum/nCells))
}
