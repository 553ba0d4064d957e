package calibrate

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
)

var recordedOut = flag.String("calibrate.recorded", "", "measure OpenH264 on every recording of testdata/recordings and write the table (recorded.md) into this folder")

// movingBlock writes a 320x180 recording: noise on the first frame, then
// a block of new noise at every tenth of a second up to blocks tenths,
// then nothing for two seconds: one last frame, whose damage changes no
// pixel.
func movingBlock(t *testing.T, blocks int) *recording.Recording {
	t.Helper()
	meta := recording.Meta{Width: 320, Height: 180, Refresh: 60, Kind: "test"}
	return recordingtest.Write(t, filepath.Join(t.TempDir(), "block.labrec"), meta, func(add recordingtest.Add) {
		rng := rand.New(rand.NewPCG(1, 2))
		f := codec.NewFrame(320, 180)
		for i := range f.Pix {
			f.Pix[i] = rng.Uint32() & 0xffffff
		}
		add(0, f, nil)
		for k := 1; k < blocks; k++ {
			f = f.Clone()
			r := codec.Rect{X: 16 * k % 288, Y: 64, W: 32, H: 32}
			for y := r.Y; y < r.Y+r.H; y++ {
				for x := r.X; x < r.X+r.W; x++ {
					f.Pix[y*320+x] = rng.Uint32() & 0xffffff
				}
			}
			add(time.Duration(k)*100*time.Millisecond, f, []codec.Rect{r})
		}
		add(time.Duration(blocks-1)*100*time.Millisecond+2*time.Second, f.Clone(), []codec.Rect{{X: 0, Y: 0, W: 8, H: 8}})
	})
}

// TestRealRecordedOffersTheRecordingsChanges: the encoder is offered a
// picture at the first tick after each recorded frame that changed pixels
// and at no other (no skips at a generous target), so a still stretch,
// and a redraw of the same pixels, cost nothing.
func TestRealRecordedOffersTheRecordingsChanges(t *testing.T) {
	openh264test.Require(t)
	rec := movingBlock(t, 20)
	frames, err := RealRecorded(rec, 8_000_000, time.Minute, false)
	require.NoError(t, err)
	var at []time.Duration
	for _, f := range frames {
		require.False(t, f.Skipped, "at %v", f.At)
		at = append(at, f.At)
	}
	want := []time.Duration{0}
	for k := 1; k < 20; k++ {
		// The first tick of 60 Hz at or after k tenths of a second.
		want = append(want, time.Duration(k)*100*time.Millisecond)
	}
	require.Len(t, at, len(want))
	for i := range want {
		require.InDelta(t, float64(want[i]), float64(at[i]), float64(time.Second/60), "frame %d", i)
	}
	require.True(t, frames[0].Keyframe)
	require.Equal(t, 10, changes(rec, time.Second, 2*time.Second), "ten changes a second")
	require.Zero(t, changes(rec, 2*time.Second, 4*time.Second), "the redraw in the still stretch changes nothing")
}

// TestRealOnARecordingIsRealRecorded: OpenH264 driven through a recorded
// case (the screen model's versions, the painter's pictures of the
// recorded pixels) makes frame for frame what it makes driven straight
// from the recording, byte counts included: the model and the real
// encoder of a comparison see the same changes at the same ticks.
func TestRealOnARecordingIsRealRecorded(t *testing.T) {
	openh264test.Require(t)
	rec := movingBlock(t, 20)
	for _, bps := range []int{100_000, 2_000_000} {
		want, err := RealRecorded(rec, bps, time.Minute, false)
		require.NoError(t, err)
		got, err := Real(Case{Kind: screen.SourceRecording, Recording: rec, Bitrate: bps, Length: rec.Duration()})
		require.NoError(t, err)
		require.Equal(t, want, got, "at %d bit/s", bps)
	}
	_, err := Real(Case{Kind: "typing", Recording: rec, Bitrate: 1e6, Length: time.Second})
	require.ErrorContains(t, err, `a recorded case's kind is "recording", not "typing"`)
}

