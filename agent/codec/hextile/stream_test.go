package hextile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
)

// ReadRect, fed an encoded frame's rectangles one after the other off a
// stream, rebuilds what Decode does from the whole frame, and consumes
// exactly each rectangle's bytes (the next header follows where it stops).
func TestReadRectMatchesDecode(t *testing.T) {
	for _, kind := range []string{frames.Solid, frames.Gradient, frames.Noise} {
		cur := frames.Keyframe(kind, 100, 50, 7)
		dirty := []codec.Rect{{X: 0, Y: 0, W: 37, H: 50}, {X: 37, Y: 3, W: 63, H: 21}}
		enc, err := NewEncoder().Encode(nil, nil, cur, dirty)
		require.NoError(t, err)
		want, err := NewDecoder().Decode(nil, 100, 50, enc)
		require.NoError(t, err)

		got := codec.NewFrame(100, 50)
		r := bytes.NewReader(enc[2:])
		for range binary.BigEndian.Uint16(enc) {
			var hdr [rectHeaderSize]byte
			_, err := io.ReadFull(r, hdr[:])
			require.NoError(t, err)
			u := func(i int) int { return int(binary.BigEndian.Uint16(hdr[i:])) }
			require.NoError(t, ReadRect(r, got, u(0), u(2), u(4), u(6)), kind)
		}
		require.Zero(t, r.Len(), "%s: every byte consumed, none more", kind)
		require.Equal(t, want.Pix, got.Pix, kind)
	}
}

// A stream that ends inside a rectangle, or a rectangle outside the frame,
// is an error, not a panic.
func TestReadRectRejects(t *testing.T) {
	cur := frames.Keyframe(frames.Noise, 32, 32, 1)
	enc, err := NewEncoder().Encode(nil, nil, cur, []codec.Rect{{W: 32, H: 32}})
	require.NoError(t, err)
	body := enc[2+rectHeaderSize:]
	err = ReadRect(bytes.NewReader(body[:len(body)-1]), codec.NewFrame(32, 32), 0, 0, 32, 32)
	require.ErrorIs(t, err, ErrTruncated)
	require.True(t, errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF), "%v", err)
	// A rectangle that does not lie inside the frame, on any side, or has
	// no area, is refused before a byte is read.
	for _, r := range [][4]int{{1, 0, 32, 32}, {0, 1, 32, 32}, {-1, 0, 16, 16}, {0, -1, 16, 16}, {0, 0, 0, 16}, {0, 0, 16, 0}} {
		require.ErrorIs(t, ReadRect(bytes.NewReader(body), codec.NewFrame(32, 32), r[0], r[1], r[2], r[3]), ErrBounds, "%v", r)
	}
	require.ErrorIs(t, ReadRect(bytes.NewReader(body), nil, 0, 0, 32, 32), ErrBounds, "no frame")
}
