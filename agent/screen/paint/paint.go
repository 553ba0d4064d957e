// Package paint turns the screen model's timeline into real pictures, for
// the encoders that take pixels (a real H.264 encoder): every version of the
// screen becomes an I420 picture at a chosen resolution, deterministic per
// seed.
//
// The screen model (agent/screen) says which cells of its grid each version
// changed, which source changed them and how detailed the new content is;
// the painter fills those cells with content of that kind:
//
//   - the desktop (version 1): windows of text, the lossless encoders' own
//     text (agent/codec/frames' Painter), at the desktop's detail;
//   - an animation (N3): a detailed scene that pans along a smooth path,
//     with a few windows sliding over it and fresh grain at every frame,
//     so the whole image changes at every refresh, as a game or a 3D view;
//   - scrolling: a long document moving up through its region at a steady
//     speed, a real shift that an encoder's motion search can follow;
//   - typing: the line at the caret re-rendered, its text moved on by one
//     character a keystroke;
//   - a video in a window: its own scene panning inside the window, with
//     grain, at the video's frame rate;
//   - a photo: a still detailed picture that appears in its region;
//   - a still screen: no version, so nothing changes;
//   - a recorded desktop (agent/screen/recording): the recording's own
//     pixels, the frame the screen says its phase shows at the version's
//     instant (Recorded), scaled to the painter's size by the nearest
//     sample if it was recorded at another.
//
// Every region's pixels are a pure function of the seed, its source, its
// detail and the version's instant (or number), drawn from textures painted
// once per session with the lossless encoders' painter and converted to
// I420 (BT.601, limited range). So a picture depends only on the seed and
// the version, never on which versions were painted before it, and a
// painter may skip the versions a slow capturer missed.
//
// Cost: a version costs copies from the textures (and, for the moving
// kinds, a pass of grain), a millisecond or two for a full 720p screen; the
// textures cost some tens of milliseconds each, painted when a source first
// needs them.
package paint

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// The default resolution: 720p, where a session with a real encoder runs
// faster than real time on one core. 1920x1080 (the write-ups' screen) on
// request.
const (
	DefaultWidth  = 1280
	DefaultHeight = 720
)

// Config describes a painter. Zero values mean the defaults.
type Config struct {
	// Width and Height are the pictures' size in pixels, both even; zero
	// means DefaultWidth x DefaultHeight.
	Width, Height int
}

// Versions is what the painter reads: the screen model's versions and the
// regions that made each one (*screen.Model implements it).
type Versions interface {
	Version(v uint64) (screen.Image, []screen.Region, bool)
}

var _ Versions = (*screen.Model)(nil)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("paint: bad configuration")

// ErrNoVersion: the screen has not presented the version asked for.
var ErrNoVersion = errors.New("paint: no such version")

// Painter paints the versions of one screen. It is not safe for concurrent
// use: one capturer paints.
type Painter struct {
	src  Versions
	seed uint64
	w, h int

	cur   *yuv.I420 // the picture of version at
	at    uint64
	tex   map[texKey]*yuv.I420
	noise map[int][]int8 // noise tiles by amplitude (grain)
	rgb   *codec.Frame   // scratch for painting textures
	grid  [2][]int       // the pixel column (0) and row (1) where each grid cell starts, and the end
	// recorded holds the recordings replayed so far, each decoded in
	// order (see recordedPicture).
	recorded map[*recording.Recording]*recordedPictures
	err      error // the first error painting a region met
}

