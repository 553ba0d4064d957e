package zrle

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// DecodeRect, given each rectangle's zlib data in turn (as an RFB client
// reads them off its connection), rebuilds the frames Decode does over the
// same connection's zlib stream.
func TestDecodeRectMatchesDecode(t *testing.T) {
	enc := NewEncoder()
	whole, byRect := NewDecoder(), NewDecoder()
	var want *codec.Frame
	got := codec.NewFrame(96, 80)
	for i, cur := range []*codec.Frame{gradientFrame(96, 80), solidFrame(96, 80, 0x123456), gradientFrame(96, 80)} {
		data, err := enc.Encode(nil, want, cur, []codec.Rect{{X: 0, Y: 0, W: 96, H: 40}, {X: 10, Y: 40, W: 70, H: 40}})
		require.NoError(t, err)
		want, err = whole.Decode(want, 96, 80, data)
		require.NoError(t, err)
		rest := data[2:]
		for range binary.BigEndian.Uint16(data) {
			u := func(i int) int { return int(binary.BigEndian.Uint16(rest[i:])) }
			n := int(binary.BigEndian.Uint32(rest[12:]))
			require.NoError(t, byRect.DecodeRect(got, u(0), u(2), u(4), u(6), rest[16:16+n]))
			rest = rest[16+n:]
		}
		require.Empty(t, rest)
		require.Equal(t, want.Pix, got.Pix, "frame %d", i)
	}
	require.Error(t, byRect.DecodeRect(got, 90, 0, 10, 10, nil), "a rectangle outside the frame")
	require.Error(t, byRect.DecodeRect(got, 0, 0, 10, 10, nil), "a rectangle without its zlib data")
}
