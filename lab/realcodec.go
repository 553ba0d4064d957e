package lab

import (
	"fmt"
	"sync"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/internal/yuv"
	"github.com/nuvirahub/latencylab/viewer"
)

// A session whose encoder takes real pixels (encoder.PixelEncoder, the
// OpenH264 presets) sends real bitstreams, and the viewer decodes them
// with the encoder's real decoder. The lab judges what the viewer shows:
// the agent hands over the picture each frame encodes (agent.Config's
// OnPicture), and after the viewer decodes a frame the picture then on
// its screen is compared with that one (PSNR, the frame's psnr_db).

// capturedPictures holds the pictures the agent encoded until the viewer's
// decoder has judged them. A frame the viewer never decodes (dropped as
// late, lost) is let go when a later one is judged.
type capturedPictures struct {
	mu   sync.Mutex
	pics map[uint64]*yuv.I420
}

func (c *capturedPictures) put(seq uint64, pic *yuv.I420) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pics == nil {
		c.pics = map[uint64]*yuv.I420{}
	}
	c.pics[seq] = pic
}

// take returns seq's picture, and lets it and every older one go.
func (c *capturedPictures) take(seq uint64) *yuv.I420 {
	c.mu.Lock()
	defer c.mu.Unlock()
	pic := c.pics[seq]
	for s := range c.pics {
		if s <= seq {
			delete(c.pics, s)
		}
	}
	return pic
}

// judge is the viewer's real decoder (viewer.FrameDecoder): it decodes
// each frame into the picture the viewer shows and compares that with
// the picture captured for the frame.
type judge struct {
	dec   encoder.PictureDecoder
	pics  *capturedPictures
	shown *yuv.I420 // the picture on the viewer's screen
	have  bool      // the decoder has yielded a picture
}

// newJudge starts the real decoder of a session whose encoder is pe.
func newJudge(pe encoder.PixelEncoder, pics *capturedPictures) (*judge, error) {
	dec, err := pe.NewDecoder()
	if err != nil {
		return nil, fmt.Errorf("lab: %s's decoder: %w", pe.Name(), err)
	}
	w, h := pe.PictureSize()
	return &judge{dec: dec, pics: pics, shown: yuv.New(w, h)}, nil
}

// Decode implements viewer.FrameDecoder. A frame that yields no picture
// leaves the previous one on the screen, and that is what is judged.
func (j *judge) Decode(seq uint64, payload []byte) (viewer.Decoded, error) {
	got, needKey, err := j.dec.Decode(payload, j.shown)
	src := j.pics.take(seq)
	if err != nil {
		return viewer.Decoded{NeedKeyframe: true}, err
	}
	j.have = j.have || got
	d := viewer.Decoded{NeedKeyframe: needKey}
	if j.have && src != nil && src.W == j.shown.W && src.H == j.shown.H {
		d.PSNR, d.SSIM = yuv.PSNR(src, j.shown), yuv.SSIM(src, j.shown)
	}
	return d, nil
}

func (j *judge) close() { j.dec.Close() }
