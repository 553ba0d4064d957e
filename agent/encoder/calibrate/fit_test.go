package calibrate

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
)

// bareModel is the model without content costs, whatever the presets hold: the
// synthetic encoders' and the fits' starting point.
var bareModel = encoder.Config{}

// synthetic is a synthetic encoder's reference: every kind at every
// bitrate for length, sized by the model with want's parameters.
func synthetic(t *testing.T, want Params, kinds []string, bitrates []int, length time.Duration) ([]Case, []Summary) {
	t.Helper()
	var cases []Case
	for _, kind := range kinds {
		for _, bps := range bitrates {
			cases = append(cases, Case{Kind: kind, Bitrate: bps, Length: length})
		}
	}
	ref, err := ModelSummaries(cases, want.Apply(bareModel), 0)
	require.NoError(t, err)
	return cases, ref
}

// TestFitRecoversKnownParameters fits the model to a synthetic encoder, the
// model itself with known parameters off the defaults: the fit must find
// them among the grid's others.
func TestFitRecoversKnownParameters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		want := Params{FullScreenBits: 2e6, KeyframeFactor: 2, MinFrameBytes: 500}
		cases, ref := synthetic(t, want, []string{"animation", "typing", "scrolling", "photo"}, []int{100_000, 1_000_000, 8_000_000}, time.Second)
		grid := Grid{
			FullScreenBits: []float64{0.5e6, 1e6, 2e6, 4e6, 8e6},
			KeyframeFactor: []float64{1, 2, 4, 8},
			MinFrameBytes:  []int{-1, 100, 300, 500, 1200},
		}
		got, loss, err := Fit(cases, ref, bareModel, grid, 0)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Zero(t, loss)
		// The defaults are measurably off the synthetic encoder.
		def, err := ModelSummaries(cases, bareModel, 0)
		require.NoError(t, err)
		require.Greater(t, Loss(def, ref), 0.01)
	})
}

// TestFitRecoversContentCosts does the same with the parameters of the
// model's content costs: an unbudgeted first keyframe, moving kinds,
// kinds' own smallest frames and first keyframes. The first keyframe shows at the low targets,
// the keyframe factor (on a keyframe beyond the first one's size) at 16
// Mbit/s, motion at the high targets, the smallest frames at the low ones.
func TestFitRecoversContentCosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		want := Params{FullScreenBits: 2e6, KeyframeFactor: 2, MinFrameBytes: 500, FirstKeyframeBits: 0.35e6,
			Content: []encoder.ContentCost{
				{Kind: "animation", MotionBits: 32e3, MinFrameBytes: 2500, KeyframeBits: 0.25e6},
				{Kind: "scrolling", MotionBits: 64e3},
				{Kind: "typing", MinFrameBytes: 1200},
			}}
		cases, ref := synthetic(t, want, []string{"animation", "typing", "scrolling", "photo"}, []int{100_000, 1_000_000, 8_000_000, 16_000_000}, 2*time.Second)
		grid := Grid{
			FullScreenBits:    []float64{0.5e6, 1e6, 2e6, 4e6, 8e6},
			KeyframeFactor:    []float64{1, 2, 4, 8},
			MinFrameBytes:     []int{-1, 100, 300, 500, 1200},
			FirstKeyframeBits: []float64{0, 0.25e6, 0.35e6, 0.5e6, 1e6},
			MotionBits:        []float64{0, 16e3, 32e3, 64e3, 128e3},
			KindMinFrameBytes: []int{0, -1, 1200, 2500, 5000},
			KeyframeBits:      []float64{0, 0.25e6, 0.5e6, 1e6},
		}
		got, loss, err := Fit(cases, ref, bareModel, grid, 0)
		require.NoError(t, err)
		require.Equal(t, want, got)
		require.Zero(t, loss)
		// Without the content costs the model is measurably off.
		plain := want
		plain.FirstKeyframeBits, plain.Content = 0, nil
		sums, err := ModelSummaries(cases, plain.Apply(bareModel), 0)
		require.NoError(t, err)
		require.Greater(t, Loss(sums, ref), 0.01)
	})
}

