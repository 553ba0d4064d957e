package calibrate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
)

// out, when set, makes TestCalibrationReport run the whole calibration and
// write its report there (height 1080 for the write-ups' screen):
//
//	go test ./agent/encoder/calibrate -run TestCalibrationReport -calibrate.out out/calibrate -v
//	go test ./agent/encoder/calibrate -run TestCalibrationReport -calibrate.out out/calibrate-1080p -calibrate.height 1080 -v -timeout 30m
var (
	out    = flag.String("calibrate.out", "", "run the whole calibration and write its report (report.md and plots) into this folder")
	height = flag.Int("calibrate.height", 720, "with -calibrate.out: the pictures' height, 720 or 1080 (16:9)")
	noSkip = flag.Bool("calibrate.noskip", false, "with -calibrate.out: OpenH264's frame skipping off")
)

// TestCalibrationReport runs the calibration and writes its report. Without
// -calibrate.out it runs a small one twice and checks the files are there
// and the same both times.
func TestCalibrationReport(t *testing.T) {
	openh264test.Require(t)
	if *out != "" {
		synctest.Test(t, func(t *testing.T) {
			o := Options{NoSkip: *noSkip}
			switch *height {
			case 720:
			case 1080:
				o.Width, o.Height = 1920, 1080
			default:
				t.Fatalf("-calibrate.height %d: want 720 or 1080", *height)
			}
			rep, err := Measure(o)
			require.NoError(t, err)
			require.NoError(t, WriteReport(*out, rep))
			t.Logf("\n%s\n%s\n%s", rep.ParamsTable(), rep.ErrorTable(), rep.ByKindTable())
			t.Logf("the preset %s carries the fitted parameters: %v", encoder.PresetOpenH264Asm, rep.PresetMatches())
		})
		return
	}
	small := Options{
		Kinds: []string{"animation", "typing"}, Bitrates: []int{250_000, 2_000_000}, Length: 2 * time.Second,
		Grid: Grid{FullScreenBits: []float64{1e6, 4e6}, KeyframeFactor: []float64{2, 4}, MinFrameBytes: []int{100, 300}},
	}
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		synctest.Test(t, func(t *testing.T) {
			rep, err := Measure(small)
			require.NoError(t, err)
			require.NoError(t, WriteReport(dir, rep))
			require.LessOrEqual(t, rep.LossAfter, rep.LossBefore, "the fit is no worse than the defaults it could have kept")
			require.NotEmpty(t, rep.Refine["real"])
			require.NotEmpty(t, rep.Step["real"])
			require.Len(t, rep.ByKind, len(small.Kinds))
		})
		dirs = append(dirs, dir)
	}
	for _, name := range []string{ReportMarkdown, PlotPFrames, PlotIFrames, PlotSkips, PlotRefine, PlotStep} {
		a, err := os.ReadFile(filepath.Join(dirs[0], name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dirs[1], name))
		require.NoError(t, err)
		require.NotEmpty(t, a, name)
		require.True(t, bytes.Equal(a, b), "%s differs between two runs", name)
	}
	md, err := os.ReadFile(filepath.Join(dirs[0], ReportMarkdown))
	require.NoError(t, err)
	require.Contains(t, string(md), "| animation |")
	require.Contains(t, string(md), "## Refinement on a still screen (N15)")
}
