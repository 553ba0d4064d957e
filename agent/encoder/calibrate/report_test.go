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
	"github.com/nuvirahub/latencylab/agent/screen"
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
			require.Len(t, rep.Offered, len(OfferStrides))
			for _, row := range rep.Offered {
				require.Positive(t, row.Real, "stride %d", row.Every)
				require.Positive(t, row.Fitted, "stride %d", row.Every)
			}
			for _, e := range Encoders {
				rs := Repairs(rep.Repair[e], RepairCase)
				require.Positive(t, rs.KeyBytes, "%s: no repair keyframe measured", e)
				require.Positive(t, rs.AfterBytes, "%s: no P frame after a repair measured", e)
			}
			require.Len(t, rep.ByKind, len(small.Kinds))
		})
		dirs = append(dirs, dir)
	}
	for _, name := range []string{ReportMarkdown, PlotPFrames, PlotIFrames, PlotSkips, PlotRefine, PlotStep, PlotRepair} {
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
	require.Contains(t, string(md), "## Repair keyframes")
	require.Contains(t, string(md), "## Frames offered at less than the frame rate")
	require.Contains(t, string(md), "The first ticks of each")
}

// TestRepairs checks the repair experiment's summary on frames made by
// hand: what comes before the first repair is left out, skipped frames
// are not frames, and only the P frames right after a keyframe count as
// following it.
func TestRepairs(t *testing.T) {
	c := Case{Length: 3 * time.Second, KeyframeEvery: time.Second}
	frames := []Frame{
		{At: 0, Bytes: 90_000, Keyframe: true}, // the session's first: before the repairs
		{At: 500 * time.Millisecond, Bytes: 5_000},
		{At: time.Second, Bytes: 40_000, Keyframe: true},
		{At: 1100 * time.Millisecond, Bytes: 9_000},
		{At: 1200 * time.Millisecond, Skipped: true},
		{At: 1300 * time.Millisecond, Bytes: 7_000},
		{At: 2 * time.Second, Bytes: 60_000, Keyframe: true},
		{At: 2100 * time.Millisecond, Bytes: 3_000},
	}
	for range repairFollowers {
		frames = append(frames, Frame{At: 2500 * time.Millisecond, Bytes: 1_000})
	}
	for range 5 { // beyond the followers
		frames = append(frames, Frame{At: 2900 * time.Millisecond, Bytes: 20_000})
	}
	rs := Repairs(frames, c)
	// Frames from 1 s: 2 keyframes and 2+1+6+5 P frames over 2 s.
	require.InDelta(t, 16.0/2, rs.FPS, 1e-9)
	require.InDelta(t, 8*float64(40_000+9_000+7_000+60_000+3_000+repairFollowers*1_000+5*20_000)/2, rs.SentBPS, 1e-6)
	require.InDelta(t, 50_000, rs.KeyBytes, 1e-9)
	// Following: 9000, 7000 after the first; 3000 and five of the 1000s
	// after the second (six in all).
	require.InDelta(t, 1_000, rs.AfterBytes, 1e-9)
	rs = Repairs(frames[:6], c)
	require.InDelta(t, 8_000, rs.AfterBytes, 1e-9)
}

// TestOfferEvery checks the offer experiment's driving: offered at every
// other tick, the encoder sees 30 pictures a second, each at an even tick.
func TestOfferEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := encoder.Preset(encoder.PresetOpenH264Asm)
		require.NoError(t, err)
		cfg.SkipBuffer = -1 // no skips: every offer is a frame
		frames, err := Model(Case{Kind: "animation", Bitrate: 8_000_000, Length: time.Second, OfferEvery: 2}, cfg)
		require.NoError(t, err)
		require.Len(t, frames, 30)
		for i, f := range frames {
			require.Equal(t, screen.Tick(int64(2*i), Rate), f.At)
		}
	})
}

// TestOpening checks the ticks the offer experiment shows: a character a
// tick, the keyframe, frames coded and skipped, and ticks with no frame
// offered; refinement passes and ticks past the end left out.
func TestOpening(t *testing.T) {
	tick := func(k int64) time.Duration { return screen.Tick(k, Rate) }
	frames := []Frame{
		{At: tick(0), Bytes: 50_000, Keyframe: true},
		{At: tick(1), Skipped: true},
		{At: tick(2), Bytes: 4_000},
		{At: tick(4), Bytes: 4_000},
		{At: tick(5), Bytes: 20, Pass: 1},
		{At: tick(6), Skipped: true},
		{At: tick(9), Bytes: 4_000},
	}
	require.Equal(t, "K-x.x.-.", opening(frames, 8))
}
