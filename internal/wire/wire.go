// Package wire is the protocol between the lab's agent and viewer: the
// header that starts every frame's QUIC stream, and the messages of the
// control stream (clock probes, latency reports, acknowledgements, keyframe
// requests). Parsers take untrusted bytes: every length is checked, errors
// say what was wrong, and fuzz tests hold them to never panicking.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Version is the protocol version both ends speak.
const Version = 1

// frameMagic starts every frame header, so a stream that is not a frame is
// refused at its first bytes.
var frameMagic = [2]byte{'L', 'F'}

// FrameHeaderSize is the encoded size of a FrameHeader.
const FrameHeaderSize = 2 + 1 + 1 + 8 + 8 + 8 + 8 + 1 + 2 + 4

// MaxPayload bounds a frame's payload: a 4K keyframe at high quality fits.
const MaxPayload = 16 << 20

// Frame flags.
const (
	FlagKeyframe = 1 << 0 // an intra frame
	FlagRefine   = 1 << 1 // a refinement pass over an unchanged image (N15)
	// FlagRefreshBegin and FlagRefreshEnd mark the first and the last frame
	// of a rolling intra refresh: the frames between them, in sequence,
	// each intra-code a share of the picture, so a viewer that decodes all
	// of them has a whole picture again without a keyframe.
	FlagRefreshBegin = 1 << 2
	FlagRefreshEnd   = 1 << 3
)

// knownFlags are the flags a header may carry.
const knownFlags = FlagKeyframe | FlagRefine | FlagRefreshBegin | FlagRefreshEnd

// FrameHeader starts each frame's stream; Payload bytes of coded video follow.
// Times are the agent's own clock (unix nanoseconds), as a real agent stamps
// them: the viewer converts them with its estimate of the clock offset.
type FrameHeader struct {
	Flags uint8
	// Seq numbers frames from 1.
	Seq uint64
	// Capture is when the image was captured; EncodeStart and EncodeEnd
	// bracket its encoding (the network part of latency starts at
	// EncodeEnd, N12).
	Capture, EncodeStart, EncodeEnd time.Time
	// Pass is the refinement pass (0 for a new image, 1-15 after, N15).
	Pass uint8
	// Quality is the encoder's quality figure in thousandths (0-1000).
	Quality uint16
	// Payload is the length of the coded frame that follows.
	Payload uint32
}

// Keyframe reports whether the frame is an intra frame.
func (h FrameHeader) Keyframe() bool { return h.Flags&FlagKeyframe != 0 }

// Refine reports whether the frame is a refinement pass.
func (h FrameHeader) Refine() bool { return h.Flags&FlagRefine != 0 }

// RefreshBegin reports whether the frame starts a rolling intra refresh.
func (h FrameHeader) RefreshBegin() bool { return h.Flags&FlagRefreshBegin != 0 }

// RefreshEnd reports whether the frame ends a rolling intra refresh.
func (h FrameHeader) RefreshEnd() bool { return h.Flags&FlagRefreshEnd != 0 }

// AppendFrameHeader appends h's encoding to b.
func AppendFrameHeader(b []byte, h FrameHeader) []byte {
	b = append(b, frameMagic[0], frameMagic[1], Version, h.Flags)
	b = binary.BigEndian.AppendUint64(b, h.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(h.Capture)))
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(h.EncodeStart)))
	b = binary.BigEndian.AppendUint64(b, uint64(unixNano(h.EncodeEnd)))
	b = append(b, h.Pass)
	b = binary.BigEndian.AppendUint16(b, h.Quality)
	return binary.BigEndian.AppendUint32(b, h.Payload)
}

// ErrBadFrame wraps every reason a frame header is refused.
var ErrBadFrame = errors.New("wire: bad frame header")

// ParseFrameHeader decodes the first FrameHeaderSize bytes of b.
func ParseFrameHeader(b []byte) (FrameHeader, error) {
	var h FrameHeader
	if len(b) < FrameHeaderSize {
		return h, fmt.Errorf("%w: %d bytes, want %d", ErrBadFrame, len(b), FrameHeaderSize)
	}
	if b[0] != frameMagic[0] || b[1] != frameMagic[1] {
		return h, fmt.Errorf("%w: magic %q, want %q", ErrBadFrame, b[:2], frameMagic[:])
	}
	if b[2] != Version {
		return h, fmt.Errorf("%w: version %d, want %d", ErrBadFrame, b[2], Version)
	}
	h.Flags = b[3]
	if h.Flags&^knownFlags != 0 {
		return h, fmt.Errorf("%w: unknown flags %#x", ErrBadFrame, h.Flags)
	}
	h.Seq = binary.BigEndian.Uint64(b[4:])
	h.Capture = fromUnixNano(int64(binary.BigEndian.Uint64(b[12:])))
	h.EncodeStart = fromUnixNano(int64(binary.BigEndian.Uint64(b[20:])))
	h.EncodeEnd = fromUnixNano(int64(binary.BigEndian.Uint64(b[28:])))
	h.Pass = b[36]
	h.Quality = binary.BigEndian.Uint16(b[37:])
	h.Payload = binary.BigEndian.Uint32(b[39:])
	switch {
	case h.Seq == 0:
		return h, fmt.Errorf("%w: sequence number 0", ErrBadFrame)
	case h.Quality > 1000:
		return h, fmt.Errorf("%w: quality %d above 1000", ErrBadFrame, h.Quality)
	case h.Payload > MaxPayload:
		return h, fmt.Errorf("%w: payload %d bytes above %d", ErrBadFrame, h.Payload, MaxPayload)
	case h.EncodeEnd.Before(h.EncodeStart):
		return h, fmt.Errorf("%w: encoding ends before it starts", ErrBadFrame)
	}
	return h, nil
}

// unixNano and fromUnixNano carry instants as int64 nanoseconds, which
// holds 1678-2262: the bubble's 2000 and any real clock.
func unixNano(t time.Time) int64 { return t.UnixNano() }

func fromUnixNano(n int64) time.Time { return time.Unix(0, n) }
