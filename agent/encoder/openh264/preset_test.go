package openh264_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/dist"
)

func realEncoder(t *testing.T, cfg encoder.Config) *openh264.Real {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = openh264.PresetReal
	}
	e, err := encoder.Make(1, cfg)
	require.NoError(t, err)
	require.NoError(t, e.Open())
	return e.(*openh264.Real)
}

// input is version v of the animation (pictures[v-1]), following v-1. It
// waits for the capture's next 60 Hz tick first: the rate control skips a
// picture that comes sooner than its frame rate allows.
func input(v uint64) encoder.Input {
	time.Sleep(time.Second / 60)
	return encoder.Input{Image: screen.Image{Version: v}, Delta: screen.Delta{From: v - 1, To: v, Changed: 1}}
}

func TestRealPreset(t *testing.T) {
	openh264test.Require(t)
	pics := pictures(t, 1280, 720, 8)
	synctest.Test(t, func(t *testing.T) {
		e := realEncoder(t, encoder.Config{Name: openh264.PresetRealNoSkip, Bitrate: 4_000_000})
		w, h := e.PictureSize()
		require.Equal(t, [2]int{1280, 720}, [2]int{w, h})

		in := input(1)
		in.Picture = pics[0]
		f, err := e.Encode(in)
		require.NoError(t, err)
		require.True(t, f.Keyframe, "the first frame")
		require.Equal(t, len(f.Data), f.Bytes)
		require.Equal(t, openh264.EncodeTime720p, f.End.Sub(f.Start), "the measured 720p cost, in virtual time")

		in = input(2)
		in.Picture = pics[1]
		f, err = e.Encode(in)
		require.NoError(t, err)
		require.False(t, f.Keyframe)

		// Reconfiguring the running session takes the measured call's time.
		start := time.Now()
		require.NoError(t, e.SetBitrate(2_000_000))
		require.Equal(t, openh264.ReconfigureTime, time.Since(start))
		require.Equal(t, 2_000_000, e.Bitrate())

		e.RequestKeyframe()
		in = input(3)
		in.Picture = pics[2]
		f, err = e.Encode(in)
		require.NoError(t, err)
		require.True(t, f.Keyframe, "requested")

		// A refinement pass encodes the same picture again, smaller.
		r, err := e.Refine()
		require.NoError(t, err)
		require.Equal(t, 1, r.Pass)
		require.Less(t, r.Bytes, f.Bytes)

		_, err = e.Encode(input(4))
		require.ErrorContains(t, err, "no picture")
		require.NoError(t, e.Close())
		_, err = e.Encode(in)
		require.ErrorIs(t, err, encoder.ErrNotOpen)
	})
}

// N16's old behaviour with the real encoder: a bitrate change closes the
// session, which is down for the restart and starts again with an IDR.
func TestRealPresetOldRestart(t *testing.T) {
	openh264test.Require(t)
	pics := pictures(t, 1280, 720, 4)
	synctest.Test(t, func(t *testing.T) {
		e := realEncoder(t, encoder.Config{Name: openh264.PresetRealNoSkip, OldRestartOnBitrateChange: true, EncodeTime: dist.Constant(0)})
		for v := uint64(1); v <= 2; v++ {
			in := input(v)
			in.Picture = pics[v-1]
			_, err := e.Encode(in)
			require.NoError(t, err)
		}
		require.NoError(t, e.SetBitrate(1_000_000))
		in := input(3)
		in.Picture = pics[2]
		_, err := e.Encode(in)
		require.ErrorIs(t, err, encoder.ErrUnavailable)
		time.Sleep(encoder.DefaultRestart)
		f, err := e.Encode(in)
		require.NoError(t, err)
		require.True(t, f.Keyframe, "a new session starts with an IDR")
	})
}

// With frame skipping, the rate control drops the pictures that follow a
// keyframe far over the frame's budget: Encode says so (ErrSkipped, no
// time taken), and the pipeline sends the changes with a later frame.
func TestRealPresetSkips(t *testing.T) {
	openh264test.Require(t)
	pics := pictures(t, 1280, 720, 3)
	synctest.Test(t, func(t *testing.T) {
		e := realEncoder(t, encoder.Config{Bitrate: 500_000})
		in := input(1)
		in.Picture = pics[0]
		_, err := e.Encode(in)
		require.NoError(t, err)
		in = input(2)
		in.Picture = pics[1]
		start := time.Now()
		_, err = e.Encode(in)
		require.ErrorIs(t, err, encoder.ErrSkipped)
		require.Zero(t, time.Since(start))
	})
}

func TestRealPresetRefusesModelFields(t *testing.T) {
	_, err := encoder.Make(1, encoder.Config{Name: openh264.PresetReal, FullScreenBits: 1e6})
	require.ErrorIs(t, err, encoder.ErrConfig)
	require.ErrorContains(t, err, "OpenH264's rate control")
	require.Contains(t, encoder.PresetNames(), openh264.PresetRealNoSkip)
}