func TestSummariseAndCompare(t *testing.T) {
	frames := []Frame{
		{Bytes: 1000, Keyframe: true},
		{Bytes: 100}, {Skipped: true}, {Bytes: 300}, {Bytes: 200},
		{Bytes: 50, Pass: 1}, // a refinement pass is not new content
	}
	for i := range frames {
		frames[i].At = time.Duration(i) * time.Second
	}
	s := Summarise(frames, 0)
	require.Equal(t, Summary{IBytes: 1000, PBytes: 200, P: 3, SkipRate: 0.25}, s)
	// From 3 s on only the frame of 300 bytes at 3 s and the one of 200 count.
	require.Equal(t, Summary{IBytes: 1000, PBytes: 250, P: 2}, Summarise(frames, 3*time.Second))
	// A capture skipped before the first frame is not the keyframe: it
	// counts as a skip, and the first frame sent is the keyframe.
	skippedFirst := append([]Frame{{Skipped: true}}, frames...)
	require.Equal(t, Summary{IBytes: 1000, PBytes: 200, P: 3, SkipRate: 0.4}, Summarise(skippedFirst, 0))
	e := Compare([]Summary{{IBytes: 1500, PBytes: 100, P: 1, SkipRate: 0.5}}, []Summary{s})
	require.InDelta(t, 50, e.PMdAPE, 1e-9)
	require.InDelta(t, 50, e.IMdAPE, 1e-9)
	require.InDelta(t, 25, e.SkipDiff, 1e-9)
}

// Against an encoder that never skips (OpenH264 with frame skipping off),
// the fit tries the model's rate control without skipping when the grid
// asks, and finds it: at 100 kbit/s a 5 KB smallest frame makes the
// default threshold skip most frames, where the reference sends them all.
func TestFitFindsARateControlThatNeverSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		want := Params{FullScreenBits: 2e6, KeyframeFactor: 4, MinFrameBytes: 5000, SkipBuffer: -1}
		cases, ref := synthetic(t, want, []string{"animation"}, []int{100_000, 1_000_000, 8_000_000}, time.Second)
		for _, s := range ref {
			require.Zero(t, s.SkipRate, "the reference never skips")
		}
		grid := Grid{FullScreenBits: []float64{2e6}, KeyframeFactor: []float64{4}, MinFrameBytes: []int{300, 5000}}
		got, loss, err := Fit(cases, ref, bareModel, grid, 0)
		require.NoError(t, err)
		require.Positive(t, loss, "without the switch the skips cannot match")
		require.Zero(t, got.SkipBuffer)

		grid.SkipBuffer = []time.Duration{0, -1}
		got, loss, err = Fit(cases, ref, bareModel, grid, 0)
		require.NoError(t, err)
		// The animation's need is over every budget here, so its
		// whole-screen figure cannot show (the fit keeps its start); the
		// smallest frame and the switch can.
		require.Equal(t, want.SkipBuffer, got.SkipBuffer)
		require.Equal(t, want.MinFrameBytes, got.MinFrameBytes)
		require.Zero(t, loss)
	})
}

// A preset's cost for recorded content, fitted on the recordings, is left
// out when a calibration on painted content checks the preset: only the
// kinds the run fits are compared.
func TestParamsOnlyTheKindsFitted(t *testing.T) {
	p := Params{FullScreenBits: 2e6, Content: []encoder.ContentCost{
		{Kind: "animation", MotionBits: 32e3}, {Kind: "recording", MinFrameBytes: 5000}, {Kind: "typing", KeyframeBits: 1e6}}}
	got := p.only([]string{"animation", "typing", "video"})
	require.Equal(t, []encoder.ContentCost{{Kind: "animation", MotionBits: 32e3}, {Kind: "typing", KeyframeBits: 1e6}}, got.Content)
	require.Len(t, p.Content, 3, "p itself unchanged")
	require.Nil(t, p.only([]string{"video"}).Content)
	require.Equal(t, 2e6, p.only(nil).FullScreenBits)
}

