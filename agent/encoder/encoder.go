// Package encoder owns the agent's video encoders: the Encoder interface the
// pipeline drives (target bitrate, keyframe requests, reconfiguration,
// encoding and still-screen refinement), the H.264 model behind it with its
// presets (OpenH264 with and without assembly, a busy PC, Quick Sync, NVENC),
// and the start-up probe that tries hardware encoders and falls back to
// software (N5).
//
// The H.264 model has no pixels: it turns what the screen model says changed
// (area and detail) and the target bitrate into frame sizes, encode times and
// a quality figure. Its rate and quality model is described on H264. Real
// codecs that can run here sit behind the same interface: their packages
// register presets by name (Register; agent/encoder/lossless for the
// lossless screen codecs), and Make builds whichever encoder a preset names.
package encoder

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// Encoder is a video encoder session. Encode, Refine, SetBitrate, Open and
// Close may be called from different goroutines: they run one at a time, in
// the encoder's own order, as calls into one codec session do.
type Encoder interface {
	// Name names the encoder ("quicksync", "openh264-asm", ...).
	Name() string
	// Hardware tells whether the encoder runs on the GPU (and holds the
	// shared device while it encodes).
	Hardware() bool
	// Open starts a session. It fails with ErrAbsent when the hardware is
	// not there and with ErrOpenFailed when the driver refuses the session.
	Open() error
	// Close ends the session; Encode then fails with ErrNotOpen.
	Close() error
	// Bitrate returns the target bitrate in bits per second.
	Bitrate() int
	// SetBitrate changes the target bitrate. The session is reconfigured in
	// place (1-4 ms, the call takes that time); with the old behaviour
	// (N16) it is restarted, and the encoder is unavailable for about a
	// second.
	SetBitrate(bps int) error
	// RequestKeyframe makes the next frame a keyframe (the viewer lost
	// something, or a new viewer joined). It never blocks.
	RequestKeyframe()
	// Encode encodes a new image and takes the encode's time. It returns an
	// *UnavailableError (errors.Is ErrUnavailable) at once while the
	// session restarts: the image is not encoded and the viewer's freezes.
	Encode(in Input) (Frame, error)
	// Refine encodes the last image again (N15): the pass spends its
	// budget on what the image still lacks and costs almost nothing once
	// the image matches. It fails with ErrNoImage before the first Encode.
	Refine() (Frame, error)
}

// Refresher is an encoder that can repair the viewer's picture with a
// rolling intra refresh instead of a keyframe: RequestRefresh makes each
// of its next few frames intra-code a share of the picture, the first
// marked RefreshBegin and the last RefreshEnd. It never blocks.
type Refresher interface {
	RequestRefresh()
}

// FrameSkipper is an encoder whose rate control skips frames to hold its
// output to the target bitrate (H264: SkipFrame), as OpenH264's does with
// frame skipping on. The pipeline asks it before encoding a new image; on
// true the image is not encoded, and its changes go with the next frame.
// It never blocks behind an encode.
type FrameSkipper interface {
	SkipFrame(now time.Time) bool
}

var _ FrameSkipper = (*H264)(nil)

// Input is an image to encode, as the capturer took it.
type Input struct {
	// Image is the newest image.
	Image screen.Image
	// Delta is what changed since the image the encoder encoded last. When
	// Delta.From is not that version, the encoder cannot know what the
	// viewer has and sends a keyframe.
	Delta screen.Delta
	// Picture is the image's pixels, for an encoder that takes them (a
	// PixelEncoder; the agent paints them only for one), nil otherwise.
	// The encoder may keep it (for Refine) but not change it.
	Picture *yuv.I420
}

