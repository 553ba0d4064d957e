package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var when = time.Date(2000, 1, 1, 0, 0, 3, 500, time.UTC)

func sampleHeader() FrameHeader {
	return FrameHeader{
		Flags: FlagKeyframe, Seq: 42, Capture: when, EncodeStart: when.Add(time.Millisecond),
		EncodeEnd: when.Add(10 * time.Millisecond), Pass: 3, Quality: 875, Payload: 12345,
	}
}

func TestFrameHeaderRoundTrip(t *testing.T) {
	h := sampleHeader()
	b := AppendFrameHeader(nil, h)
	require.Len(t, b, FrameHeaderSize)
	got, err := ParseFrameHeader(b)
	require.NoError(t, err)
	require.True(t, got.Capture.Equal(h.Capture))
	require.True(t, got.EncodeEnd.Equal(h.EncodeEnd))
	require.True(t, got.Keyframe())
	require.False(t, got.Refine())
	got.Capture, got.EncodeStart, got.EncodeEnd = h.Capture, h.EncodeStart, h.EncodeEnd
	require.Equal(t, h, got)
}

func TestFrameHeaderRefusesBadInput(t *testing.T) {
	good := AppendFrameHeader(nil, sampleHeader())
	mutate := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"truncated":     {good[:10], "10 bytes"},
		"magic":         {mutate(0, 'X'), "magic"},
		"version":       {mutate(2, 9), "version 9"},
		"flags":         {mutate(3, 0x80), "unknown flags"},
		"quality":       {mutate(37, 0xff), "quality"},
		"payload":       {mutate(39, 0xff), "payload"},
		"encode before": {AppendFrameHeader(nil, FrameHeader{Seq: 1, EncodeStart: when, EncodeEnd: when.Add(-1)}), "ends before"},
		"seq 0":         {AppendFrameHeader(nil, FrameHeader{}), "sequence number 0"},
	} {
		_, err := ParseFrameHeader(c.b)
		require.ErrorIs(t, err, ErrBadFrame, name)
		require.ErrorContains(t, err, c.want, name)
	}
}

func TestControlMessagesRoundTrip(t *testing.T) {
	msgs := []Message{
		&ClockProbe{ID: 7, T1: when},
		&ClockReply{ID: 7, T1: when, T2: when.Add(time.Second), T3: when.Add(time.Second + 5)},
		&Report{End: when, Frames: 15, Median: 38 * time.Millisecond, Min: 30 * time.Millisecond,
			NetworkMedian: 20 * time.Millisecond, NetworkMin: 12 * time.Millisecond},
		&Ack{Seq: 99, Bytes: 4000, Arrived: when.Add(time.Millisecond)},
		&KeyframeRequest{},
		&RefreshRequest{},
	}
	var buf bytes.Buffer
	for _, m := range msgs {
		require.NoError(t, WriteMessage(&buf, m))
	}
	r := bufio.NewReader(&buf)
	for _, want := range msgs {
		got, err := ReadMessage(r)
		require.NoError(t, err)
		require.Equal(t, AppendMessage(nil, want), AppendMessage(nil, got))
		require.Equal(t, want.Type(), got.Type())
	}
	_, err := ReadMessage(r)
	require.ErrorIs(t, err, io.EOF, "a clean end between messages")
}

func TestControlMessagesRefuseBadInput(t *testing.T) {
	for name, b := range map[string][]byte{
		"unknown type":    {99, 0},
		"wrong length":    {byte(TypeAck), 3, 1, 2, 3},
		"truncated body":  {byte(TypeAck), 20, 1, 2},
		"truncated head":  {byte(TypeAck)},
		"keyframe + body": {byte(TypeKeyframeRequest), 1, 0},
	} {
		_, err := ReadMessage(bufio.NewReader(bytes.NewReader(b)))
		require.ErrorIs(t, err, ErrBadMessage, name)
		require.False(t, errors.Is(err, io.EOF), name)
	}
}

func FuzzParseFrameHeader(f *testing.F) {
	f.Add(AppendFrameHeader(nil, sampleHeader()))
	f.Add([]byte("LF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseFrameHeader(b)
		if err != nil {
			return
		}
		// What parses re-encodes to the same bytes.
		require.Equal(t, b[:FrameHeaderSize], AppendFrameHeader(nil, h))
	})
}

func FuzzReadMessage(f *testing.F) {
	f.Add(AppendMessage(nil, &Report{End: when, Frames: 3}))
	f.Add(AppendMessage(nil, &ClockReply{ID: 1}))
	f.Add([]byte{byte(TypeAck), 20})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for range 64 {
			m, err := ReadMessage(r)
			if err != nil {
				return
			}
			again, err := ReadMessage(bufio.NewReader(bytes.NewReader(AppendMessage(nil, m))))
			require.NoError(t, err)
			require.Equal(t, AppendMessage(nil, m), AppendMessage(nil, again))
		}
	})
}
