package lab_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
	"github.com/nuvirahub/latencylab/internal/timerprobe"
	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The stretches of the recording writeBursty makes.
const (
	burstyTyping = time.Second             // a keystroke every 100 ms until then
	burstyStill  = 3 * time.Second         // then the caret redrawn unchanged until here
	burstyScroll = 3500 * time.Millisecond // then a scroll at every refresh until here
	burstyEnd    = 4 * time.Second         // then unchanged redraws until here
)

// writeBursty records a 64x36 desktop at 60 Hz: keystrokes every 100 ms
// for a second, two seconds in which only the caret is redrawn, the same
// (damage, no change), half a second of scrolling at every refresh, and
// half a second of unchanged redraws again.
func writeBursty(t *testing.T, path string) *recording.Recording {
	t.Helper()
	const w, h = 64, 36
	meta := recording.Meta{Width: w, Height: h, Refresh: 60, Kind: "test", Script: "keystrokes, a still caret, a scroll"}
	return recordingtest.Write(t, path, meta, func(add recordingtest.Add) { addBursty(w, h, add) })
}

// addBursty adds writeBursty's frames.
func addBursty(w, h int, add recordingtest.Add) {
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = 0xf0f0f0
	}
	add(0, f, nil)
	caret := []codec.Rect{{X: 60, Y: 2, W: 2, H: 6}}
	for k := int64(1); ; k++ {
		at := screen.Tick(k, 60)
		if at >= burstyEnd {
			break
		}
		g := f.Clone()
		var damage []codec.Rect
		switch {
		case at < burstyTyping && at%(100*time.Millisecond) == 0:
			x := int(at/(100*time.Millisecond)) * 4
			damage = []codec.Rect{{X: x, Y: 2, W: 4, H: 6}}
			for y := 2; y < 8; y += 2 {
				g.Pix[y*w+x+1] = 0x101010
			}
		case at >= burstyStill && at < burstyScroll:
			damage = []codec.Rect{{X: 0, Y: 10, W: w, H: 26}}
			for y := 10; y < h; y++ {
				for x := range w {
					g.Pix[y*w+x] = uint32((x*7 + y*13 + int(k)*5) % 256 * 0x010101)
				}
			}
		default:
			damage = caret
		}
		add(at, g, damage)
		f = g
	}
}

// recordedScenario is a LAN session of the given length replaying file
// from the start, refinement off so that every frame is a new image.
func recordedScenario(name, file string, length time.Duration) string {
	return fmt.Sprintf(`name: %s
description: A recorded desktop replayed on a LAN.
duration: %s
seed: 1
network: {both: {delay: 10ms}}
screen: [{at: 0s, source: recording, file: %s}]
agent: {frame_sizes: budget, refine: off}
controller: {bitrate: 4Mbit/s}
`, name, scenarios.FormatDuration(length), file)
}

// checkReplay checks a session's result against the recording its screen
// replays from its start (looping): the screen changed exactly when the
// recording did, and the agent sent a frame only for a new version of the
// screen, none in a stretch where the recording did not change.
func checkReplay(t *testing.T, how string, rec *recording.Recording, res *result.Run) {
	t.Helper()
	// The instants, from the recording's index alone.
	want := []time.Duration{0}
	span := rec.Duration() - rec.Frames[0].At
	for base := time.Duration(0); base < res.Duration; base += span {
		if base > 0 {
			want = append(want, screen.NextTick(base, 60))
		}
		for i, f := range rec.Frames[1:] {
			at := base + rec.Frames[i+1].At - rec.Frames[0].At
			if f.Changed > 0 && at < res.Duration {
				if tick := screen.NextTick(at, 60); tick != want[len(want)-1] {
					want = append(want, tick)
				}
			}
		}
	}
	got := res.ScreenChanges
	require.Equal(t, want[:len(got)], got, "%s: the screen changes when the recording did", how)
	require.GreaterOrEqual(t, len(got), len(want)-2, "%s: the changes up to the session's end", how)
	var last uint64
	for _, f := range res.Frames {
		if f.Pass != 0 {
			continue
		}
		require.Greater(t, f.Version, last, "%s: frame %d (captured %v) carries no new version", how, f.Seq, f.Captured)
		require.GreaterOrEqual(t, f.Captured, got[f.Version-1], "%s: frame %d", how, f.Seq)
		last = f.Version
	}
	require.Positive(t, res.Summary.Displayed, how)
}

