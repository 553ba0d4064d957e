package glass

import (
	"math"
	"slices"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
)

// Placement is where a marker shows on a display: the top left corner of
// its first block, and its blocks' size in display pixels
// (screendrive.MarkerBlock times the viewer's scale).
type Placement struct {
	X, Y  int
	Block float64
}

// Rect is the rectangle the marker covers.
func (p Placement) Rect() codec.Rect {
	return codec.Rect{X: p.X, Y: p.Y,
		W: int(math.Ceil(p.Block * screendrive.MarkerBits)), H: int(math.Ceil(2 * p.Block))}
}

// The thresholds of a block's mean luma: at or above White it is white, at
// or below Black black, and between the two unreadable. They leave a
// lossy viewer's ringing and a colour conversion's shift plenty of room
// (the marker is pure black and white), and reject what lies between two
// versions' markers mid-draw.
const (
	White = 170
	Black = 85
)

// luma is a 0x00RRGGBB pixel's luma, 0 to 255 (BT.601 weights).
func luma(p uint32) int {
	r, g, b := int(p>>16&0xFF), int(p>>8&0xFF), int(p&0xFF)
	return (299*r + 587*g + 114*b) / 1000
}

// block reads one block of the marker at p in f, whose top left corner is
// display pixel (ox, oy): 1 for white, 0 for black, -1 unreadable. It
// reads four points of the block, at 30% and 70% of its width and height,
// each as the mean luma of a window a quarter of the block wide (at least
// one pixel), and they must agree: a scaled or lossily coded edge does not
// reach them, and a block whose points fall in two blocks of different
// colours (a placement at the wrong block size, mostly) is rejected.
func block(f *codec.Frame, ox, oy int, p Placement, col, row int) int {
	side := max(1, int(p.Block/4))
	got := -1
	for _, fy := range [2]float64{0.3, 0.7} {
		for _, fx := range [2]float64{0.3, 0.7} {
			cx := float64(p.X-ox) + (float64(col)+fx)*p.Block
			cy := float64(p.Y-oy) + (float64(row)+fy)*p.Block
			xa, ya := int(cx-float64(side)/2), int(cy-float64(side)/2)
			if xa < 0 || ya < 0 || xa+side > f.W || ya+side > f.H {
				return -1
			}
			sum := 0
			for y := ya; y < ya+side; y++ {
				for _, px := range f.Pix[y*f.W+xa : y*f.W+xa+side] {
					sum += luma(px)
				}
			}
			c := -1
			switch m := sum / (side * side); {
			case m >= White:
				c = 1
			case m <= Black:
				c = 0
			}
			if c < 0 || (got >= 0 && c != got) {
				return -1
			}
			got = c
		}
	}
	return got
}

// readAt reads the marker at p from f, whose top left corner is display
// pixel (ox, oy); false when any block is unreadable or its lower row is
// not the inverse of its upper (a marker half drawn).
func readAt(f *codec.Frame, ox, oy int, p Placement) (uint32, bool) {
	var n uint32
	for i := range screendrive.MarkerBits {
		top, bottom := block(f, ox, oy, p, i, 0), block(f, ox, oy, p, i, 1)
		if top < 0 || bottom < 0 || top == bottom {
			return 0, false
		}
		n = n<<1 | uint32(top)
	}
	return n, true
}

// Read reads the marker at p from f, a grab of p.Rect().
func Read(f *codec.Frame, p Placement) (uint32, bool) {
	return readAt(f, p.X, p.Y, p)
}

// Find searches f, a grab of a whole display, for a marker at each block
// size of blocks, from the largest, from the top left, and returns the
// first it reads whose version want accepts (nil: any but 0, which no
// screen has). A viewer that shows the picture unscaled gives blocks of
// screendrive.MarkerBlock; one that scales it by s, s times that. A marker
// scaled by a whole number n also reads at the unscaled size, each bit n
// times over a stretch of the marker: a wrong number, which the largest
// size going first avoids where it can, and want where it cannot (a
// session knows which version its display shows while it looks).
func Find(f *codec.Frame, blocks []float64, want func(uint32) bool) (Placement, uint32, bool) {
	if want == nil {
		want = func(v uint32) bool { return v != 0 }
	}
	blocks = slices.Clone(blocks)
	slices.Sort(blocks)
	slices.Reverse(blocks)
	for _, b := range blocks {
		if !(b >= 1) {
			continue
		}
		p := Placement{Block: b}
		r := p.Rect()
		for y := 0; y+r.H <= f.H; y++ {
			for x := 0; x+r.W <= f.W; x++ {
				p.X, p.Y = x, y
				// The first block's two rows first: almost every position
				// fails there.
				top, bottom := block(f, 0, 0, p, 0, 0), block(f, 0, 0, p, 0, 1)
				if top < 0 || bottom < 0 || top == bottom {
					continue
				}
				if v, ok := readAt(f, 0, 0, p); ok && want(v) {
					return centre(f, p, v), v, true
				}
			}
		}
	}
	return Placement{}, 0, false
}

// centre moves p, the first placement found from the top left, to the
// middle of the placements right and below it that read the same marker:
// the block centres then sit as far from the edges as they can, where a
// lossy or scaled picture is surest.
func centre(f *codec.Frame, p Placement, v uint32) Placement {
	same := func(q Placement) bool {
		w, ok := readAt(f, 0, 0, q)
		return ok && w == v && q.X+q.Rect().W <= f.W && q.Y+q.Rect().H <= f.H
	}
	n := 1
	for q := p; n < int(p.Block); n++ {
		q.X++
		if !same(q) {
			break
		}
	}
	p.X += (n - 1) / 2
	n = 1
	for q := p; n < int(p.Block); n++ {
		q.Y++
		if !same(q) {
			break
		}
	}
	p.Y += (n - 1) / 2
	return p
}
