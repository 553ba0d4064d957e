package frames

import (
	"math"
	"math/rand/v2"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// Kind is a kind of content the Painter makes. The lossless encoders'
// time model charges each kind at its own measured rate.
type Kind int

// The kinds of content.
const (
	// KindText is a flat background with text-like glyphs on it: windows,
	// documents, a terminal. Detail below PhotoDetail.
	KindText Kind = iota
	// KindPhoto is a smooth gradient under grain: photos, video, a rich
	// animation. Detail PhotoDetail and above.
	KindPhoto
	// NumKinds counts the kinds.
	NumKinds
)

// PhotoDetail is the detail (the screen model's complexity) from which a
// change is painted as a photo rather than as text. The screen model's own
// figures put the line there: text and a desktop are 0.5-0.6, a rich
// animation 0.8, a video or a photo 0.9.
const PhotoDetail = 0.7

// Glyph geometry: a character cell of 8 x 16 pixels, the size of a 1080p
// terminal's font, with a font of glyphCount glyphs drawn once per session.
const (
	glyphW     = 8
	glyphH     = 16
	glyphCount = 64
)

// GlyphW and GlyphH are the painter's character cell in pixels.
const (
	GlyphW = glyphW
	GlyphH = glyphH
)

// glyph is one character's bitmap: row y, bit x set means ink.
type glyph [glyphH]uint8

// Painter turns what the screen model says changed (how much, how
// detailed) into pixels: text on a flat background below PhotoDetail, a
// grainy gradient from it on. Every choice draws from its one seeded
// source, in the order of the calls, so a session paints the same pixels
// whenever it makes the same calls. The lossless encoders
// (agent/encoder/lossless) paint their frames with it, and the screen
// painter (agent/screen/paint) its textures.
type Painter struct {
	rng  *rand.Rand
	font [glyphCount]glyph
	// A desktop's theme: a few window backgrounds and text colours, drawn
	// once, so that text re-rendered in a window keeps its background, as
	// a keystroke's does.
	paper, ink [themeColours]uint32
}

// themeColours is how many backgrounds and text colours a theme has.
const themeColours = 4

// NewPainter makes a painter drawing from rng; it draws its font and
// theme at once.
func NewPainter(rng *rand.Rand) *Painter {
	p := &Painter{rng: rng}
	for i := range p.font {
		p.font[i] = p.newGlyph()
	}
	for i := range themeColours {
		p.paper[i] = p.colour(200, 56) // light: a window or a page
		p.ink[i] = p.colour(0, 80)     // dark: its text
	}
	return p
}

// newGlyph draws a letter-like shape: two or three strokes (stems, bars,
// dots) inside the x-height and ascender of the cell, leaving its first and
// last column and its top and bottom rows blank as a font's side bearings
// and line gap do. What matters to a codec is that glyphs are small, sharp
// and two-coloured, and that a text repeats a few dozen of them.
func (p *Painter) newGlyph() glyph {
	var g glyph
	for range 2 + p.rng.IntN(2) {
		switch p.rng.IntN(3) {
		case 0: // a stem
			x := 1 + p.rng.IntN(glyphW-2)
			top := 2 + p.rng.IntN(5)
			for y := top; y < 13; y++ {
				g[y] |= 1 << x
			}
		case 1: // a bar
			y := 4 + p.rng.IntN(9)
			x0 := 1 + p.rng.IntN(3)
			for x := x0; x < glyphW-1; x++ {
				g[y] |= 1 << x
			}
		default: // a dot or a short diagonal
			x, y := 1+p.rng.IntN(glyphW-3), 3+p.rng.IntN(8)
			for k := range 3 {
				g[y+k] |= 1 << (x + k%2)
			}
		}
	}
	return g
}

// KindOf is the kind a change of this detail is painted as.
func KindOf(detail float64) Kind {
	if detail >= PhotoDetail {
		return KindPhoto
	}
	return KindText
}

// Area returns a rectangle of f holding the fraction a of its pixels: the
// whole frame for a full-screen change, otherwise the frame's aspect ratio
// scaled down, at a seeded position. The screen model says how much of the
// screen changed, not where, and a codec's cost depends on the amount and
// on the tiles it touches, which a rectangle of the right area reproduces.
func (p *Painter) Area(f *codec.Frame, a float64) codec.Rect {
	if a >= 1-1e-9 {
		return codec.Rect{W: f.W, H: f.H}
	}
	n := max(1, int(math.Round(a*float64(f.W*f.H))))
	w := min(max(int(math.Round(math.Sqrt(a)*float64(f.W))), 1), f.W)
	h := min(max((n+w-1)/w, 1), f.H)
	return codec.Rect{X: p.rng.IntN(f.W - w + 1), Y: p.rng.IntN(f.H - h + 1), W: w, H: h}
}

// Paint fills r of f with content of the given detail (0 to 1) and returns
// its kind.
func (p *Painter) Paint(f *codec.Frame, r codec.Rect, detail float64) Kind {
	detail = min(max(detail, 0), 1)
	if KindOf(detail) == KindPhoto {
		p.Photo(f, r, detail)
		return KindPhoto
	}
	p.Text(f, r, detail)
	return KindText
}

// colour draws a colour whose channels lie in [lo, lo+span).
func (p *Painter) colour(lo, span uint32) uint32 {
	c := uint32(0)
	for range 3 {
		c = c<<8 | (lo + p.rng.Uint32N(span))
	}
	return c
}

// Text paints one of the theme's backgrounds with glyphs in one of its
// text colours, on a grid of character cells from r's corner. The detail sets how many cells have ink, from none
// (0: a flat colour, a window's empty background) to every one (at
// PhotoDetail: a dense page); a glyph is drawn in full or not at all, cut
// only at r's edges.
func (p *Painter) Text(f *codec.Frame, r codec.Rect, detail float64) {
	bg := p.paper[p.rng.IntN(themeColours)]
	fg := p.ink[p.rng.IntN(themeColours)]
	for y := r.Y; y < r.Y+r.H; y++ {
		row := f.Pix[y*f.W+r.X : y*f.W+r.X+r.W]
		for i := range row {
			row[i] = bg
		}
	}
	density := detail / PhotoDetail
	if density <= 0 {
		return
	}
	for cy := r.Y; cy < r.Y+r.H; cy += glyphH {
		for cx := r.X; cx < r.X+r.W; cx += glyphW {
			if p.rng.Float64() >= density {
				continue // a space
			}
			g := &p.font[p.rng.IntN(glyphCount)]
			for dy := range min(glyphH, r.Y+r.H-cy) {
				bits := g[dy]
				if bits == 0 {
					continue
				}
				row := f.Pix[(cy+dy)*f.W:]
				for dx := range min(glyphW, r.X+r.W-cx) {
					if bits&(1<<dx) != 0 {
						row[cx+dx] = fg
					}
				}
			}
		}
	}
}

// grainBits is how many low bits of each channel are noise at a detail of
// PhotoDetail and above: 1 bit at PhotoDetail, 8 (every bit: pure noise,
// the codec benchmark's noise) at 1. A rich animation (0.8) gets 3 bits, a
// video or photo (0.9) 6.
func grainBits(detail float64) uint {
	return uint(1 + math.Round(7*(detail-PhotoDetail)/(1-PhotoDetail)))
}

// Photo paints a smooth gradient across r, red along x and green along y
// from a seeded colour, with noise in the low grainBits bits of every
// channel: natural images are smooth at large scale and grainy at small,
// and the grain is what a lossless codec cannot squeeze.
func (p *Painter) Photo(f *codec.Frame, r codec.Rect, detail float64) {
	bits := min(max(grainBits(detail), 1), 8)
	mask := uint32(1)<<bits - 1
	grain := mask<<16 | mask<<8 | mask
	base := p.colour(0, 256)
	br, bgr, bb := base>>16, base>>8&0xff, base&0xff
	for y := r.Y; y < r.Y+r.H; y++ {
		g := (bgr + uint32(128*(y-r.Y)/r.H)) & 0xff
		row := f.Pix[y*f.W+r.X : y*f.W+r.X+r.W]
		for i := range row {
			rd := (br + uint32(128*i/r.W)) & 0xff
			b := (bb + uint32(64*(i+y-r.Y)/(r.W+r.H))) & 0xff
			// Adding per channel without carries: the grain of one
			// channel must not spill into the next.
			n := p.rng.Uint32() & grain
			px := ((rd + n>>16&mask) & 0xff) << 16
			px |= ((g + n>>8&mask) & 0xff) << 8
			px |= (b + n&mask) & 0xff
			row[i] = px
		}
	}
}