// Frame is one encoded frame and what it cost.
type Frame struct {
	// Encoder names the encoder that made it.
	Encoder string
	// Version is the screen version encoded.
	Version uint64
	// Bytes is the frame's size on the wire.
	Bytes int
	// Data is the frame's bitstream, Bytes long, from an encoder of real
	// pixels (a PixelEncoder); nil from a model, whose frames are sizes.
	Data []byte
	// Keyframe tells whether the frame encodes the whole image on its own.
	Keyframe bool
	// Pass is 0 for a frame of new content and n for the n-th refinement
	// pass of the same image.
	Pass int
	// RefreshBegin and RefreshEnd mark the first and the last frame of a
	// rolling intra refresh (Refresher).
	RefreshBegin, RefreshEnd bool
	// Quality is the quality of the picture the viewer has after decoding
	// this frame, 0 to 1 (see H264 for the model).
	Quality float64
	// Matched tells whether the picture now matches the screen: a further
	// refinement pass would cost almost nothing.
	Matched bool
	// Bitrate is the target bitrate the frame was encoded for.
	Bitrate int
	// Start and End are the true instants of the call; End-Start is
	// Waited plus LockWait plus EncodeTime.
	Start, End time.Time
	// Waited is how long the call waited for the session, busy with another
	// call (a reconfiguration).
	Waited time.Duration
	// LockWait is how long a hardware encoder waited for the shared
	// graphics device.
	LockWait time.Duration
	// EncodeTime is the encode's own time.
	EncodeTime time.Duration
}

// Errors the encoders return; branch on them with errors.Is.
var (
	// ErrConfig is wrapped by every configuration error.
	ErrConfig = errors.New("encoder: bad configuration")
	// ErrAbsent: the hardware encoder is not on this machine.
	ErrAbsent = errors.New("encoder: hardware absent")
	// ErrOpenFailed: the encoder is there but refused to open a session.
	ErrOpenFailed = errors.New("encoder: failed to open")
	// ErrNotOpen: Encode or Refine without an open session.
	ErrNotOpen = errors.New("encoder: not open")
	// ErrUnavailable: the session is restarting (see UnavailableError).
	ErrUnavailable = errors.New("encoder: unavailable")
	// ErrNoImage: Refine before any image was encoded.
	ErrNoImage = errors.New("encoder: no image to refine")
	// ErrNoEncoder: Probe found no encoder that opens.
	ErrNoEncoder = errors.New("encoder: no encoder opened")
)

// UnavailableError is returned by Encode and Refine while the session
// restarts after a bitrate change (the old behaviour of N16).
type UnavailableError struct {
	// Until is when the session is back.
	Until time.Time
	// Reason says why it is down.
	Reason string
}

// Error says until when the session is down and why.
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("encoder: unavailable until %s: %s", e.Until.Format(time.RFC3339Nano), e.Reason)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Attempt is one encoder Probe tried.
type Attempt struct {
	// Name and Hardware describe the encoder.
	Name     string
	Hardware bool
	// Err is why it did not open; nil for the one chosen.
	Err error
	// Took is how long the attempt took.
	Took time.Duration
}

// Attempts is what Probe tried, in order.
type Attempts []Attempt

// String reports the attempts on one line, as the agent logs them:
// "quicksync: encoder: hardware absent; openh264-asm: ok".
func (as Attempts) String() string {
	parts := make([]string, 0, len(as))
	for _, a := range as {
		if a.Err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", a.Name, a.Err))
		} else {
			parts = append(parts, a.Name+": ok")
		}
	}
	return strings.Join(parts, "; ")
}

// Probe is the agent's start-up probe (N5): it opens the hardware encoders in
// order and returns the first that opens; if none does, it opens fallback,
// the software encoder (OpenH264), when there is one. It reports every
// attempt and why each failed. The encoders that failed stay closed.
func Probe(hardware []Encoder, fallback Encoder) (Encoder, Attempts, error) {
	var tried Attempts
	try := func(e Encoder) bool {
		start := time.Now()
		err := e.Open()
		tried = append(tried, Attempt{Name: e.Name(), Hardware: e.Hardware(), Err: err, Took: time.Since(start)})
		return err == nil
	}
	for _, e := range hardware {
		if try(e) {
			return e, tried, nil
		}
	}
	if fallback != nil && try(fallback) {
		return fallback, tried, nil
	}
	return nil, tried, fmt.Errorf("%w: %s", ErrNoEncoder, tried)
}
