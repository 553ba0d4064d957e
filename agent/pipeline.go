package agent

import (
	"context"
	"errors"
	"time"

	"github.com/nuvirahub/latencylab/agent/capture"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// Skip reasons recorded in the ground truth and the counters.
const (
	SkipSendCap     = "send-cap"            // too many bytes unacknowledged (N8)
	SkipUnavailable = "encoder-unavailable" // the encoder is restarting (N16)
	SkipRateControl = "rate-control"        // the encoder's rate control skipped the image (the model's encoder.FrameSkipper, or a real encoder)
)

// pipeline is one run of the agent's capture-encode-send loop.
type pipeline struct {
	agent   *Agent
	sender  *sender
	control *control

	lastNew     time.Time // when the last new image finished encoding
	lastVersion uint64    // the screen version of that image, which passes refine
	passes      int       // refinement passes since then
	lastPic     *yuv.I420 // the picture encoded last, for an encoder of pixels
}

// input is what the encoder gets for a captured image: for an encoder of
// real pixels, the image painted (a copy: the encoder and the judge of
// the viewer's picture keep it).
func (p *pipeline) input(f *capture.Frame) (encoder.Input, error) {
	in := encoder.Input{Image: f.Image, Delta: f.Delta}
	if pt := p.agent.painter; pt != nil {
		pic, err := pt.Paint(f.Image.Version)
		if err != nil {
			return in, err
		}
		in.Picture = pic.Clone()
	}
	return in, nil
}

// wait sleeps until t; false if the session ended first.
var wait = clock.SleepUntil

// nextTick is the first display refresh strictly after now.
func (p *pipeline) nextTick(now time.Time) time.Time {
	a := p.agent
	return a.epoch.Add(screen.NextTick(now.Sub(a.epoch)+1, a.cfg.Refresh))
}

// prepare applies the controller's bitrate and a keyframe request before
// an encode.
func (p *pipeline) prepare() {
	a := p.agent
	if b := int(a.cfg.Controller.Bitrate(time.Now())); b != a.enc.Bitrate() {
		a.enc.SetBitrate(b) // reconfigures (1-4 ms) or, in the old behaviour, restarts
		a.mu.Lock()
		a.counters.BitrateChanges++
		a.mu.Unlock()
	}
	if p.control.takeKeyframeRequest() {
		a.enc.RequestKeyframe()
	}
	if p.control.takeRefreshRequest() {
		// An encoder without a rolling refresh repairs with a keyframe
		// (the lab refuses the refresh policy with such an encoder, so a
		// result never names a repair that did not happen).
		if r, ok := a.enc.(encoder.Refresher); ok {
			r.RequestRefresh()
		} else {
			a.enc.RequestKeyframe()
		}
	}
}

// rateSkip asks the encoder's rate control whether to skip the new image
// just taken; on a skip the capturer is rewound to prev, so that the next
// image carries its changes, and the skip is recorded. Only the goroutine
// that grabs images calls it.
func (p *pipeline) rateSkip(prev uint64) bool {
	a := p.agent
	rc, ok := a.enc.(encoder.FrameSkipper)
	if !ok || !rc.SkipFrame(time.Now()) {
		return false
	}
	a.capturer.Rewind(prev)
	p.skip(SkipRateControl)
	return true
}

func (p *pipeline) skip(reason string) {
	a := p.agent
	a.mu.Lock()
	a.counters.Skipped[reason]++
	a.mu.Unlock()
	a.cfg.Recorder.Event(groundtruth.Event{At: time.Now(), Kind: "skip", Reason: reason})
}

// refineDue reports whether a refinement pass is due at now (N15).
func (p *pipeline) refineDue(now time.Time) (time.Time, bool) {
	a := p.agent
	if a.cfg.NoRefine || p.lastNew.IsZero() || p.passes >= a.cfg.RefinePasses {
		return time.Time{}, false
	}
	at := p.lastNew.Add(time.Duration(p.passes+1) * a.cfg.RefineEvery)
	return at, !now.Before(at)
}

// run is the fixed pipeline (N7): wait for the encoder to be free (it is,
// when the loop comes round), then take the most recent image; poll again
// at the next refresh when nothing is new.
func (p *pipeline) run(ctx context.Context) {
	a := p.agent
	for ctx.Err() == nil {
		p.prepare()
		now := time.Now()
		if p.sender.full() {
			p.skip(SkipSendCap)
			wait(ctx, p.nextTick(now))
			continue
		}
		prev := a.capturer.Last().Version
		f := a.capturer.Grab()
		if f.New && p.rateSkip(prev) {
			wait(ctx, p.nextTick(time.Now()))
			continue
		}
		if f.New {
			conv := a.capturer.Convert()
			in, err := p.input(&f)
			var fr encoder.Frame
			if err == nil {
				fr, err = a.enc.Encode(in)
			}
			if err != nil {
				a.capturer.Rewind(prev) // the changes are still to be sent
				p.encodeFailed(ctx, err)
				continue
			}
			p.emit(ctx, &f, &conv, fr, in.Picture)
			continue // the encoder is free again: look for a newer image at once
		}
		if _, due := p.refineDue(time.Now()); due {
			p.refine(ctx)
			continue
		}
		next := p.nextTick(time.Now())
		if at, ok := p.refineDue(next); ok && at.Before(next) {
			next = at
		}
		wait(ctx, next)
	}
}

// runCaptureFirst is the documented old pipeline (N7): a capture loop takes
// an image at every refresh and hands it over; the image waits in front of
// the encoder until the encoder is free, and is old when encoded.
func (p *pipeline) runCaptureFirst(ctx context.Context) {
	a := p.agent
	images := make(chan capture.Frame) // unbuffered: the image waits for the encoder
	done := make(chan struct{})
	// The old capture loop polls at the refresh; with the old capture call
	// (N6) the call itself is the wait (AcquireNextFrame with a timeout),
	// so the loop calls it again at once, and the device lock is taken
	// again as soon as it is released.
	pace := func() bool { return wait(ctx, p.nextTick(time.Now())) }
	if a.cfg.Capture.OldWaitForFrame {
		pace = func() bool { return ctx.Err() == nil }
	}
	go func() {
		defer close(done)
		for pace() {
			if p.sender.full() {
				p.skip(SkipSendCap)
				wait(ctx, p.nextTick(time.Now()))
				continue
			}
			prev := a.capturer.Last().Version
			f := a.capturer.Grab()
			if !f.New || p.rateSkip(prev) {
				continue
			}
			select {
			case images <- f:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { <-done }()
	for {
		var refine <-chan time.Time // nil: no pass due, never ready
		var timer *time.Timer
		if at, _ := p.refineDue(time.Now()); !at.IsZero() {
			timer = time.NewTimer(time.Until(at))
			refine = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case f := <-images:
			p.prepare()
			conv := a.capturer.Convert()
			in, err := p.input(&f)
			var fr encoder.Frame
			if err == nil {
				fr, err = a.enc.Encode(in)
			}
			if err != nil {
				p.encodeFailed(ctx, err)
			} else {
				p.emit(ctx, &f, &conv, fr, in.Picture)
			}
		case <-refine:
			p.prepare()
			p.refine(ctx)
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// encodeFailed handles an encoder that cannot take a frame: during the old
// restart (N16) the image freezes; the frame is skipped and retried at the
// next refresh.
func (p *pipeline) encodeFailed(ctx context.Context, err error) {
	switch {
	case errors.Is(err, encoder.ErrUnavailable):
		p.skip(SkipUnavailable)
	case errors.Is(err, encoder.ErrSkipped):
		p.skip(SkipRateControl)
	default:
		p.skip(err.Error())
	}
	wait(ctx, p.nextTick(time.Now()))
}

// refine sends one refinement pass over the unchanged image (N15). Its
// capture time is the pass's own start: the screen has not changed, so the
// image is current then.
func (p *pipeline) refine(ctx context.Context) {
	p.passes++
	fr, err := p.agent.enc.Refine()
	if err != nil {
		p.encodeFailed(ctx, err)
		return
	}
	p.emit(ctx, nil, nil, fr, p.lastPic)
}

// emit records a frame's ground truth and sends it. pic is the picture it
// encodes, for an encoder of real pixels.
func (p *pipeline) emit(ctx context.Context, f *capture.Frame, conv *capture.Conversion, fr encoder.Frame, pic *yuv.I420) {
	a := p.agent
	a.mu.Lock()
	a.seq++
	seq := a.seq
	a.counters.Frames++
	a.counters.Bytes += int64(fr.Bytes)
	if fr.Pass > 0 {
		a.counters.Refinements++
	}
	a.mu.Unlock()

	captured := fr.Start
	if f != nil {
		captured = f.End
		p.lastNew, p.lastVersion, p.passes = fr.End, f.Image.Version, 0
	}
	version := p.lastVersion
	h := wire.FrameHeader{
		Seq:         seq,
		Capture:     a.cfg.Clock.At(captured),
		EncodeStart: a.cfg.Clock.At(fr.Start),
		EncodeEnd:   a.cfg.Clock.At(fr.End),
		Pass:        uint8(min(fr.Pass, 255)),
		Quality:     uint16(min(max(fr.Quality, 0), 1) * 1000),
		Payload:     uint32(fr.Bytes),
	}
	if fr.Keyframe {
		h.Flags |= wire.FlagKeyframe
	}
	if fr.Pass > 0 {
		h.Flags |= wire.FlagRefine
	}
	if fr.RefreshBegin {
		h.Flags |= wire.FlagRefreshBegin
	}
	if fr.RefreshEnd {
		h.Flags |= wire.FlagRefreshEnd
	}
	a.cfg.Recorder.Update(seq, func(g *groundtruth.Frame) {
		g.Pass, g.Keyframe, g.Bytes, g.Quality = fr.Pass, fr.Keyframe, fr.Bytes, fr.Quality
		g.Captured, g.EncodeStart, g.EncodeEnd = captured, fr.Start, fr.End
		g.Version = version
		if f != nil {
			g.ContentAt = a.epoch.Add(f.Image.At)
		}
		if conv != nil {
			g.ConvertStart, g.ConvertEnd = conv.Start, conv.End
		}
	})
	if pic != nil {
		p.lastPic = pic
		if a.cfg.OnPicture != nil {
			a.cfg.OnPicture(seq, pic)
		}
	}
	p.sender.send(ctx, h, fr.Data)
}
