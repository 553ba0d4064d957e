package openh264

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// The presets this package registers with agent/encoder: OpenH264 itself,
// on the painter's pictures, with its own rate control.
const (
	// PresetReal is 720p with frame skipping: the rate control drops a
	// picture rather than overshoot the bitrate.
	PresetReal = "openh264-real"
	// PresetRealNoSkip is 720p without frame skipping: every picture is
	// encoded, at whatever quality the bitrate leaves.
	PresetRealNoSkip = "openh264-real-noskip"
	// PresetReal1080p is 1080p with frame skipping: the write-ups' screen,
	// three times the encoding work of 720p.
	PresetReal1080p = "openh264-real-1080p"
)

// Presets lists the presets, in the order they are documented.
func Presets() []string { return []string{PresetReal, PresetRealNoSkip, PresetReal1080p} }

// The encode time of a frame, in virtual time: a fixed cost per
// resolution, measured once (BenchmarkEncode720p, BenchmarkEncode1080p:
// the median of three runs of 300 frames of the full-screen animation at
// 4 Mbit/s, one thread, on the lab's 2-core machine; docs/codecs.md). The
// real encode runs while virtual time stands still, so its own duration,
// which depends on the machine and what else runs on it, never reaches a
// session: a session stays a function of its scenario and seed.
const (
	EncodeTime720p  = 3 * time.Millisecond
	EncodeTime1080p = 8500 * time.Microsecond
)

// ReconfigureTime is what a bitrate change of the running session takes in
// virtual time: the real SetOption call, measured once
// (BenchmarkSetBitrate: 0.14 us), rounded up to a microsecond. N16's
// documented 1-4 ms is the product's whole reconfiguration; the library
// call itself is this.
const ReconfigureTime = time.Microsecond

// presetParams are the presets' settings.
var presetParams = map[string]struct {
	w, h int
	skip bool
	took time.Duration
}{
	PresetReal:       {1280, 720, true, EncodeTime720p},
	PresetRealNoSkip: {1280, 720, false, EncodeTime720p},
	PresetReal1080p:  {1920, 1080, true, EncodeTime1080p},
}

// FrameRate is the frame rate the rate control budgets for: the agent's
// 60 Hz capture.
const FrameRate = 60.0

func init() {
	for _, name := range Presets() {
		encoder.Register(name, factory(name))
	}
}

// factory builds a preset's encoder from an encoder.Config. What applies:
// the name, the starting bitrate, the encode and reconfigure times (the
// model's timing) and N16's old restart, which restarts the real session.
// The H.264 model's own rate control does not: a field of it set is
// refused rather than ignored.
func factory(preset string) encoder.Factory {
	return func(seed uint64, cfg encoder.Config) (encoder.Encoder, error) {
		var errs []error
		refuse := func(set bool, what string) {
			if set {
				errs = append(errs, errors.New(what))
			}
		}
		refuse(cfg.Hardware || cfg.Device != nil, "it runs on the processor, not on a graphics device")
		refuse(cfg.Absent || cfg.OpenFailure != "" || cfg.OpenTime != 0, "no absence, open failure or open time: it is there when the library is")
		refuse(cfg.FrameRate != 0 || cfg.MaxSpan != 0 || cfg.KeyframeFactor != 0 || cfg.FullScreenBits != 0 || cfg.OverheadBytes != 0,
			"its frame sizes are OpenH264's rate control's, not the H.264 model's budget")
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", encoder.ErrConfig, cfg.Name, err)
		}
		if err := Available(); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Name, err)
		}
		pp := presetParams[preset]
		took := cfg.EncodeTime.Or(dist.Constant(pp.took))
		reconf := cfg.Reconfigure.Or(dist.Constant(ReconfigureTime))
		if err := errors.Join(took.Validate(), reconf.Validate()); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", encoder.ErrConfig, cfg.Name, err)
		}
		bitrate := cfg.Bitrate
		if bitrate == 0 {
			bitrate = encoder.DefaultBitrate
		}
		if bitrate < 0 {
			return nil, fmt.Errorf("%w: %s: negative bitrate %d", encoder.ErrConfig, cfg.Name, bitrate)
		}
		restart := cfg.Restart
		if restart == 0 {
			restart = encoder.DefaultRestart
		}
		e := &Real{
			name: cfg.Name, w: pp.w, h: pp.h, skip: pp.skip,
			old: cfg.OldRestartOnBitrateChange, restart: restart,
			encodeTime:  took.Sampler(seeded.New(seed, cfg.Name, "encode-time")),
			reconfigure: reconf.Sampler(seeded.New(seed, cfg.Name, "reconfigure")),
			gate:        make(chan struct{}, 1),
		}
		e.bitrate.Store(int64(bitrate))
		return e, nil
	}
}