// TestCompareRecorded runs the comparison on a small recording with a
// small grid: every configuration ran every case, and the fit on the
// recording is no worse than the budget it starts from.
func TestCompareRecorded(t *testing.T) {
	openh264test.Require(t)
	rec := movingBlock(t, 50) // ten changes a second for 5 s
	grid := Grid{FullScreenBits: []float64{1e6, 4e6}, KeyframeFactor: []float64{2, 4}, MinFrameBytes: []int{100, 300},
		KindMinFrameBytes: []int{0, 2000}, KeyframeBits: []float64{0, 1e6}}
	synctest.Test(t, func(t *testing.T) {
		cmp, err := CompareRecorded([]*recording.Recording{rec}, []int{250_000, 2_000_000}, time.Minute, grid, nil)
		require.NoError(t, err)
		require.Len(t, cmp.Rows, 2)
		for _, name := range RecordedModels {
			require.Len(t, cmp.Model[name], 2, name)
			require.Len(t, cmp.Sent[name], 2, name)
		}
		require.LessOrEqual(t, cmp.Loss[ModelRefit], cmp.Loss[ModelBudget], "the refit is no worse than the budget it starts from")
		require.LessOrEqual(t, cmp.Loss[ModelRecorded], cmp.Loss[ModelPainted], "the recorded cost is no worse than the painter's calibration it adds to")
		// The painter's calibration held: the recorded model differs from it
		// by the recorded kind's cost alone.
		held := cmp.Params[ModelRecorded].only([]string{"animation", "typing", "scrolling", "video", "photo", "still"})
		require.Equal(t, cmp.Params[ModelPainted].canonical(), held.canonical())
		// The painter's calibration is the preset without its recorded
		// costs, which the preset carries beside it.
		require.Equal(t, cmp.Preset.only([]string{"animation", "typing", "scrolling", "video", "photo", "still"}), cmp.Params[ModelPainted])
		for _, kind := range RecordedKinds {
			_, ok := cmp.Preset.cost(kind)
			require.True(t, ok, kind)
		}
		for i, row := range cmp.Rows {
			require.Equal(t, "test", row.Kind)
			// From the warm-up, 30 changes up to 4.9 s, then none.
			require.InDelta(t, 30/(rec.Duration()-RecordedWarmup).Seconds(), row.Changes, 1e-9, "changes a second")
			require.Positive(t, row.Sent, "case %d", i)
			// The budget sends something, less than the target: a block
			// of a fiftieth of the screen ten times a second needs less.
			require.Positive(t, cmp.Sent[ModelBudget][i], "case %d", i)
			require.Less(t, cmp.Sent[ModelBudget][i], float64(row.Bitrate), "case %d", i)
		}
		require.Contains(t, cmp.ErrorTable(), "| test |")
		require.Contains(t, cmp.SentTable(), "| test | 0.25 Mbit/s |")
		require.Contains(t, cmp.ParamsTable(), "| recorded |")
		require.Contains(t, cmp.ParamsTable(), "| refit |")
	})
}

// TestRecordedReport compares, with -calibrate.recorded DIR, the model
// with OpenH264 on the corpus of recordings and writes recorded.md there:
// what each sent against the target, the model's errors per content kind
// before (the budget, the painter's calibration) and after a fit on the
// recordings, and the parameters.
func TestRecordedReport(t *testing.T) {
	if *recordedOut == "" {
		t.Skip("skipping: -calibrate.recorded DIR measures the corpus (go test ./agent/encoder/calibrate -run TestRecordedReport -calibrate.recorded $PWD/testdata/calibrate/recorded -v -timeout 60m)")
	}
	openh264test.Require(t)
	files, err := filepath.Glob("../../../testdata/recordings/*.labrec")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recordings in testdata/recordings")
	var recs []*recording.Recording
	for _, f := range files {
		rec, err := recording.Open(f)
		require.NoError(t, err)
		recs = append(recs, rec)
	}
	synctest.Test(t, func(t *testing.T) {
		cmp, err := CompareRecorded(recs, []int{250_000, 500_000, 1_000_000, 2_000_000, 4_000_000}, 20*time.Second, DefaultGrid, os.Stderr)
		require.NoError(t, err)
		md := "# OpenH264 and the H.264 model on recorded desktops\n\n" +
			"Written by `go test ./agent/encoder/calibrate -run TestRecordedReport -calibrate.recorded DIR`: OpenH264 " + openh264.Version() +
			" at 1280x720, 60 Hz, frame skipping on, each recording of testdata/recordings for up to 20 s, figures from " + RecordedWarmup.String() + " on.\n\n" +
			"## What each sent against the target\n\n" + cmp.SentTable() +
			"\n## OpenH264's frames\n\n" + RecordedTable(cmp.Rows) +
			"\n## The model's error per content kind\n\n" + cmp.ErrorTable() +
			"\nbudget: the budget's sizes; painted: the preset " + encoder.PresetOpenH264Asm + ", fitted on the painter's content; recorded: it with a cost for recorded content fitted here, every other parameter held; refit: every parameter fitted here from the budget's.\n" +
			"\n## The parameters\n\n" + cmp.ParamsTable()
		t.Logf("the preset %s carries the recorded costs fitted here: %v", encoder.PresetOpenH264Asm, cmp.PresetCarriesRecorded())
		require.NoError(t, os.MkdirAll(*recordedOut, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(*recordedOut, "recorded.md"), []byte(md), 0o644))
		t.Logf("\n%s", md)
	})
}
