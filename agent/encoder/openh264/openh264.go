// Package openh264 is a thin binding to Cisco's OpenH264 as Debian ships it
// (libopenh264-dev 2.3.1, wels/codec_api.h): an encoder with its own rate
// control (target bitrate, frame skipping), keyframes on request and
// bitrate and frame-rate changes on the running session (SetOption), and a
// decoder; and the preset "openh264-real" built on it, the real encoder
// behind the agent's encoder.Encoder interface (Real), with the viewer's
// real decoder beside it.
//
// The library is optional. The binding is cgo code that includes the
// header only where it exists (__has_include) and opens libopenh264.so at
// run time (dlopen), so every build succeeds: with cgo and the library, it
// works; without cgo (CGO_ENABLED=0, WebAssembly), without the header at
// build time or without the library at run time, NewEncoder and NewDecoder
// fail with an error wrapping ErrUnavailable that says what is missing, and
// Available says it beforehand.
//
// Determinism: the encoder runs on one thread (no slice threads, whose
// load balancing may differ between runs) and its rate control reads only
// the bitrate, the frame rate and the timestamps it is given, so the same
// pictures with the same timestamps and calls give the same bytes.
package openh264

import (
	"errors"
	"fmt"
)

// ErrUnavailable: this build or this machine cannot run OpenH264. The
// error wrapping it says what is missing.
var ErrUnavailable = errors.New("openh264: not available")

// ErrCodec wraps a failure the library reported.
var ErrCodec = errors.New("openh264: codec error")

// RateControl is the encoder's rate-control mode (RC_MODES).
type RateControl int

// The rate-control modes the binding offers.
const (
	// RateBitrate follows the target bitrate (RC_BITRATE_MODE): the
	// quantiser moves so that the output meets it over about a second.
	RateBitrate RateControl = iota
	// RateQuality (RC_QUALITY_MODE) favours a steady quality over the
	// bitrate.
	RateQuality
	// RateTimestamp (RC_TIMESTAMP_MODE) budgets every frame by the time
	// since the previous one, as a capture at an irregular rate needs.
	RateTimestamp
	// RateOff (RC_OFF_MODE) encodes at a fixed quantiser.
	RateOff
)

// String names the mode as the preset parameters do.
func (r RateControl) String() string {
	switch r {
	case RateBitrate:
		return "bitrate"
	case RateQuality:
		return "quality"
	case RateTimestamp:
		return "timestamp"
	case RateOff:
		return "off"
	}
	return fmt.Sprintf("RateControl(%d)", int(r))
}

// Params configure an encoder session.
type Params struct {
	// Width and Height are the pictures' size, both even.
	Width, Height int
	// Bitrate is the target in bits per second.
	Bitrate int
	// FrameRate is the highest input frame rate, in Hz: what the rate
	// control divides a second's bits by.
	FrameRate float64
	// RateControl is the rate-control mode.
	RateControl RateControl
	// FrameSkip lets the rate control skip frames to stay within the
	// bitrate (bEnableFrameSkip): Encode then returns a Skipped frame and
	// no bytes.
	FrameSkip bool
	// Camera tunes the encoder for camera video (CAMERA_VIDEO_REAL_TIME)
	// instead of screen content (SCREEN_CONTENT_REAL_TIME, the default:
	// what a remote desktop sends).
	Camera bool
	// LongTermEvery, when positive, turns on long-term references with
	// the decoder's feedback (bEnableLongTermReference on a lossy link):
	// a frame is marked as one every LongTermEvery frames
	// (iLtrMarkPeriod), and after a loss the encoder can code a frame onto
	// one the decoder confirmed (Encoder.LongTermRecover) instead of an
	// IDR.
	LongTermEvery int
}

// Refs is a decoded frame's place in the reference chain, as the decoder
// reports it: what the long-term reference feedback carries.
type Refs struct {
	// Frame is the frame's frame_num, IDR the id of the IDR it follows.
	Frame, IDR int
	// MarksLongTerm says the frame marked a long-term reference, Marked
	// its frame_num.
	MarksLongTerm bool
	Marked        int
}

// FrameType is what the encoder made of a picture (EVideoFrameType).
type FrameType int

// The frame types.
const (
	// Invalid: the encoder made nothing (an error).
	Invalid FrameType = iota
	// IDR is an instantaneous decoder refresh: a keyframe.
	IDR
	// I is an intra frame that is not an IDR.
	I
	// P is a predicted frame.
	P
	// Skipped: the rate control dropped the picture (frame skipping), or
	// the picture did not change. No bytes.
	Skipped
)

// String names the frame type.
func (t FrameType) String() string {
	switch t {
	case IDR:
		return "IDR"
	case I:
		return "I"
	case P:
		return "P"
	case Skipped:
		return "skipped"
	}
	return "invalid"
}

// Keyframe tells whether the frame decodes on its own.
func (t FrameType) Keyframe() bool { return t == IDR }

// DecodeState is the decoder's report on one call (DECODING_STATE): zero
// when the bitstream was error-free, otherwise a set of flags.
type DecodeState int

// The flags the lab branches on.
const (
	// RefLost: a reference picture is missing (a frame was dropped before
	// it); the picture is concealed and a keyframe is needed.
	RefLost DecodeState = 0x02
	// BitstreamError: the data is broken.
	BitstreamError DecodeState = 0x04
	// NoParamSets: no sequence or picture parameter set was seen yet (the
	// stream did not start at a keyframe).
	NoParamSets DecodeState = 0x10
	// Concealed: the picture shown was concealed from an error.
	Concealed DecodeState = 0x20
)

// NeedsKeyframe tells whether the decoder cannot go on without a keyframe.
func (s DecodeState) NeedsKeyframe() bool {
	return s&(RefLost|BitstreamError|NoParamSets) != 0
}

func (p Params) check() error {
	var errs []error
	if p.Width <= 0 || p.Height <= 0 || p.Width%2 != 0 || p.Height%2 != 0 || p.Width > 8192 || p.Height > 8192 {
		errs = append(errs, fmt.Errorf("size %dx%d: need even sides up to 8192", p.Width, p.Height))
	}
	if p.Bitrate <= 0 {
		errs = append(errs, fmt.Errorf("bitrate %d not positive", p.Bitrate))
	}
	if !(p.FrameRate > 0 && p.FrameRate <= 240) {
		errs = append(errs, fmt.Errorf("frame rate %v outside (0, 240]", p.FrameRate))
	}
	if p.LongTermEvery < 0 {
		errs = append(errs, fmt.Errorf("long-term reference period %d negative", p.LongTermEvery))
	}
	if p.RateControl < RateBitrate || p.RateControl > RateOff {
		errs = append(errs, fmt.Errorf("unknown rate control %v", p.RateControl))
	}
	return errors.Join(errs...)
}
