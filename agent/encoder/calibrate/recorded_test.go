package calibrate

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

var recordedOut = flag.String("calibrate.recorded", "", "measure OpenH264 on every recording of testdata/recordings and write the table (recorded.md) into this folder")

// movingBlock writes a 320x180 recording: noise on the first frame, then
// a block of new noise at every tenth of a second until 2 s, then nothing
// until 3.9 s: one last frame, whose damage changes no pixel.
func movingBlock(t *testing.T) *recording.Recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "block.labrec")
	out, err := os.Create(path)
	require.NoError(t, err)
	w, err := recording.NewWriter(out, recording.Meta{Width: 320, Height: 180, Refresh: 60, Kind: "test"})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	f := codec.NewFrame(320, 180)
	for i := range f.Pix {
		f.Pix[i] = rng.Uint32() & 0xffffff
	}
	require.NoError(t, w.Add(0, f, nil))
	for k := 1; k < 20; k++ {
		f = f.Clone()
		r := codec.Rect{X: 16 * k % 288, Y: 64, W: 32, H: 32}
		for y := r.Y; y < r.Y+r.H; y++ {
			for x := r.X; x < r.X+r.W; x++ {
				f.Pix[y*320+x] = rng.Uint32() & 0xffffff
			}
		}
		require.NoError(t, w.Add(time.Duration(k)*100*time.Millisecond, f, []codec.Rect{r}))
	}
	require.NoError(t, w.Add(3900*time.Millisecond, f.Clone(), []codec.Rect{{X: 0, Y: 0, W: 8, H: 8}}))
	require.NoError(t, w.Close())
	require.NoError(t, out.Close())
	rec, err := recording.Open(path)
	require.NoError(t, err)
	return rec
}

// TestRealRecordedOffersTheRecordingsChanges: the encoder is offered a
// picture at the first tick after each recorded frame and at no other
// (no skips at a generous target), so a still stretch costs nothing.
func TestRealRecordedOffersTheRecordingsChanges(t *testing.T) {
	openh264test.Require(t)
	rec := movingBlock(t)
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
	want = append(want, 3900*time.Millisecond)
	require.Len(t, at, len(want))
	for i := range want {
		require.InDelta(t, float64(want[i]), float64(at[i]), float64(time.Second/60), "frame %d", i)
	}
	require.True(t, frames[0].Keyframe)
	require.Equal(t, 10, changes(rec, time.Second, 2*time.Second), "ten changes a second")
	require.Equal(t, 1, changes(rec, 2*time.Second, 4*time.Second), "one frame in the still stretch")
}

// TestRecordedReport measures OpenH264 on the corpus of recordings with
// -calibrate.recorded DIR and writes recorded.md there.
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
	rows, err := MeasureRecorded(recs, []int{500_000, 1_000_000, 2_000_000, 4_000_000}, 20*time.Second, os.Stderr)
	require.NoError(t, err)
	table := RecordedTable(rows)
	require.NoError(t, os.MkdirAll(*recordedOut, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(*recordedOut, "recorded.md"), []byte(table), 0o644))
	t.Logf("\n%s", table)
}
