package paint

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// replay is a screen of three versions, each a whole-screen region of a
// recording phase, version v showing recorded frame frames[v-1]; the
// regions are of kind kind, SourceRecording when empty.
type replay struct {
	rec    *recording.Recording
	frames []int
	kind   string
}

func (r *replay) Version(v uint64) (screen.Image, []screen.Region, bool) {
	if v == 0 || v > uint64(len(r.frames)) {
		return screen.Image{}, nil, false
	}
	img := screen.Image{Version: v, At: time.Duration(v) * time.Second}
	kind := r.kind
	if kind == "" {
		kind = SourceRecording
	}
	return img, []screen.Region{{X0: 0, Y0: 0, X1: screen.Cols, Y1: screen.Rows, Source: kind, Phase: 0}}, true
}

func (r *replay) RecordedFrame(phase int, at time.Duration) (*recording.Recording, int, bool) {
	v := int(at / time.Second)
	if phase != 0 || v < 1 || v > len(r.frames) {
		return nil, 0, false
	}
	return r.rec, r.frames[v-1], true
}

// noiseRecording writes n frames of w x h noise, each new everywhere.
func noiseRecording(t *testing.T, w, h, n int) (*recording.Recording, []*codec.Frame) {
	t.Helper()
	var frames []*codec.Frame
	meta := recording.Meta{Width: w, Height: h, Refresh: 60}
	rec := recordingtest.Write(t, filepath.Join(t.TempDir(), "noise.labrec"), meta, func(add recordingtest.Add) {
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range n {
			f := codec.NewFrame(w, h)
			for j := range f.Pix {
				f.Pix[j] = rng.Uint32() & 0xffffff
			}
			add(time.Duration(i)*time.Second, f, []codec.Rect{{X: 0, Y: 0, W: w, H: h}})
			frames = append(frames, f)
		}
	})
	return rec, frames
}

// TestRecordedPixels: a recorded region is the recorded frame's pixels,
// converted as the textures are, whichever order the versions come in
// and whether the screen model calls the change motion or not; at another
// size they are scaled by the nearest sample.
func TestRecordedPixels(t *testing.T) {
	rec, frames := noiseRecording(t, 320, 180, 3)
	src := &replay{rec: rec, frames: []int{0, 2, 1}}
	for _, kind := range []string{SourceRecording, screen.SourceRecordingMotion, screen.SourceRecordingScroll} {
		p, err := New(1, &replay{rec: rec, frames: src.frames, kind: kind}, Config{Width: 320, Height: 180})
		require.NoError(t, err)
		for _, v := range []uint64{1, 2, 3, 2, 1} {
			pic, err := p.Paint(v)
			require.NoError(t, err)
			want := yuv.New(320, 180)
			want.FromRGB(frames[src.frames[v-1]].Pix, 320, 180)
			require.True(t, yuv.Equal(want, pic), "%s, version %d", kind, v)
		}
	}
	// Twice the size: each recorded pixel becomes a 2x2 block.
	big, err := New(1, src, Config{Width: 640, Height: 360})
	require.NoError(t, err)
	pic, err := big.Paint(3)
	require.NoError(t, err)
	wantRGB := make([]uint32, 640*360)
	for y := range 360 {
		for x := range 640 {
			wantRGB[y*640+x] = frames[1].Pix[(y/2)*320+x/2]
		}
	}
	want := yuv.New(640, 360)
	want.FromRGB(wantRGB, 640, 360)
	require.True(t, yuv.Equal(want, pic))
}

// TestRecordedRegionNeedsItsScreen: a screen that cannot say which frame
// a recorded region shows makes Paint fail, not paint something else.
func TestRecordedRegionNeedsItsScreen(t *testing.T) {
	rec, _ := noiseRecording(t, 192, 108, 1)
	src := &replay{rec: rec, frames: []int{0}}
	p, err := New(1, onlyVersions{src}, Config{Width: 192, Height: 108})
	require.NoError(t, err)
	_, err = p.Paint(1)
	require.ErrorContains(t, err, "cannot say which recording")
}

// onlyVersions hides a screen's Recorded method.
type onlyVersions struct{ v Versions }

func (o onlyVersions) Version(v uint64) (screen.Image, []screen.Region, bool) { return o.v.Version(v) }
