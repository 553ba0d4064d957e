package scenarios

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
)

// tinyRecording is the committed fixture the tests' scenarios replay:
// 64x36 at 60 Hz, a flat screen with stripes at 0 s, a box of stripes at
// 500 ms and another at 1 s; it lasts 1 s and a refresh. go test
// ./scenarios -run TestRecordingFixture -update writes it again.
const tinyRecording = "testdata/recordings/tiny.labrec"

func writeTinyRecording(t *testing.T, path string) {
	t.Helper()
	const w, h = 64, 36
	meta := recording.Meta{Width: w, Height: h, Refresh: 60, Kind: "test",
		Script:  "a flat screen with stripes, a box of stripes at 500 ms and another at 1 s",
		Command: "go test ./scenarios -run TestRecordingFixture -update"}
	recordingtest.Write(t, path, meta, func(add recordingtest.Add) {
		f := codec.NewFrame(w, h)
		for i := range f.Pix {
			f.Pix[i] = 0x303030
			if i%w%2 == 0 && i/w >= 30 {
				f.Pix[i] = 0xe0e0e0
			}
		}
		add(0, f, nil)
		for i, r := range []codec.Rect{{X: 8, Y: 4, W: 16, H: 8}, {X: 40, Y: 16, W: 16, H: 8}} {
			f = f.Clone()
			for y := r.Y; y < r.Y+r.H; y++ {
				for x := r.X; x < r.X+r.W; x += 2 {
					f.Pix[y*w+x] = 0xffffff
				}
			}
			add(time.Duration(i+1)*500*time.Millisecond, f, []codec.Rect{r})
		}
	})
}

// TestRecordingFixture checks the committed fixture is the recording
// writeTinyRecording describes (its index: the pixels' bytes follow the
// compressor's version).
func TestRecordingFixture(t *testing.T) {
	if *update {
		writeTinyRecording(t, tinyRecording)
	}
	want := filepath.Join(t.TempDir(), "tiny.labrec")
	writeTinyRecording(t, want)
	a, err := recording.Open(tinyRecording)
	require.NoError(t, err, "go test ./scenarios -run TestRecordingFixture -update writes it")
	b, err := recording.Open(want)
	require.NoError(t, err)
	require.Equal(t, b.Meta, a.Meta)
	require.Equal(t, b.Frames, a.Frames)
	require.Equal(t, time.Second+time.Second/60, a.Duration())
}

// TestRecordingPaths: a recording's path counts from the scenario file's
// folder, and the loader writes it absolute; a library file's counts from
// the repository's root; the loader shares one index per file.
func TestRecordingPaths(t *testing.T) {
	dir := t.TempDir()
	writeTinyRecording(t, filepath.Join(dir, "recs", "r.labrec"))
	file := filepath.Join(dir, "s.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: t\ndescription: d\nduration: 5s\nscreen:\n  - {at: 0s, source: recording, file: recs/r.labrec}\n"), 0o644))
	s, err := LoadFile(file)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "recs", "r.labrec"), s.Screen[0].File)
	a, err := OpenRecording(s.File, s.Screen[0].File)
	require.NoError(t, err)
	b, err := OpenRecording(file, "recs/r.labrec")
	require.NoError(t, err)
	require.Same(t, a, b, "one index per file")
	require.Len(t, a.Frames, 3)

	p, err := RecordingPath("library/x.yaml", "scenarios/"+tinyRecording)
	require.NoError(t, err)
	_, err = os.Stat(p)
	require.NoError(t, err, "a library file's path counts from the repository's root")
	_, err = RecordingPath("library/x.yaml", "/abs.labrec")
	require.ErrorContains(t, err, "absolute path")
	_, err = RecordingPath(file, "shared:x")
	require.ErrorContains(t, err, "no shared: form")
}