// TestRecordedReplay replays a recording in a native session (virtual
// time), in a real-time one (its first two seconds) and in two exact ones
// side by side: the screen changes at the
// recording's instants, frames go only with a change, none in the
// recording's still stretch, and the exact sessions give the same bytes.
func TestRecordedReplay(t *testing.T) {
	dir := t.TempDir()
	rec := writeBursty(t, filepath.Join(dir, "rec", "bursty.labrec"))
	file := filepath.Join(dir, "bursty.yaml")
	// 6 s: the recording, then again from its start.
	require.NoError(t, os.WriteFile(file, []byte(recordedScenario("recorded-bursty", "rec/bursty.labrec", 6*time.Second)), 0o644))
	sc, err := scenarios.LoadFile(file)
	require.NoError(t, err)

	check := func(how string, res *result.Run) {
		t.Helper()
		checkReplay(t, how, rec, res)
		// Ten keystrokes, nothing while the caret is redrawn, a frame at
		// most every refresh while it scrolls.
		count := func(from, to time.Duration) int {
			n := 0
			for _, f := range res.Frames {
				if f.Pass == 0 && f.Captured >= from && f.Captured < to {
					n++
				}
			}
			return n
		}
		require.Equal(t, 9, count(50*time.Millisecond, burstyTyping+50*time.Millisecond), "%s: a frame a keystroke", how)
		require.Zero(t, count(burstyTyping+50*time.Millisecond, burstyStill), "%s: no frame while the recording stands still", how)
		scroll := count(burstyStill, burstyScroll+50*time.Millisecond)
		require.InDelta(t, 30, scroll, 3, "%s: a frame a refresh while it scrolls", how)
		require.Zero(t, count(burstyScroll+50*time.Millisecond, rec.Duration()), "%s: nothing after the scroll", how)
		t.Logf("%s: %d frames, %d versions, latency median %v", how, len(res.Frames), len(res.ScreenChanges), res.Summary.Latency.Median)
	}

	t.Run("native", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res, err := lab.Run(t.Context(), sc)
			require.NoError(t, err)
			check("native", res)
		})
	})
	t.Run("realtime", func(t *testing.T) {
		// Two seconds of wall-clock time over loopback sockets and the
		// real-time proxy: the keystrokes and the still caret. The
		// screen's instants are the recording's; the frames depend on the
		// machine's timers, so only their versions are checked.
		timerprobe.Require(t, 50*time.Millisecond)
		rt, err := scenarios.LoadFile(file)
		require.NoError(t, err)
		rt.Duration = 2 * time.Second
		res, err := lab.RunRealTime(context.Background(), rt, lab.RealTimeConfig{})
		require.NoError(t, err)
		checkReplay(t, "realtime", rec, res)
	})
	t.Run("exact", func(t *testing.T) {
		if testing.Short() {
			t.Skip("skipping in -short: builds the exact guest on first use")
		}
		r, err := exact.Open(context.Background(), exact.Options{Root: ".."})
		require.NoError(t, err)
		// Two instances side by side, as lab/exact's own tests run them.
		var res [2]*result.Run
		errs := make(chan error, 2)
		for i := range res {
			go func() {
				r, err := r.Run(context.Background(), sc)
				if err == nil && r.Err != "" {
					err = fmt.Errorf("%s", r.Err)
				}
				res[i] = r.Result
				errs <- err
			}()
		}
		for range res {
			require.NoError(t, <-errs)
		}
		var got [2][]byte
		for i := range res {
			check("exact", res[i])
			got[i], err = json.Marshal(res[i])
			require.NoError(t, err)
		}
		require.Equal(t, string(got[0]), string(got[1]), "the same seed, the same bytes")
	})
}

