package paint

import (
	"math"
	"strconv"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// The textures a session's regions copy from, each painted once per detail
// the timeline asks for.
const (
	texDesktop  = "desktop"  // windows of text over a page: the screen as the session finds it
	texPage     = "page"     // a page of text: what typing re-renders, the windows over an animation
	texDocument = "document" // four screens of text, one under the other: what scrolls
	texScene    = "scene"    // a patchwork of grainy gradients, twice the screen each way: an animation's world
	texVideo    = "video"    // the same, of another seed: a video's
	texPhoto    = "photo"    // one screen of the same: a photo
)

// texKey names a texture: its role and its detail in hundredths.
type texKey struct {
	role   string
	detail int
}

// texture returns the texture of a role at a detail, painting it the first
// time. Its pixels draw from a source seeded by the session's seed, the
// role and the detail, so they do not depend on the order textures are
// first asked for.
func (p *Painter) texture(role string, detail float64) *yuv.I420 {
	d := int(math.Round(min(max(detail, 0), 1) * 100))
	k := texKey{role, d}
	if t, ok := p.tex[k]; ok {
		return t
	}
	c := float64(d) / 100
	w, h := p.w, p.h
	switch role {
	case texScene, texVideo:
		w, h = 2*w, 2*h
	case texDocument:
		h = 4 * h
	}
	if p.rgb == nil || len(p.rgb.Pix) < w*h {
		p.rgb = codec.NewFrame(w, h)
	}
	f := &codec.Frame{W: w, H: h, Pix: p.rgb.Pix[:w*h]}
	fp := frames.NewPainter(seeded.New(p.seed, "paint", role, strconv.Itoa(d)))
	layout := seeded.New(p.seed, "paint", role, strconv.Itoa(d), "layout")
	whole := codec.Rect{W: w, H: h}
	text := min(c, frames.PhotoDetail-0.01) // a page's detail is text's, however detailed
	photo := max(c, frames.PhotoDetail)     // a picture's at least a photo's
	switch role {
	case texDesktop:
		fp.Text(f, whole, text)
		for range 3 { // windows
			fp.Text(f, fp.Area(f, 0.1+0.2*layout.Float64()), text)
		}
	case texPage, texDocument:
		fp.Text(f, whole, text)
	case texScene, texVideo, texPhoto:
		// Patches of their own gradient and grain give the picture edges
		// to follow, as objects in a scene or a photo have.
		fp.Photo(f, whole, photo)
		for range 12 {
			fp.Photo(f, fp.Area(f, 0.01+0.06*layout.Float64()), photo)
		}
	}
	t := yuv.New(w, h)
	t.FromRGB(f.Pix, w, h)
	p.tex[k] = t
	return t
}
