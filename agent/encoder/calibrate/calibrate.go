// Package calibrate sets the H.264 model (agent/encoder, H264) beside the
// real OpenH264 encoder (agent/encoder/openh264) on the same screen
// timelines, and fits the model's parameters to what the real encoder does.
//
// Both encoders see the same versions of the same screen model, at 720p
// unless asked for another size, frame by frame at 60 Hz: the real one the
// painter's pictures (agent/screen/paint), the model the changed area and
// detail of the same versions. Three experiments:
//
//   - Sizes: every content kind (Kinds) at every target bitrate (Bitrates),
//     the keyframe's size, the median size of the other frames and the
//     share of frames the rate control skipped.
//   - Refinement (N15): a photo appears on a still screen and the encoder
//     then encodes the same picture again every 100 ms, 15 times, as the
//     agent's refinement passes do.
//   - Step: the animation at one bitrate, then at another from a given
//     instant: how fast each rate control follows.
//
// Fit searches a grid of the model's size parameters for the values that
// bring its sizes and skips closest to the real encoder's; Measure runs it
// all and WriteReport writes report.md and the plots.
//
// The model reads the clock (a frame's budget is the bitrate times the time
// since the previous frame), so the model's runs (Model, and Fit, which runs
// it many times) must be called inside a testing/synctest bubble: the
// calibration runs under go test. The real encoder's runs take their
// timestamps from the tick and need no bubble.
package calibrate

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/paint"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// Rate is the frame rate both encoders are driven at: the agent's capture.
const Rate = 60.0

// Kinds are the content kinds compared, each a screen whose whole timeline
// is that source with its defaults, from instant 0.
var Kinds = []string{"animation", "typing", "scrolling", "video", "photo", "still"}

// Bitrates are the targets of the size experiment, in bits per second.
var Bitrates = []int{250_000, 500_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000}

// source returns the screen source of a kind.
func source(kind string) (screen.Source, error) {
	switch kind {
	case "animation":
		return screen.Animation{}, nil
	case "typing":
		return screen.Typing{}, nil
	case "scrolling":
		return screen.Scrolling{}, nil
	case "video":
		return screen.Video{}, nil
	case "photo":
		return screen.Photo{}, nil
	case "still":
		return screen.Still{}, nil
	}
	return nil, fmt.Errorf("calibrate: unknown content kind %q (have %v)", kind, Kinds)
}

// Case is one run of an experiment: a screen and what the encoder is asked.
type Case struct {
	// Kind is the content from instant 0 (Kinds).
	Kind string
	// At delays the content: the screen is the still desktop until then.
	At time.Duration
	// Bitrate is the starting target in bits per second.
	Bitrate int
	// StepAt, when positive, changes the target to StepTo at that instant.
	StepAt time.Duration
	StepTo int
	// Length is how long the case runs.
	Length time.Duration
	// Width and Height are the pictures' size; zero means 1280x720.
	Width, Height int
	// Passes, when positive, makes the encoder encode the last picture
	// again every PassEvery once the screen stops changing, up to Passes
	// times (N15's refinement).
	Passes    int
	PassEvery time.Duration
	// NoSkip turns the real encoder's frame skipping off.
	NoSkip bool
	// OfferEvery, above 1, offers the encoder a picture at every
	// OfferEvery-th tick only, as a pipeline whose sender is full at the
	// others does: the screen still changes at every tick.
	OfferEvery int
	// KeyframeEvery, when positive, asks the encoder for a keyframe every
	// KeyframeEvery from KeyframeEvery on, as a viewer asks for a repair:
	// what a repair keyframe and the frames after it cost.
	KeyframeEvery time.Duration
	// Recording, when set, is the screen in place of Kind's painted source:
	// the recorded desktop replayed once from instant 0 (screen.Recording),
	// the real encoder painted its recorded pixels at the recording's size.
	// Kind is then screen.SourceRecording, the kind the model sizes its
	// changes as, and the one whose content cost a fit fits.
	Recording *recording.Recording
}

// Seed is the seed of every screen and painter: the calibration is one
// deterministic sample of each kind.
const Seed = 1