// TestFitRecoversRecordedMotion: on a recording of a dragged window, the
// fit finds the cost of its moves (the kind recording-motion) of a
// synthetic encoder, with the recorded kind's own cost beside it; without
// the motion cost the model is measurably off.
func TestFitRecoversRecordedMotion(t *testing.T) {
	rec := recordingtest.Drag(t, filepath.Join(t.TempDir(), "drag.labrec"), 100*time.Millisecond, 30)
	require.Greater(t, rec.Frames[3].Moved, screen.MotionShare)
	synctest.Test(t, func(t *testing.T) {
		want := Params{FullScreenBits: 2e6, KeyframeFactor: 2, MinFrameBytes: 500,
			Content: []encoder.ContentCost{{Kind: screen.SourceRecordingMotion, MotionBits: 64e3}}}
		cases := recordedCases(rec)
		require.Equal(t, []string{screen.SourceRecording, screen.SourceRecordingMotion}, kindsOf(cases))
		start := want
		start.Content = nil
		refits(t, cases, want, start, Grid{MotionBits: []float64{0, 16e3, 64e3, 256e3}, KindMinFrameBytes: []int{0, 1200, 5000}})
	})
}

// recordedCases are a recording's cases at 0.1, 1 and 8 Mbit/s, over all
// of it.
func recordedCases(rec *recording.Recording) []Case {
	var cases []Case
	for _, bps := range []int{100_000, 1_000_000, 8_000_000} {
		cases = append(cases, Case{Kind: screen.SourceRecording, Recording: rec, Bitrate: bps, Length: rec.Duration()})
	}
	return cases
}

// refits checks that the fit over grid, from start, finds want, the
// parameters the reference was made with, exactly, and that start is
// measurably off.
func refits(t *testing.T, cases []Case, want, start Params, grid Grid) {
	t.Helper()
	ref, err := ModelSummaries(cases, want.Apply(bareModel), 0)
	require.NoError(t, err)
	got, loss, err := Fit(cases, ref, start.Apply(bareModel), grid, 0)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Zero(t, loss)
	sums, err := ModelSummaries(cases, start.Apply(bareModel), 0)
	require.NoError(t, err)
	require.Greater(t, Loss(sums, ref), 0.01)
}

// TestFitRecoversFillExponent: on a recording whose damage is a large box
// of which a small patch changes each frame (a fill of about a tenth), the
// fit finds the exponent a synthetic encoder weighs the fill by; ignoring
// the fill the model is measurably off.
func TestFitRecoversFillExponent(t *testing.T) {
	const w, h = 320, 180
	rec := recordingtest.Write(t, filepath.Join(t.TempDir(), "patch.labrec"), recording.Meta{Width: w, Height: h, Refresh: 60, Kind: "test"},
		func(add recordingtest.Add) {
			f := codec.NewFrame(w, h)
			for i := range f.Pix {
				f.Pix[i] = uint32(i*2654435761) & 0xFFFFFF // detail everywhere
			}
			add(0, f, nil)
			box := codec.Rect{X: 40, Y: 20, W: 160, H: 90}
			for i := range 30 {
				g := f.Clone()
				// A 40x36 patch of the box changes: a tenth of it.
				for y := box.Y + 2*(i%10); y < box.Y+2*(i%10)+36; y++ {
					for x := box.X + 4*(i%10); x < box.X+4*(i%10)+40; x++ {
						g.Pix[y*w+x] ^= 0x5A5A5A
					}
				}
				add(time.Duration(i+1)*100*time.Millisecond, g, []codec.Rect{box})
				f = g
			}
		})
	fill := screen.RecordedFill(&rec.Frames[3], rec.Meta)
	require.InDelta(t, 0.1, fill, 0.001)
	synctest.Test(t, func(t *testing.T) {
		want := Params{FullScreenBits: 2e6, KeyframeFactor: 2, MinFrameBytes: 500, FillExponent: 0.5}
		start := want
		start.FillExponent = 0
		refits(t, recordedCases(rec), want, start, Grid{FillExponent: []float64{0, 0.25, 0.5, 1}})
	})
}