// New makes a painter of the versions of src, whose content draws from
// sources seeded by seed.
func New(seed uint64, src Versions, cfg Config) (*Painter, error) {
	if src == nil {
		return nil, fmt.Errorf("%w: no screen", ErrConfig)
	}
	if cfg.Width == 0 && cfg.Height == 0 {
		cfg.Width, cfg.Height = DefaultWidth, DefaultHeight
	}
	// A grid cell must be a pixel at least, and 4:2:0 needs even sides.
	if cfg.Width < screen.Cols || cfg.Height < screen.Rows || cfg.Width%2 != 0 || cfg.Height%2 != 0 || cfg.Width > 8192 || cfg.Height > 8192 {
		return nil, fmt.Errorf("%w: %dx%d: need even sides from %dx%d (one pixel a grid cell) to 8192x8192",
			ErrConfig, cfg.Width, cfg.Height, screen.Cols, screen.Rows)
	}
	p := &Painter{src: src, seed: seed, w: cfg.Width, h: cfg.Height, tex: map[texKey]*yuv.I420{}}
	for axis, n := range [2]struct{ cells, px int }{{screen.Cols, p.w}, {screen.Rows, p.h}} {
		edges := make([]int, n.cells+1)
		for i := range edges {
			// Even edges keep every region's chroma whole.
			edges[i] = int(math.Round(float64(i)*float64(n.px)/float64(n.cells)/2)) * 2
		}
		p.grid[axis] = edges
	}
	return p, nil
}

// Size returns the pictures' width and height.
func (p *Painter) Size() (w, h int) { return p.w, p.h }

// Paint returns the picture of version v. The picture is the painter's own
// and changes at the next Paint: Clone it to keep it. Versions may come in
// any order; going forward from the last one painted costs only the
// versions between (and nothing before the last full-screen change).
func (p *Painter) Paint(v uint64) (*yuv.I420, error) {
	if v == 0 {
		return nil, fmt.Errorf("%w: version 0 is no image", ErrNoVersion)
	}
	if p.cur == nil || v < p.at {
		p.cur, p.at = yuv.New(p.w, p.h), 0
	}
	if v == p.at {
		return p.cur, nil
	}
	// Start from the last version with a full-screen region: nothing
	// before it shows.
	from := p.at + 1
	for u := v; u > p.at; u-- {
		_, regions, ok := p.src.Version(u)
		if !ok {
			return nil, fmt.Errorf("%w: version %d", ErrNoVersion, u)
		}
		if full := lastFull(regions); full >= 0 {
			from = u
			break
		}
	}
	for u := from; u <= v; u++ {
		img, regions, _ := p.src.Version(u)
		start := 0
		if u == from {
			start = max(0, lastFull(regions))
		}
		for _, r := range regions[start:] {
			p.region(img, r)
		}
		if p.err != nil {
			err := p.err
			p.err, p.cur, p.at = nil, nil, 0 // the picture is unfinished
			return nil, err
		}
		p.at = u
	}
	return p.cur, nil
}

// lastFull is the index of the last full-screen region, -1 if none.
func lastFull(regions []screen.Region) int {
	for i := len(regions) - 1; i >= 0; i-- {
		if regions[i].Full() {
			return i
		}
	}
	return -1
}

// rect is a region in pixels, half-open, with even edges.
type rect struct{ x0, y0, x1, y1 int }

func (r rect) w() int { return r.x1 - r.x0 }
func (r rect) h() int { return r.y1 - r.y0 }

func (p *Painter) pixels(r screen.Region) rect {
	return rect{p.grid[0][r.X0], p.grid[1][r.Y0], p.grid[0][r.X1], p.grid[1][r.Y1]}
}

// Motion of the moving kinds, in screen heights per second, so that a
// picture moves as far at 720p as at 1080p: an animation pans a fifth of
// the screen a second along its path, a document scrolls half a screen a
// second (a steady wheel), a video pans a tenth inside its window.
const (
	animationSpeed = 0.2
	scrollSpeed    = 0.5
	videoSpeed     = 0.1
	// sprites is how many windows slide over an animation.
	sprites = 4
)