// kinds are the content kinds the model sees in the case: its Kind, and
// for a recording the kinds the screen model gives its changes
// (screen.RecordedKind: motion, a page scrolled), whose costs a fit then
// fits on the cases that show them.
func (c Case) kinds() []string {
	kinds := []string{c.Kind}
	if c.Recording == nil {
		return kinds
	}
	for i := range c.Recording.Frames[1:] {
		f := &c.Recording.Frames[1+i]
		if k := screen.RecordedKind(f, c.Recording.Meta); f.Changed > 0 && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

func (c Case) screen() (*screen.Model, error) {
	if c.Recording != nil {
		if c.Kind != screen.SourceRecording {
			return nil, fmt.Errorf("calibrate: a recorded case's kind is %q, not %q", screen.SourceRecording, c.Kind)
		}
		return screen.New(Seed, screen.Config{Timeline: []screen.Phase{{Source: screen.Recording{Recording: c.Recording, Once: true}}}})
	}
	src, err := source(c.Kind)
	if err != nil {
		return nil, err
	}
	return screen.New(Seed, screen.Config{Timeline: []screen.Phase{{At: c.At, Source: src}}})
}

// Frame is what an encoder made at one tick.
type Frame struct {
	// At is the tick, from the case's start.
	At time.Duration
	// Bytes is the frame's size; 0 for a skipped frame.
	Bytes int
	// Keyframe, Skipped and Pass say what it is: an IDR, a picture the rate
	// control dropped, or the n-th refinement pass (0 for new content).
	Keyframe, Skipped bool
	Pass              int
	// Bitrate is the target at the tick.
	Bitrate int
}

// driver is one encoder under a case: encode the newest image, or encode
// the last one again; skipped tells the rate control dropped it.
type driver interface {
	encode(img screen.Image, d screen.Delta, at time.Duration) (bytes int, key, skipped bool, err error)
	refine(at time.Duration) (bytes int, key, skipped bool, err error)
	setBitrate(bps int) error
	askKeyframe() error
}

// run drives an encoder through a case frame by frame. wait is called with
// each tick before the encoder sees it (the model's bubble sleeps there).
func run(c Case, scr screen.Screen, d driver, wait func(time.Duration)) ([]Frame, error) {
	var out []Frame
	var prev uint64
	bitrate := c.Bitrate
	passes := 0
	var lastNew time.Duration
	nextKey := c.KeyframeEvery
	ticks := int64(c.Length.Seconds() * Rate)
	for k := range ticks {
		if c.OfferEvery > 1 && k%int64(c.OfferEvery) != 0 {
			continue
		}
		at := screen.Tick(k, Rate)
		wait(at)
		if c.KeyframeEvery > 0 && at >= nextKey {
			if err := d.askKeyframe(); err != nil {
				return nil, err
			}
			nextKey += c.KeyframeEvery
		}
		if c.StepAt > 0 && at >= c.StepAt && bitrate != c.StepTo {
			if err := d.setBitrate(c.StepTo); err != nil {
				return nil, err
			}
			bitrate = c.StepTo
		}
		img, delta := scr.Since(prev, at)
		if img.Version != prev {
			n, key, skipped, err := d.encode(img, delta, at)
			if err != nil {
				return nil, err
			}
			out = append(out, Frame{At: at, Bytes: n, Keyframe: key, Skipped: skipped, Bitrate: bitrate})
			if !skipped {
				prev, lastNew, passes = img.Version, at, 0
			}
			continue
		}
		if c.Passes > 0 && passes < c.Passes && prev != 0 && at >= lastNew+time.Duration(passes+1)*c.PassEvery {
			n, key, skipped, err := d.refine(at)
			if err != nil {
				return nil, err
			}
			passes++
			out = append(out, Frame{At: at, Bytes: n, Keyframe: key, Skipped: skipped, Pass: passes, Bitrate: bitrate})
		}
	}
	return out, nil
}

// Real runs OpenH264 through a case: 720p (or the case's size), the target bitrate, frame
// skipping on (off with NoSkip), as the openh264-real preset; the painter's pictures of the
// case's screen, timestamped with their ticks.
func Real(c Case) ([]Frame, error) {
	scr, err := c.screen()
	if err != nil {
		return nil, err
	}
	w, h := c.Width, c.Height
	if c.Recording != nil && w == 0 {
		// The recorded pixels at their own size (even sides, as the
		// encoder wants).
		w, h = c.Recording.Meta.Width&^1, c.Recording.Meta.Height&^1
	}
	p, err := paint.New(Seed, scr, paint.Config{Width: w, Height: h})
	if err != nil {
		return nil, err
	}
	w, h = p.Size()
	enc, err := openh264.NewEncoder(openh264.Params{Width: w, Height: h, Bitrate: c.Bitrate, FrameRate: openh264.FrameRate, FrameSkip: !c.NoSkip})
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	r := &realDriver{p: p, enc: enc}
	// The painter paints the versions run has seen: the same screen.
	return run(c, scr, r, func(time.Duration) {})
}

type realDriver struct {
	p    *paint.Painter
	enc  *openh264.Encoder
	last uint64
	buf  []byte
}

func (r *realDriver) encode(img screen.Image, _ screen.Delta, at time.Duration) (int, bool, bool, error) {
	pic, err := r.p.Paint(img.Version)
	if err != nil {
		return 0, false, false, err
	}
	r.last = img.Version
	return r.frame(pic, at)
}

// frame encodes pic at at: its size, whether it is an IDR, whether the
// rate control skipped it.
func (r *realDriver) frame(pic *yuv.I420, at time.Duration) (int, bool, bool, error) {
	var typ openh264.FrameType
	var err error
	r.buf, typ, err = r.enc.Encode(r.buf[:0], pic, at)
	if err != nil {
		return 0, false, false, err
	}
	if typ == openh264.Skipped {
		return 0, false, true, nil
	}
	return len(r.buf), typ.Keyframe(), false, nil
}

func (r *realDriver) refine(at time.Duration) (int, bool, bool, error) {
	pic, err := r.p.Paint(r.last)
	if err != nil {
		return 0, false, false, err
	}
	return r.frame(pic, at)
}

func (r *realDriver) setBitrate(bps int) error { return r.enc.SetBitrate(bps) }

func (r *realDriver) askKeyframe() error { return r.enc.ForceKeyframe() }

// Model runs the H.264 model of cfg through a case, with the model's own
// frame skipping (SkipFrame). It must be called inside a synctest bubble:
// it sleeps to every tick.
func Model(c Case, cfg encoder.Config) ([]Frame, error) {
	cfg.Bitrate = c.Bitrate
	cfg.Name = "calibrate-model"
	m, err := encoder.New(Seed, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.Open(); err != nil {
		return nil, err
	}
	scr, err := c.screen()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	md := &modelDriver{m: m, start: start}
	return run(c, scr, md, func(at time.Duration) {
		if d := time.Until(start.Add(at)); d > 0 {
			time.Sleep(d)
		}
	})
}

type modelDriver struct {
	m     *encoder.H264
	start time.Time
	have  bool
}

func (d *modelDriver) encode(img screen.Image, delta screen.Delta, _ time.Duration) (int, bool, bool, error) {
	if d.have && d.m.SkipFrame(time.Now()) {
		return 0, false, true, nil
	}
	f, err := d.m.Encode(encoder.Input{Image: img, Delta: delta})
	if err != nil {
		return 0, false, false, err
	}
	d.have = true
	return f.Bytes, f.Keyframe, false, nil
}

func (d *modelDriver) refine(time.Duration) (int, bool, bool, error) {
	f, err := d.m.Refine()
	if errors.Is(err, encoder.ErrSkipped) {
		return 0, false, true, nil
	}
	return f.Bytes, f.Keyframe, false, err
}

func (d *modelDriver) setBitrate(bps int) error { return d.m.SetBitrate(bps) }

func (d *modelDriver) askKeyframe() error {
	d.m.RequestKeyframe()
	return nil
}
