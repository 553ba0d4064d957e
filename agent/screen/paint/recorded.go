package paint

import (
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// SourceRecording is the kind of the screen source that replays a
// recorded desktop: its regions are painted with the recording's own
// pixels, not with a texture.
const SourceRecording = "recording"

// Recorded is what a screen whose phases replay recordings tells the
// painter (the screen model implements it): which frame of which
// recording phase phase shows at at (from the screen's start).
type Recorded interface {
	RecordedFrame(phase int, at time.Duration) (rec *recording.Recording, frame int, ok bool)
}

var _ Recorded = (*screen.Model)(nil)

// recordedPictures decodes one recording's frames in order and keeps the
// last as a picture of the painter's size.
type recordedPictures struct {
	rec   *recording.Recording
	play  *recording.Player
	next  int          // the frame the player decodes next
	cur   *codec.Frame // frame next-1
	pic   *yuv.I420    // frame picAt, converted and scaled
	picAt int
	rgb   []uint32
}

// recordedPicture is frame i of rec as a picture of the painter's size:
// scaled to it by the nearest sample when the sizes differ, converted as
// the painter's textures are (yuv's FromRGB). Frames come in order of
// versions; going back decodes from the recording's first frame again.
func (p *Painter) recordedPicture(rec *recording.Recording, i int) (*yuv.I420, error) {
	if p.recorded == nil {
		p.recorded = map[*recording.Recording]*recordedPictures{}
	}
	rp := p.recorded[rec]
	if rp == nil {
		rp = &recordedPictures{rec: rec, picAt: -1, rgb: make([]uint32, p.w*p.h), pic: yuv.New(p.w, p.h)}
		p.recorded[rec] = rp
	}
	if rp.picAt == i {
		return rp.pic, nil
	}
	if i < rp.next-1 || rp.play == nil {
		if rp.play != nil {
			rp.play.Close()
		}
		play, err := rec.Play()
		if err != nil {
			return nil, err
		}
		rp.play, rp.next, rp.cur = play, 0, nil
	}
	for rp.next <= i {
		k, f, err := rp.play.Next()
		if err != nil {
			return nil, fmt.Errorf("paint: %w", err)
		}
		rp.cur, rp.next = f, k+1
	}
	scale(rp.rgb, p.w, p.h, rp.cur)
	rp.pic.FromRGB(rp.rgb, p.w, p.h)
	rp.picAt = i
	return rp.pic, nil
}

// scale fills dst (w x h) from f by the nearest sample.
func scale(dst []uint32, w, h int, f *codec.Frame) {
	for y := range h {
		sy := y * f.H / h
		row := f.Pix[sy*f.W : (sy+1)*f.W]
		for x := range w {
			dst[y*w+x] = row[x*f.W/w]
		}
	}
}

// recordedRegion paints region px of the version that appeared at at from
// the recording that phase replays.
func (p *Painter) recordedRegion(px rect, at time.Duration, phase int) error {
	src, ok := p.src.(Recorded)
	if !ok {
		return fmt.Errorf("paint: a recorded region, and the screen (%T) cannot say which recording it shows", p.src)
	}
	rec, i, ok := src.RecordedFrame(phase, at)
	if !ok {
		return fmt.Errorf("paint: phase %d shows no recorded frame at %v", phase, at)
	}
	pic, err := p.recordedPicture(rec, i)
	if err != nil {
		return err
	}
	p.copyFrom(px, pic, px.x0, px.y0)
	return nil
}