// Real is OpenH264 behind the encoder.Encoder interface: it encodes the
// pictures the agent paints, with the library's own rate control (the
// target bitrate, frame skipping on or off), keyframes on request, and a
// bitrate change applied to the running session (N16's fix) or, with the
// old switch, a real restart. Its frames carry their bitstream. Time is
// the model's: every call takes a fixed duration (the preset's encode
// time, ReconfigureTime), whatever the real call took.
type Real struct {
	name      string
	w, h      int
	skip      bool
	old       bool
	restart   time.Duration
	bitrate   atomic.Int64
	keyReq    atomic.Bool
	keyframes atomic.Int64 // frames forced to be IDRs, for tests

	// gate serialises the session's calls, as the H.264 model's does.
	gate         chan struct{}
	encodeTime   *dist.Sampler
	reconfigure  *dist.Sampler
	open         bool
	enc          *Encoder // nil while the old restart keeps it down
	epoch        time.Time
	restartUntil time.Time
	have         bool
	last         screen.Image
	lastPic      *yuv.I420
	pass         int
}

var _ encoder.PixelEncoder = (*Real)(nil)

func (e *Real) lock()   { e.gate <- struct{}{} }
func (e *Real) unlock() { <-e.gate }

// Name implements encoder.Encoder.
func (e *Real) Name() string { return e.name }

// Hardware implements encoder.Encoder: OpenH264 runs on the processor.
func (e *Real) Hardware() bool { return false }

// Bitrate implements encoder.Encoder.
func (e *Real) Bitrate() int { return int(e.bitrate.Load()) }

// RequestKeyframe implements encoder.Encoder.
func (e *Real) RequestKeyframe() { e.keyReq.Store(true) }

// PictureSize implements encoder.PixelEncoder.
func (e *Real) PictureSize() (int, int) { return e.w, e.h }

// NewDecoder implements encoder.PixelEncoder: OpenH264's decoder.
func (e *Real) NewDecoder() (encoder.PictureDecoder, error) {
	d, err := NewDecoder()
	if err != nil {
		return nil, err
	}
	return pictureDecoder{d}, nil
}

type pictureDecoder struct{ d *Decoder }

func (p pictureDecoder) Decode(data []byte, dst *yuv.I420) (bool, bool, error) {
	got, st, err := p.d.Decode(data, dst)
	return got, st.NeedsKeyframe(), err
}

func (p pictureDecoder) Close() error { return p.d.Close() }

func (e *Real) start() error {
	enc, err := NewEncoder(Params{Width: e.w, Height: e.h, Bitrate: int(e.bitrate.Load()), FrameRate: FrameRate, FrameSkip: e.skip})
	if err != nil {
		return fmt.Errorf("%w: %s: %w", encoder.ErrOpenFailed, e.name, err)
	}
	e.enc = enc
	return nil
}

// Open implements encoder.Encoder: it starts an OpenH264 session. The
// rate control's clock counts from here.
func (e *Real) Open() error {
	e.lock()
	defer e.unlock()
	if e.open {
		return nil
	}
	if err := e.start(); err != nil {
		return err
	}
	e.open, e.have, e.pass, e.last, e.lastPic = true, false, 0, screen.Image{}, nil
	e.epoch, e.restartUntil = time.Now(), time.Time{}
	return nil
}

// Close implements encoder.Encoder.
func (e *Real) Close() error {
	e.lock()
	defer e.unlock()
	e.open = false
	if e.enc != nil {
		e.enc.Close()
		e.enc = nil
	}
	return nil
}

