//go:build !cgo

package openh264

import (
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/internal/yuv"
)

// errNoCgo is what this build lacks: OpenH264 is C, reached through cgo.
var errNoCgo = fmt.Errorf("%w: this build has no cgo (CGO_ENABLED=0, or WebAssembly, where the exact mode runs): OpenH264 needs a native build with cgo and Debian's libopenh264-dev", ErrUnavailable)

// Available returns nil when OpenH264 can run here, otherwise an error
// wrapping ErrUnavailable that says what is missing: here, cgo.
func Available() error { return errNoCgo }

// Version is the library's version; empty: it is not available.
func Version() string { return "" }

// BuiltWith is the header version the binding was compiled against; empty
// without cgo.
func BuiltWith() string { return "" }

// Encoder is one encoder session; without cgo there is none.
type Encoder struct{}

// NewEncoder fails: this build has no cgo.
func NewEncoder(p Params) (*Encoder, error) {
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("openh264: %w", err)
	}
	return nil, errNoCgo
}

// Encode fails: this build has no cgo.
func (e *Encoder) Encode(dst []byte, pic *yuv.I420, ts time.Duration) ([]byte, FrameType, error) {
	return dst, Invalid, errNoCgo
}

// ForceKeyframe fails: this build has no cgo.
func (e *Encoder) ForceKeyframe() error { return errNoCgo }

// SetBitrate fails: this build has no cgo.
func (e *Encoder) SetBitrate(bps int) error { return errNoCgo }

// SetFrameRate fails: this build has no cgo.
func (e *Encoder) SetFrameRate(fps float64) error { return errNoCgo }

// LongTermMarked fails: this build has no cgo.
func (e *Encoder) LongTermMarked(r Refs, ok bool) error { return errNoCgo }

// LongTermRecover fails: this build has no cgo.
func (e *Encoder) LongTermRecover(idr, last, current int) error { return errNoCgo }

// Refs reports nothing: this build has no cgo.
func (d *Decoder) Refs() Refs { return Refs{} }

// Close does nothing.
func (e *Encoder) Close() error { return nil }

// Decoder is one decoder session; without cgo there is none.
type Decoder struct{}

// NewDecoder fails: this build has no cgo.
func NewDecoder() (*Decoder, error) { return nil, errNoCgo }

// Decode fails: this build has no cgo.
func (d *Decoder) Decode(data []byte, dst *yuv.I420) (bool, DecodeState, error) {
	return false, 0, errNoCgo
}

// Close does nothing.
func (d *Decoder) Close() error { return nil }
