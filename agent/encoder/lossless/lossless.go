// Package lossless owns the agent's "support mode" encoders: the lab's real
// lossless screen codecs (the tile XOR+zstd codec, VNC Hextile and ZRLE of
// agent/codec) behind the encoder.Encoder interface, registered as the
// presets "lossless-tile", "lossless-hextile" and "lossless-zrle".
//
// Where the H.264 model turns the screen model's description of a change
// into a frame size, these encoders turn it into pixels and run the real
// codec on them: the bytes a frame puts on the link are the codec's own.
// The screen model says how much of the screen changed and how detailed
// the new content is, not what it looks like, so the encoder keeps a real
// frame of the screen's size and paints each change on it with content of
// that detail (text on a flat background below PhotoDetail, a grainy
// gradient above it) at a seeded position, from a source seeded by the
// run's seed and the encoder's name. The same calls paint the same pixels.
//
// Time: inside a synctest bubble the processor time of the real encode is
// invisible (virtual clocks stand still while code runs), and outside it
// would depend on the machine. The encode's duration is therefore a model,
// as every other stage's: the dirty-tile detector's scan plus the dirty
// tiles' bytes at the codec's measured throughput (the figures and how
// they were measured are in model.go). The encoder takes that time as the
// H.264 model does, by sleeping it while holding the session.
//
// What does not apply: the codecs are lossless, so every frame matches the
// screen (quality 1) and a refinement pass has nothing to add; they have no
// rate control, so the target bitrate is accepted and ignored. That is the
// point of the mode: on a 5 Mbit/s link the bytes a change costs are
// whatever the codec makes of it, and they show up as latency.
package lossless

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/agent/codec/hextile"
	"github.com/nuvirahub/latencylab/agent/codec/tile"
	"github.com/nuvirahub/latencylab/agent/codec/zrle"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/seeded"
)

// The codecs, as Config.Codec names them.
const (
	// CodecTile is the tile XOR+zstd codec (EVRTCK-like, finding E1),
	// without carry-forward, as the write-up measured it.
	CodecTile = "tile"
	// CodecHextile is VNC Hextile (E2).
	CodecHextile = "hextile"
	// CodecZRLE is VNC ZRLE at zlib's default level (E12).
	CodecZRLE = "zrle"
)

// PhotoDetail is the detail from which a change is painted as a photo
// rather than as text (frames.PhotoDetail).
const PhotoDetail = frames.PhotoDetail

// The content kinds the time model charges separately.
const (
	kindText  = frames.KindText
	kindPhoto = frames.KindPhoto
	numKinds  = frames.NumKinds
)

// Codecs lists the codecs, in the order the presets are documented.
func Codecs() []string { return []string{CodecTile, CodecHextile, CodecZRLE} }

// Defaults of Config.
const (
	// DefaultWidth and DefaultHeight are the screen the write-ups test on
	// (E3: 1920x1080) and the one the screen model's grid stands for. A
	// smaller default was measured and not needed: a 10 s session on the
	// bad link, typing or a moving window, runs in 0.1-0.5 s of wall time
	// at 1080p (lab/lossless_test.go, the encoder-lossless-support
	// scenario), since the real encode runs only for the frames the agent
	// sends, and a lossless frame's bytes grow with its pixels, so a
	// smaller screen would shrink the very bytes the mode is about. What is
	// slow is a full-screen animation: 20-250 ms of real encoding a frame,
	// paced by the link (the send cap) rather than by the 60 Hz refresh.
	DefaultWidth  = 1920
	DefaultHeight = 1080
)

// Config describes a lossless encoder. The zero value of a field means its
// documented default, except Codec, which is required.
type Config struct {
	// Codec is CodecTile, CodecHextile or CodecZRLE.
	Codec string
	// Name names the encoder and its random source (with the run's seed);
	// empty means the codec's preset name, "lossless-" + Codec.
	Name string
	// Width and Height are the screen's size in pixels; zero means
	// DefaultWidth and DefaultHeight.
	Width, Height int
	// Bitrate is the target the encoder reports, in bits per second; zero
	// means encoder.DefaultBitrate. Nothing follows it (no rate control).
	Bitrate int
}

// Encoder is a lossless encoder session: a real codec over a painted frame.
// It implements encoder.Encoder.
type Encoder struct {
	name     string
	codec    string
	w, h     int
	seed     uint64
	rates    rates
	newCodec func() (codec.Encoder, error)

	bitrate atomic.Int64
	keyReq  atomic.Bool

	// gate serialises the session's calls, a channel for the same reason
	// as the H.264 model's: a caller waiting behind an encode is durably
	// blocked in a synctest bubble. Everything below belongs to its holder.
	gate  chan struct{}
	open  bool
	enc   codec.Encoder
	paint *frames.Painter
	cur   *codec.Frame // the screen now
	ref   *codec.Frame // what the viewer has: the last frame encoded
	kinds []uint8      // per detector tile, the kind of content painted there last
	cols  int          // detector tiles per row
	rects []codec.Rect
	buf   []byte
	have  bool         // a frame was encoded in this session
	last  screen.Image // the image the viewer has
	pass  int
}