// SetBitrate implements encoder.Encoder: SetOption on the running session
// (N16's fix), taking ReconfigureTime; with the old switch the session is
// closed and, Restart later, opened again at the new bitrate, starting
// with a keyframe.
func (e *Real) SetBitrate(bps int) error {
	if bps <= 0 {
		return fmt.Errorf("%w: bitrate %d not positive", encoder.ErrConfig, bps)
	}
	e.lock()
	defer e.unlock()
	if !e.open {
		return encoder.ErrNotOpen
	}
	if int64(bps) == e.bitrate.Load() {
		return nil
	}
	e.bitrate.Store(int64(bps))
	if e.old {
		if e.enc != nil {
			e.enc.Close()
			e.enc = nil
		}
		e.restartUntil = time.Now().Add(e.restart)
		return nil
	}
	if e.enc == nil { // still down from an old restart: it opens at the new bitrate
		return nil
	}
	d := e.reconfigure.Next()
	err := e.enc.SetBitrate(bps)
	time.Sleep(d)
	return err
}

// ready checks the session can encode now, and opens it again once an old
// restart is over.
func (e *Real) ready(now time.Time) error {
	if !e.open {
		return encoder.ErrNotOpen
	}
	if now.Before(e.restartUntil) {
		return &encoder.UnavailableError{Until: e.restartUntil, Reason: "restarting after a bitrate change"}
	}
	if e.enc == nil {
		// A new session has no reference: its first frame is an IDR.
		if err := e.start(); err != nil {
			return err
		}
		e.have = false
	}
	return nil
}

// Encode implements encoder.Encoder. The first frame of a session, a
// requested one and one whose Delta does not start from the image last
// encoded are IDRs. A picture the rate control skips is ErrSkipped, and
// takes no time.
func (e *Real) Encode(in encoder.Input) (encoder.Frame, error) {
	f := encoder.Frame{Start: time.Now(), Version: in.Image.Version}
	e.lock()
	defer e.unlock()
	now := time.Now()
	if err := e.ready(now); err != nil {
		return encoder.Frame{}, err
	}
	if in.Picture == nil {
		return encoder.Frame{}, fmt.Errorf("%s encodes real pixels: the input has no picture", e.name)
	}
	key := e.keyReq.Swap(false) || !e.have || in.Delta.From != e.last.Version
	f, err := e.encode(f, now, in.Picture, key)
	if err != nil {
		return encoder.Frame{}, err
	}
	e.have, e.last, e.lastPic, e.pass = true, in.Image, in.Picture, 0
	return f, nil
}

// Refine implements encoder.Encoder: the last picture encoded again (N15),
// which the rate control spends on what the previous frame left out.
func (e *Real) Refine() (encoder.Frame, error) {
	f := encoder.Frame{Start: time.Now()}
	e.lock()
	defer e.unlock()
	now := time.Now()
	if err := e.ready(now); err != nil {
		return encoder.Frame{}, err
	}
	if e.lastPic == nil {
		return encoder.Frame{}, encoder.ErrNoImage
	}
	f.Version = e.last.Version
	f, err := e.encode(f, now, e.lastPic, e.keyReq.Swap(false) || !e.have)
	if err != nil {
		return encoder.Frame{}, err
	}
	e.have = true
	e.pass++
	f.Pass = e.pass
	return f, nil
}

// encode runs the library on pic and takes the encode's modelled time.
func (e *Real) encode(f encoder.Frame, start time.Time, pic *yuv.I420, key bool) (encoder.Frame, error) {
	if key && e.have {
		if err := e.enc.ForceKeyframe(); err != nil {
			return f, fmt.Errorf("%s: %w", e.name, err)
		}
		e.keyframes.Add(1)
	}
	data, typ, err := e.enc.Encode(nil, pic, start.Sub(e.epoch))
	if err != nil {
		return f, fmt.Errorf("%s: %w", e.name, err)
	}
	if typ == Skipped {
		if key {
			e.keyReq.Store(true) // the keyframe is still owed
		}
		return f, encoder.ErrSkipped
	}
	f.Encoder = e.name
	f.Bytes, f.Data = len(data), data
	f.Keyframe = typ == IDR
	f.Bitrate = int(e.bitrate.Load())
	// The encoder does not know the quality of its picture; the viewer
	// measures it (PSNR against the captured picture). Quality stays 0.
	f.Waited = start.Sub(f.Start)
	f.EncodeTime = e.encodeTime.Next()
	time.Sleep(f.EncodeTime)
	f.End = time.Now()
	return f, nil
}