// TestRecordedCorpus replays every recording of testdata/recordings in a
// native session of up to 20 s and in an exact one: the screen changes
// when the recording did, and no frame goes without a change.
func TestRecordedCorpus(t *testing.T) {
	files, err := filepath.Glob("../testdata/recordings/*.labrec")
	require.NoError(t, err)
	require.NotEmpty(t, files, "testdata/recordings holds the corpus of recorded desktops (*.labrec)")
	var guest *exact.Runner
	if !testing.Short() {
		guest, err = exact.Open(context.Background(), exact.Options{Root: ".."})
		require.NoError(t, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			rec, err := recording.Open(f)
			require.NoError(t, err)
			length := min(20*time.Second, max(2*time.Second, rec.Duration().Round(time.Second)))
			// A scenario built in Go: its path counts from the module's root.
			sc, err := scenarios.Parse("", []byte(recordedScenario("recorded-corpus", "testdata/recordings/"+filepath.Base(f), length)), nil)
			require.NoError(t, err)
			synctest.Test(t, func(t *testing.T) {
				res, err := lab.Run(t.Context(), sc)
				require.NoError(t, err)
				checkReplay(t, "native "+filepath.Base(f), rec, res)
			})
			if guest == nil {
				return // -short: the exact guest is not built
			}
			r, err := guest.Run(context.Background(), sc)
			require.NoError(t, err)
			require.Empty(t, r.Err, "exact session")
			checkReplay(t, "exact "+filepath.Base(f), rec, r.Result)
		})
	}
}

var recordedSpeed = flag.Bool("recorded.speed", false, "TestRecordedSpeed: time 20 s native sessions of a painted animation and of a recording of the same change rate")

// TestRecordedSpeed times, with -recorded.speed, a 20 s native session
// of the full-screen animation (the model's, no pixels) beside the same
// session replaying a recording that changes its whole screen at every
// refresh too (10 s, looped): the median wall time of five runs each.
//
//	go test ./lab -run TestRecordedSpeed -recorded.speed -v
func TestRecordedSpeed(t *testing.T) {
	if !*recordedSpeed {
		t.Skip("skipping: -recorded.speed times painted and recorded sessions (go test ./lab -run TestRecordedSpeed -recorded.speed -v)")
	}
	path := filepath.Join(t.TempDir(), "moving.labrec")
	const w, h = 64, 36
	recordingtest.Write(t, path, recording.Meta{Width: w, Height: h, Refresh: 60, Kind: "test"}, func(add recordingtest.Add) {
		for k := range int64(600) {
			f := codec.NewFrame(w, h)
			for i := range f.Pix {
				f.Pix[i] = uint32((i%w*5 + i/w*3 + int(k)*7) % 256 * 0x010101)
			}
			add(screen.Tick(k, 60), f, []codec.Rect{{W: w, H: h}})
		}
	})

	animation := strings.Replace(recordedScenario("speed-animation", "x", 20*time.Second),
		"[{at: 0s, source: recording, file: x}]", "[{at: 0s, source: animation}]", 1)
	recorded := recordedScenario("speed-recorded", path, 20*time.Second)
	for _, c := range []struct{ name, yaml string }{{"animation", animation}, {"recording", recorded}} {
		sc, err := scenarios.Parse("", []byte(c.yaml), nil)
		require.NoError(t, err)
		var walls []time.Duration
		var frames int
		for range 5 {
			began := time.Now()
			synctest.Test(t, func(t *testing.T) {
				res, err := lab.Run(t.Context(), sc)
				require.NoError(t, err)
				frames = len(res.Frames)
			})
			walls = append(walls, time.Since(began))
		}
		slices.Sort(walls)
		t.Logf("%s: 20 s session, %d frames, wall %v median (%v to %v)", c.name, frames, walls[2].Round(time.Millisecond),
			walls[0].Round(time.Millisecond), walls[4].Round(time.Millisecond))
	}
}