var _ encoder.Encoder = (*Encoder)(nil)

// New makes a lossless encoder of cfg whose painting draws from a source
// seeded by seed and the encoder's name. The encoder starts closed.
func New(seed uint64, cfg Config) (*Encoder, error) {
	if cfg.Name == "" {
		cfg.Name = PresetPrefix + cfg.Codec
	}
	if cfg.Width == 0 {
		cfg.Width = DefaultWidth
	}
	if cfg.Height == 0 {
		cfg.Height = DefaultHeight
	}
	if cfg.Bitrate == 0 {
		cfg.Bitrate = encoder.DefaultBitrate
	}
	var errs []error
	newCodec, ok := codecs[cfg.Codec]
	if !ok {
		errs = append(errs, fmt.Errorf("unknown codec %q (have %v)", cfg.Codec, Codecs()))
	}
	// RFB's rectangles have 16-bit coordinates, and Hextile and ZRLE refuse
	// more; 4K is the largest screen the write-ups test.
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > 0xffff || cfg.Height > 0xffff {
		errs = append(errs, fmt.Errorf("screen %dx%d outside 1x1 to 65535x65535", cfg.Width, cfg.Height))
	}
	if cfg.Bitrate < 0 {
		errs = append(errs, fmt.Errorf("negative bitrate %d", cfg.Bitrate))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", encoder.ErrConfig, cfg.Name, err)
	}
	e := &Encoder{
		name:     cfg.Name,
		codec:    cfg.Codec,
		w:        cfg.Width,
		h:        cfg.Height,
		seed:     seed,
		rates:    codecRates[cfg.Codec],
		newCodec: newCodec,
		gate:     make(chan struct{}, 1),
	}
	e.bitrate.Store(int64(cfg.Bitrate))
	return e, nil
}

// codecs makes a fresh encoder of each codec.
var codecs = map[string]func() (codec.Encoder, error){
	CodecTile: func() (codec.Encoder, error) { return tile.NewEncoder(tile.Options{}) },
	CodecHextile: func() (codec.Encoder, error) {
		return hextile.NewEncoder(), nil
	},
	CodecZRLE: func() (codec.Encoder, error) { return zrle.NewEncoder(), nil },
}

func (e *Encoder) lock()   { e.gate <- struct{}{} }
func (e *Encoder) unlock() { <-e.gate }

// Name implements encoder.Encoder.
func (e *Encoder) Name() string { return e.name }

// Codec names the codec the encoder runs (CodecTile, ...).
func (e *Encoder) Codec() string { return e.codec }

// Hardware implements encoder.Encoder: the codecs run on the processor and
// never hold the graphics device.
func (e *Encoder) Hardware() bool { return false }

// Bitrate implements encoder.Encoder: the target last set, which nothing
// follows.
func (e *Encoder) Bitrate() int { return int(e.bitrate.Load()) }

// RequestKeyframe implements encoder.Encoder.
func (e *Encoder) RequestKeyframe() { e.keyReq.Store(true) }

// Open implements encoder.Encoder. It allocates the two frames and starts
// the painting source again, so a session's pixels depend only on the seed,
// the name and the calls since Open. Opening an open session does nothing.
func (e *Encoder) Open() error {
	e.lock()
	defer e.unlock()
	if e.open {
		return nil
	}
	enc, err := e.newCodec()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", encoder.ErrOpenFailed, e.name, err)
	}
	e.enc = enc
	e.paint = frames.NewPainter(seeded.New(e.seed, e.name, "paint"))
	e.cur, e.ref = codec.NewFrame(e.w, e.h), codec.NewFrame(e.w, e.h)
	e.cols = (e.w + codec.TileSize - 1) / codec.TileSize
	e.kinds = make([]uint8, e.cols*((e.h+codec.TileSize-1)/codec.TileSize))
	e.open, e.have, e.last, e.pass = true, false, screen.Image{}, 0
	return nil
}

// Close implements encoder.Encoder. It lets the frames go.
func (e *Encoder) Close() error {
	e.lock()
	defer e.unlock()
	e.open = false
	e.enc, e.cur, e.ref, e.kinds, e.buf = nil, nil, nil, nil, nil
	return nil
}

// SetBitrate implements encoder.Encoder. The target is recorded, for
// Bitrate and the frames' reports, and changes nothing else: a lossless
// codec has no quantiser to turn, so there is nothing to reconfigure, no
// time to take and no session to restart (N16 does not apply).
func (e *Encoder) SetBitrate(bps int) error {
	if bps <= 0 {
		return fmt.Errorf("%w: bitrate %d not positive", encoder.ErrConfig, bps)
	}
	e.lock()
	defer e.unlock()
	if !e.open {
		return encoder.ErrNotOpen
	}
	e.bitrate.Store(int64(bps))
	return nil
}