// region paints one region of version img.
func (p *Painter) region(img screen.Image, r screen.Region) {
	px := p.pixels(r)
	if px.w() <= 0 || px.h() <= 0 {
		return
	}
	t := img.At.Seconds()
	c := r.Complexity
	switch r.Source {
	case screen.SourceDesktop:
		p.copyFrom(px, p.texture(texDesktop, c), px.x0, px.y0)
	case "animation":
		scene := p.texture(texScene, c)
		ox, oy := p.path(t, animationSpeed, scene, 0)
		p.copyFrom(px, scene, px.x0+ox, px.y0+oy)
		p.sprites(px, t, c)
		p.grain(px, c, img.Version)
	case "video":
		scene := p.texture(texVideo, c)
		ox, oy := p.path(t, videoSpeed, scene, 1)
		p.copyFrom(px, scene, ox, oy) // the picture moves with its window
		p.grain(px, c, img.Version)
	case "scrolling":
		doc := p.texture(texDocument, c)
		off := even(int(t * scrollSpeed * float64(p.h)))
		p.copyFrom(px, doc, px.x0, px.y0+off)
	case "typing":
		page := p.texture(texPage, c)
		p.copyFrom(px, page, px.x0+int(img.Version)*frames.GlyphW, px.y0)
	case "photo":
		p.copyFrom(px, p.texture(texPhoto, c), px.x0, px.y0)
	case SourceRecording, screen.SourceRecordingMotion, screen.SourceRecordingScroll:
		if err := p.recordedRegion(px, img.At, r.Phase); err != nil && p.err == nil {
			p.err = err
		}
	default:
		// A scripted change (or a source this painter does not know):
		// content of its detail, moved on at every version so that each
		// one is a change.
		if frames.KindOf(c) == frames.KindPhoto {
			p.copyFrom(px, p.texture(texVideo, c), px.x0+int(img.Version)*16, px.y0)
		} else {
			p.copyFrom(px, p.texture(texPage, c), px.x0+int(img.Version)*frames.GlyphW, px.y0)
		}
	}
}

func even(v int) int { return v &^ 1 }

// path is where a moving scene's window stands at t seconds: a Lissajous
// figure over the texture (which is twice the screen each way), travelling
// at about speed screen heights a second; which picks one of two figures.
func (p *Painter) path(t, speed float64, tex *yuv.I420, which int) (int, int) {
	ax, ay := float64(tex.W-p.w)/2, float64(tex.H-p.h)/2
	// Angular rates whose amplitudes give the wanted speed on average.
	wx := speed * float64(p.h) / max(ax, 1) / 1.3
	wy := wx * 0.77
	phase := float64(which) * 1.9
	x := ax + ax*math.Sin(wx*t+phase)
	y := ay + ay*math.Sin(wy*t+phase*0.5)
	return even(int(x)), even(int(y))
}

// sprites slides windows of text over an animation: each bounces between
// the screen's edges at its own seeded velocity, and is drawn only where it
// lies inside the region px.
func (p *Painter) sprites(px rect, t, c float64) {
	page := p.texture(texPage, min(c, frames.PhotoDetail-0.1))
	rng := seeded.New(p.seed, "paint", "sprites")
	sw, sh := even(p.w/6), even(p.h/6)
	for i := range sprites {
		x0 := rng.Float64() * float64(p.w-sw)
		y0 := rng.Float64() * float64(p.h-sh)
		vx := (0.5 + rng.Float64()) * float64(p.h) * animationSpeed * 1.5
		vy := (0.5 + rng.Float64()) * float64(p.h) * animationSpeed
		x := even(int(bounce(x0+vx*t, float64(p.w-sw))))
		y := even(int(bounce(y0+vy*t, float64(p.h-sh))))
		s := rect{max(x, px.x0), max(y, px.y0), min(x+sw, px.x1), min(y+sh, px.y1)}
		if s.w() > 0 && s.h() > 0 {
			// Each window shows its own part of the page.
			p.copyFrom(s, page, s.x0-x+i*p.w/sprites, s.y0-y+i*p.h/sprites)
		}
	}
}

// bounce folds v into [0, span], as a ball bouncing between two walls.
func bounce(v, span float64) float64 {
	if span <= 0 {
		return 0
	}
	v = math.Mod(v, 2*span)
	if v < 0 {
		v += 2 * span
	}
	if v > span {
		v = 2*span - v
	}
	return v
}