// Encode implements encoder.Encoder. It paints what in.Delta says changed
// onto the frame, runs the dirty-tile detector and the codec, and returns
// the codec's byte count. The first frame of a session, a requested one
// and one whose Delta does not start from the image the viewer has are
// keyframes: the whole frame against nothing.
func (e *Encoder) Encode(in encoder.Input) (encoder.Frame, error) {
	f := encoder.Frame{Start: time.Now(), Version: in.Image.Version}
	e.lock()
	defer e.unlock()
	now := time.Now()
	if !e.open {
		return encoder.Frame{}, encoder.ErrNotOpen
	}
	key := e.keyReq.Swap(false) || !e.have || in.Delta.From != e.last.Version
	switch {
	case !e.have:
		// The screen as the session finds it: the whole image at its
		// mean detail (the layout of what came before is not known).
		e.paintArea(1, in.Image.Whole)
	case in.Delta.Changed > 0:
		e.paintArea(in.Delta.Changed, in.Delta.Complexity)
	}
	f, err := e.encode(f, now, key)
	if err != nil {
		return encoder.Frame{}, err
	}
	e.have, e.last, e.pass = true, in.Image, 0
	return f, nil
}

// Refine implements encoder.Encoder. A lossless frame already matches the
// screen: a pass has nothing to add, so it is empty (no payload) and takes
// no time. Only a keyframe requested since (the viewer lost something) is
// worth sending, and it is: the whole current frame.
func (e *Encoder) Refine() (encoder.Frame, error) {
	f := encoder.Frame{Start: time.Now()}
	e.lock()
	defer e.unlock()
	now := time.Now()
	if !e.open {
		return encoder.Frame{}, encoder.ErrNotOpen
	}
	if !e.have {
		return encoder.Frame{}, encoder.ErrNoImage
	}
	f.Version = e.last.Version
	e.pass++
	if e.keyReq.Swap(false) {
		var err error
		if f, err = e.encode(f, now, true); err != nil {
			return encoder.Frame{}, err
		}
	} else {
		f = e.finish(f, now, 0, 0)
	}
	f.Pass = e.pass
	return f, nil
}

// paintArea paints a fraction a of the screen with content of the given
// detail and marks the tiles it touched with the content's kind.
func (e *Encoder) paintArea(a, detail float64) {
	r := e.paint.Area(e.cur, a)
	k := uint8(e.paint.Paint(e.cur, r, detail))
	for ty := r.Y / codec.TileSize; ty <= (r.Y+r.H-1)/codec.TileSize; ty++ {
		for tx := r.X / codec.TileSize; tx <= (r.X+r.W-1)/codec.TileSize; tx++ {
			e.kinds[ty*e.cols+tx] = k
		}
	}
}

// encode runs the detector and the codec on the current frame, as the
// codec benchmark charges them, brings the viewer's frame up to date and
// takes the modelled time.
func (e *Encoder) encode(f encoder.Frame, start time.Time, key bool) (encoder.Frame, error) {
	prev := e.ref
	if key {
		prev = nil
		if e.codec == CodecZRLE {
			// ZRLE's zlib stream is one per connection, and a viewer that
			// needs a keyframe has lost its place in it: both ends start
			// a new one.
			enc, err := e.newCodec()
			if err != nil {
				return f, fmt.Errorf("%s: %w", e.name, err)
			}
			e.enc = enc
		}
	}
	e.rects = dirty.Detect(prev, e.cur, e.rects[:0])
	out, err := e.enc.Encode(e.buf[:0], prev, e.cur, e.rects)
	if err != nil {
		return f, fmt.Errorf("%s: %w", e.name, err)
	}
	e.buf = out
	took := e.rates.encodeTime(e.w, e.h, key, e.rects, e.kinds, e.cols)
	if key {
		copy(e.ref.Pix, e.cur.Pix)
	} else {
		for _, r := range e.rects {
			for y := r.Y; y < r.Y+r.H; y++ {
				i := y*e.w + r.X
				copy(e.ref.Pix[i:i+r.W], e.cur.Pix[i:i+r.W])
			}
		}
	}
	f.Keyframe = key
	return e.finish(f, start, len(out), took), nil
}

// finish fills in the frame's figures and takes the encode's time, as the
// H.264 model does: the session is held while the time passes, so a
// SetBitrate or a Refine waits behind it. start is when the call got the
// session.
func (e *Encoder) finish(f encoder.Frame, start time.Time, n int, took time.Duration) encoder.Frame {
	f.Encoder = e.name
	f.Bytes = n
	f.Bitrate = int(e.bitrate.Load())
	f.Quality, f.Matched = 1, true
	f.Waited = start.Sub(f.Start)
	f.EncodeTime = took
	time.Sleep(f.EncodeTime)
	f.End = time.Now()
	return f
}