// copyFrom copies into px of the picture the texture's pixels from (sx, sy)
// on, wrapping around the texture's edges. sx and sy are made even so that
// the chroma planes copy whole samples.
func (p *Painter) copyFrom(px rect, tex *yuv.I420, sx, sy int) {
	sx, sy = even(mod(sx, tex.W)), even(mod(sy, tex.H))
	copyPlane(p.cur.Y, p.w, tex.Y, tex.W, tex.H, px.x0, px.y0, px.w(), px.h(), sx, sy)
	cw, tw, th := p.w/2, tex.W/2, tex.H/2
	x, y, w, h := px.x0/2, px.y0/2, px.w()/2, px.h()/2
	copyPlane(p.cur.U, cw, tex.U, tw, th, x, y, w, h, sx/2, sy/2)
	copyPlane(p.cur.V, cw, tex.V, tw, th, x, y, w, h, sx/2, sy/2)
}

func mod(a, n int) int {
	a %= n
	if a < 0 {
		a += n
	}
	return a
}

// copyPlane copies a w x h block to (x, y) of dst (dw wide) from (sx, sy)
// of src (sw x sh), wrapping in src.
func copyPlane(dst []byte, dw int, src []byte, sw, sh, x, y, w, h, sx, sy int) {
	for row := range h {
		d := dst[(y+row)*dw+x : (y+row)*dw+x+w]
		s := src[((sy+row)%sh)*sw : ((sy+row)%sh+1)*sw]
		n := copy(d, s[sx:])
		for n < w { // wrap round the texture's right edge
			n += copy(d[n:], s)
		}
	}
}

// grain adds fresh noise to the luma of px, different at every version:
// the sensor noise of a video, the dithering and particles of a rendered
// scene, which no motion search can predict. Its amplitude grows with the
// detail above frames.PhotoDetail: none below it, +-3 levels at 0.8 (the
// animation's default), +-5 at 0.9 (a video's), +-8 at 1.
func (p *Painter) grain(px rect, c float64, version uint64) {
	amp := int(math.Round(8 * (c - frames.PhotoDetail) / (1 - frames.PhotoDetail)))
	if amp <= 0 {
		return
	}
	// A noise tile shifted by a seeded offset per version: as good as
	// fresh noise to an encoder, at the cost of an add a sample.
	tile := p.noiseTile(amp)
	rng := seeded.New(p.seed, "paint", "grain", strconv.FormatUint(version, 10))
	ox, oy := rng.IntN(noiseSide), rng.IntN(noiseSide)
	for y := px.y0; y < px.y1; y++ {
		row := p.cur.Y[y*p.w+px.x0 : y*p.w+px.x1]
		n := tile[((y+oy)&(noiseSide-1))*noiseSide:][:noiseSide]
		start := (px.x0 + ox) & (noiseSide - 1)
		for len(row) > 0 { // in runs up to the tile's right edge
			seg := n[start:]
			k := min(len(row), len(seg))
			seg = seg[:k]
			for i, d := range seg {
				row[i] = byte(min(max(int(row[i])+int(d), 16), 235))
			}
			row, start = row[k:], 0
		}
	}
}

// noiseSide is the side of the noise tile, a power of two.
const noiseSide = 512

// noiseTile is the session's tile of noise uniform in [-amp, amp].
func (p *Painter) noiseTile(amp int) []int8 {
	if t, ok := p.noise[amp]; ok {
		return t
	}
	rng := seeded.New(p.seed, "paint", "noise", strconv.Itoa(amp))
	t := make([]int8, noiseSide*noiseSide)
	for i := range t {
		t[i] = int8(rng.IntN(2*amp+1) - amp)
	}
	if p.noise == nil {
		p.noise = map[int][]int8{}
	}
	p.noise[amp] = t
	return t
}
