package encoder_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/capture"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/dist"
)

func refresh(k int64) time.Duration { return screen.Tick(k, 60) }

func preset(t *testing.T, name string, change func(*encoder.Config)) *encoder.H264 {
	t.Helper()
	cfg, err := encoder.Preset(name)
	require.NoError(t, err)
	// The rules under test are the budget's; the OpenH264 presets' own
	// sizes, fitted to the real encoder, are TestOpenH264PresetsAreCalibrated's.
	cfg = encoder.Budgeted(cfg)
	if change != nil {
		change(&cfg)
	}
	e, err := encoder.New(1, cfg)
	require.NoError(t, err)
	return e
}

func opened(t *testing.T, name string, change func(*encoder.Config)) *encoder.H264 {
	t.Helper()
	e := preset(t, name, change)
	require.NoError(t, e.Open())
	return e
}

func newScreen(t *testing.T, seed uint64, phases ...screen.Phase) *screen.Model {
	t.Helper()
	m, err := screen.New(seed, screen.Config{Timeline: phases})
	require.NoError(t, err)
	return m
}

// run polls scr at every refresh until end and encodes every new image, as
// the fixed pipeline does when the encoder is faster than the refresh, and
// returns the frames.
func run(t *testing.T, e encoder.Encoder, scr screen.Screen, end time.Duration) []encoder.Frame {
	t.Helper()
	epoch := time.Now()
	var frames []encoder.Frame
	var taken uint64
	for k := int64(0); refresh(k) < end; k++ {
		if now := time.Since(epoch); now > refresh(k) {
			continue // the encoder was still busy at that refresh
		}
		time.Sleep(time.Until(epoch.Add(refresh(k))))
		img, d := scr.Since(taken, refresh(k))
		if d.Changed == 0 {
			continue
		}
		f, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		frames = append(frames, f)
		taken = img.Version
	}
	return frames
}

func TestEncodeTakesThePresetsTime(t *testing.T) {
	for name, want := range map[string]time.Duration{
		encoder.PresetOpenH264Asm: 9 * time.Millisecond,
		encoder.PresetOpenH264:    19 * time.Millisecond,
		encoder.PresetBusyPC:      130 * time.Millisecond,
		encoder.PresetQuickSync:   4 * time.Millisecond,
		encoder.PresetNVENC:       3 * time.Millisecond,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := opened(t, name, nil)
				scr := newScreen(t, 1)
				img, d := scr.Since(0, 0)
				start := time.Now()
				f, err := e.Encode(encoder.Input{Image: img, Delta: d})
				require.NoError(t, err)
				require.Equal(t, want, time.Since(start))
				require.Equal(t, want, f.EncodeTime)
				require.Equal(t, start, f.Start)
				require.Equal(t, start.Add(want), f.End)
				require.Equal(t, name, f.Encoder)
			})
		})
	}
}

func TestSizesFollowTheBitrate(t *testing.T) {
	bytes := map[int]int{}
	for _, bps := range []int{5_000_000, 10_000_000} {
		synctest.Test(t, func(t *testing.T) {
			e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { c.Bitrate = bps })
			frames := run(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), time.Second)
			require.Len(t, frames, 60)
			// The first frame is a keyframe of four frame budgets, its
			// overhead included.
			require.True(t, frames[0].Keyframe)
			require.Equal(t, int(math.Ceil(4*float64(bps)/60/8)), frames[0].Bytes)
			for _, f := range frames[1:] {
				require.False(t, f.Keyframe)
				// One frame's budget, the animation needing far more.
				require.InDelta(t, float64(bps)/60/8, f.Bytes, 1)
				require.False(t, f.Matched)
				bytes[bps] += f.Bytes
			}
			// Bytes a second: the bitrate, the frames' overhead included.
			require.InDelta(t, float64(bps)/8*59/60, bytes[bps], 60)
		})
	}
	ratio := float64(bytes[10_000_000]) / float64(bytes[5_000_000])
	t.Logf("animation, 59 P-frames: %d bytes at 5 Mbit/s, %d at 10 Mbit/s: x%.4f", bytes[5_000_000], bytes[10_000_000], ratio)
	require.InDelta(t, 2, ratio, 0.01)
}

// runSkipping is run with the rate control asked before each new image,
// as the pipeline asks it: a skipped image is not encoded, and its changes
// go with the next frame's. It returns the frames and the refreshes they
// were taken at.
func runSkipping(t *testing.T, e *encoder.H264, scr screen.Screen, end time.Duration) ([]encoder.Frame, []int64) {
	t.Helper()
	return runOffering(t, e, scr, end, 1)
}

// runOffering is runSkipping offering the encoder every stride-th refresh
// only, as a pipeline whose sender is full at the others does.
func runOffering(t *testing.T, e *encoder.H264, scr screen.Screen, end time.Duration, stride int64) ([]encoder.Frame, []int64) {
	t.Helper()
	epoch := time.Now()
	var frames []encoder.Frame
	var at []int64
	var taken uint64
	for k := int64(0); refresh(k) < end; k += stride {
		if time.Since(epoch) > refresh(k) {
			continue // the encoder was still busy at that refresh
		}
		time.Sleep(time.Until(epoch.Add(refresh(k))))
		img, d := scr.Since(taken, refresh(k))
		if d.Changed == 0 || e.SkipFrame(time.Now()) {
			continue
		}
		f, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		frames, at = append(frames, f), append(at, k)
		taken = img.Version
	}
	return frames, at
}

// At a target too low for a frame of useful size at every refresh, frames
// keep that size and the rate control skips enough of them to hold the
// target: the frame rate drops, as OpenH264's does with frame skipping.
func TestLowBitrateLowersTheFrameRate(t *testing.T) {
	for _, tc := range []struct {
		bps  int
		fps  float64 // bps / (8 x (300 + 20) bytes)
		skip bool
	}{
		{50_000, 50_000.0 / 2560, true},
		{100_000, 100_000.0 / 2560, true},
		{500_000, 60, false}, // 1042 bytes a refresh: above the smallest frame
	} {
		synctest.Test(t, func(t *testing.T) {
			e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { c.Bitrate = tc.bps })
			frames, _ := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 20*time.Second)
			// The first second fills the buffer; then the steady state.
			var bytes int
			var n int
			for _, f := range frames {
				if f.Start.Sub(frames[0].Start) < time.Second {
					continue
				}
				require.False(t, f.Keyframe, "a skipped image's changes go with the next frame: no keyframe")
				if tc.skip {
					require.Equal(t, encoder.DefaultMinFrameBytes+20, f.Bytes)
				}
				bytes += f.Bytes
				n++
			}
			fps := float64(n) / 19
			t.Logf("%d bit/s: %.1f frames/s of %d bytes, %.1f kbit/s sent", tc.bps, fps, bytes/n, float64(bytes)*8/19/1000)
			require.InDelta(t, tc.fps, fps, 0.02*tc.fps)
			if tc.skip {
				// The output is the target: the buffer charges the frames'
				// overhead too.
				require.InDelta(t, float64(tc.bps), float64(bytes)*8/19, 0.01*float64(tc.bps))
			}
		})
	}
}

// The rate control's buffer, exactly: 2020-byte frames (a 2000-byte
// smallest frame and 20 of overhead, 16 160 bits) against 100 kbit/s, and a
// threshold of 100 ms (10 000 bits). The keyframe at 0 fills the buffer to
// 16 160 bits; it drains 1667 bits a refresh, below the threshold at
// refresh 4 (9493 bits), where the next frame fills it to 25 653; that
// drains below 10 000 at refresh 14 (8986), and the frame there's 25 146
// at refresh 24 (8479; 10 146 at 23). Once skipped, a frame's time
// is not passed on to the next: each spends the smallest frame, not the
// time since the frame before.
func TestSkipBufferFillsAndDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) {
			c.Bitrate, c.MinFrameBytes, c.SkipBuffer = 100_000, 2000, 100*time.Millisecond
		})
		frames, at := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 450*time.Millisecond)
		require.Equal(t, []int64{0, 4, 14, 24}, at)
		for _, f := range frames {
			require.Equal(t, 2020, f.Bytes)
		}
		require.True(t, frames[0].Keyframe)
	})
	// The buffer drains no lower than a quarter of a second's bitrate of
	// credit (25 000 bits): after a still second, the first moving frames
	// spend that credit. The first after the pause has the longest span's
	// budget, 250 ms (25 000 bits), the others 16 160; the threshold is
	// 10 000 bits and the buffer drains 100 bits a ms. At 1 s: -25 000 +
	// 25 000 = 0; a refresh later -1 667 + 16 160 = 14 493; under 10 000
	// again 45 ms on, at refresh 64 (1066.7 ms). Without the credit the
	// first frame would leave 25 000 and the next wait for refresh 69.
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) {
			c.Bitrate, c.MinFrameBytes, c.SkipBuffer = 100_000, 2000, 100*time.Millisecond
		})
		frames, at := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Still{}}, screen.Phase{At: time.Second, Source: screen.Animation{}}), 1200*time.Millisecond)
		require.Equal(t, []int64{0, 60, 61, 64}, at)
		require.Equal(t, 3125, frames[1].Bytes, "250 ms at 100 kbit/s")
	})
	// Negative: no skipping, every refresh a smallest frame, three times
	// the target.
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { c.Bitrate, c.SkipBuffer = 50_000, -1 })
		frames, _ := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), time.Second)
		require.Len(t, frames, 60)
		require.Equal(t, 320, frames[30].Bytes)
	})
	// No smallest frame either: a frame of one budget at every refresh,
	// 105 bytes at 50 kbit/s of which 20 are overhead.
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { c.Bitrate, c.MinFrameBytes, c.SkipBuffer = 50_000, -1, -1 })
		frames, _ := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), time.Second)
		require.Len(t, frames, 60)
		require.Equal(t, int(math.Ceil(50_000.0/60/8)), frames[30].Bytes)
	})
}

// OpenH264's bitrate mode (SkipByFrames) owes each frame offered 1/60 s of
// the bitrate and shares a group of eight coded frames' bits: frames of
// twice their due, after a keyframe of four dues, are coded every other
// refresh once the group runs short (worked by hand below), which holds
// the target; offered every other refresh, the same frames are coded at
// half that rate, and the output is half the target, where the time rule
// would hold the target whatever the rate of offers.
func TestSkipByFramesCountsTheFramesOffered(t *testing.T) {
	// 96 kbit/s: 1600 bits owed a frame at 60 Hz. Frames of new content
	// cost their smallest size, 380 + 20 bytes (2 dues); the keyframe four
	// budgets, 781 + 20 (4 dues). The group starts with 8 dues: after the
	// keyframe 4 left, after the first P frame 2, and the 6 frames still
	// to come want 6 x 0.55 = 3.3, short by 1.3 dues, more than the
	// slack's 1.2: the next frame is skipped, which returns its due to the
	// group; and so on until the group's eighth frame (refresh 13). The
	// next group starts 3 dues short and carries it: 5 left, then 3 after
	// its first frame (enough for 7 x 0.55 - 3 = 0.85), 1 after its second.
	cfg := func(c *encoder.Config) {
		c.Bitrate, c.MinFrameBytes, c.SkipRule = 96_000, 380, encoder.SkipByFrames
	}
	pattern := func(at []int64, n int64) string {
		b := []byte(strings.Repeat("-", int(n)))
		for _, k := range at {
			if k < n {
				b[k] = 'x'
			}
		}
		return string(b)
	}
	var full []int64
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, cfg)
		frames, at := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 2*time.Second)
		require.Equal(t, 801, frames[0].Bytes, "four dues, and a byte of rounding: 1/60 s is 16 666 667 ns")
		require.Equal(t, 400, frames[1].Bytes)
		require.Equal(t, "xx-x-x-x-x-x-x-xx-x-", pattern(at, 20))
		full = at
	})
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, cfg)
		_, at := runOffering(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 2*time.Second, 2)
		require.InDelta(t, float64(len(full))/2, float64(len(at)), 1, "coded at 30 offers a second: %d, at 60: %d", len(at), len(full))
	})
	// Frames of ten dues: the group's rule alone skips one frame in two,
	// five times the target; the buffer, over half a second of bitrate
	// within a few frames, skips runs of frames (as many in a row as half
	// the dues it holds), which brings the output near the target.
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { cfg(c); c.MinFrameBytes = 1980 })
		frames, at := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 4*time.Second)
		longest := int64(0)
		for i := 1; i < len(at); i++ {
			longest = max(longest, at[i]-at[i-1]-1)
		}
		require.Greater(t, longest, int64(1), "runs of skips")
		bits := 0
		for i, f := range frames {
			if at[i] >= 120 {
				bits += 8 * f.Bytes
			}
		}
		require.InDelta(t, 96_000, float64(bits)/2, 0.25*96_000, "the output from 2 s")
	})
	// The time rule, offered the same: the output holds the target.
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { cfg(c); c.SkipRule = encoder.SkipByTime })
		_, at := runOffering(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 2*time.Second, 2)
		require.Greater(t, float64(len(at)), 0.8*float64(len(full)))
	})
}

// Under SkipByFrames a refinement pass is a frame offered like any other:
// after the still desktop's first keyframe (125 KB at 1 Mbit/s, 60 dues
// of 16 667 bits) the buffer holds 59 dues, over the 30 of half a second,
// and every one of the agent's 15 passes 100 ms apart is skipped, as
// OpenH264 skips them (docs/codecs.md: "No refinement on a still screen").
func TestSkipByFramesSkipsRefinementPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := encoder.Preset(encoder.PresetOpenH264Asm)
		require.NoError(t, err)
		require.Equal(t, encoder.SkipByFrames, cfg.SkipRule)
		cfg.Bitrate = 1_000_000
		e, err := encoder.New(1, cfg)
		require.NoError(t, err)
		require.NoError(t, e.Open())
		img, d := newScreen(t, 1, screen.Phase{Source: screen.Still{}}).Since(0, 0)
		f, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		require.True(t, f.Keyframe)
		require.Equal(t, 125_020, f.Bytes)
		for pass := range 15 {
			time.Sleep(100 * time.Millisecond)
			_, err := e.Refine()
			require.ErrorIs(t, err, encoder.ErrSkipped, "pass %d", pass+1)
		}
	})
}

// A new session's rate control starts with an empty buffer: after the old
// restart (N16) the first frame is not skipped for what the old session
// overspent.
func TestRestartEmptiesTheSkipBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) {
			c.Bitrate, c.MinFrameBytes, c.SkipBuffer, c.OldRestartOnBitrateChange = 100_000, 2000, 100*time.Millisecond, true
		})
		scr := newScreen(t, 1, screen.Phase{Source: screen.Animation{}})
		_, _ = runSkipping(t, e, scr, 50*time.Millisecond)
		require.True(t, e.SkipFrame(time.Now()), "the keyframe's 16 160 bits are over the threshold")
		require.NoError(t, e.SetBitrate(90_000))
		require.False(t, e.SkipFrame(time.Now()))
		require.NoError(t, e.Close())
		require.NoError(t, e.Open())
		require.False(t, e.SkipFrame(time.Now()))
	})
}

func TestSlowEncoderSpendsTheBitrateOverFewerFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 130 ms encodes (N12): a frame at every 8th refresh (133 ms),
		// each spending 133 ms of bitrate, so the output still follows the
		// target.
		e := opened(t, encoder.PresetBusyPC, nil)
		frames := run(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 2*time.Second)
		require.Len(t, frames, 15)
		total := 0
		for i, f := range frames[1:] {
			require.Equal(t, uint64(9+8*i), f.Version)
			require.InDelta(t, encoder.DefaultBitrate*(8.0/60)/8, f.Bytes, 1)
			total += f.Bytes
		}
		require.InDelta(t, encoder.DefaultBitrate, float64(total)*8/(14*8.0/60), 0.01*encoder.DefaultBitrate)
	})
}

func TestContentDecidesTheSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetOpenH264Asm, nil)
		scr := newScreen(t, 3, screen.Phase{At: time.Second, Source: screen.Typing{}})
		img, d := scr.Since(0, 0)
		key, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		require.True(t, key.Keyframe)

		// The still desktop: nothing changed, a skip frame.
		time.Sleep(refresh(6) - time.Since(key.Start))
		img, d = scr.Since(img.Version, refresh(6))
		require.Zero(t, d.Changed)
		still, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		require.Equal(t, encoder.DefaultOverheadBytes, still.Bytes)
		require.Equal(t, key.Quality, still.Quality)

		// A keystroke: a few hundred bytes to a couple of kilobytes, all
		// it needs, so the picture stays as good as it was.
		next, ok := scr.Next(time.Second)
		require.True(t, ok)
		time.Sleep(next - time.Since(key.Start))
		img, d = scr.Since(img.Version, next)
		typed, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		want := 20 + int(math.Ceil(encoder.DefaultFullScreenBits*d.Changed*d.Complexity/8))
		require.Equal(t, want, typed.Bytes)
		require.Greater(t, typed.Bytes, 200)
		require.Less(t, typed.Bytes, 3000)
		require.GreaterOrEqual(t, typed.Quality, key.Quality)

		// A keyframe on request: the whole screen again, four budgets of
		// one frame interval, however long since the last frame (here a
		// frame and a half).
		e.RequestKeyframe()
		time.Sleep(refresh(1) + refresh(1)/2)
		again, err := e.Encode(encoder.Input{Image: img, Delta: screen.Delta{From: img.Version, To: img.Version}})
		require.NoError(t, err)
		require.True(t, again.Keyframe)
		require.Greater(t, again.Start.Sub(typed.Start), refresh(1))
		require.Equal(t, 20+int(math.Ceil(4*encoder.DefaultBitrate/encoder.DefaultFrameRate/8-20)), again.Bytes)
		require.Greater(t, again.Bytes, 10*typed.Bytes)

		// A delta that does not start from what the encoder sent: it cannot
		// know what the viewer has, so it sends everything.
		time.Sleep(refresh(1))
		gap, err := e.Encode(encoder.Input{Image: img, Delta: screen.Delta{From: img.Version - 1, To: img.Version, Changed: 0.01, Complexity: 0.6}})
		require.NoError(t, err)
		require.True(t, gap.Keyframe)
	})
}

func TestRefinementConvergesAndThenCostsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A photo on a 2 Mbit/s link (N15): the first frame is sent in a
		// hurry, then up to 15 passes about every 100 ms.
		const bps = 2_000_000
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { c.Bitrate = bps })
		epoch := time.Now()
		scr := newScreen(t, 1, screen.Phase{At: time.Second, Source: screen.Photo{}})
		img, d := scr.Since(0, 0)
		_, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		time.Sleep(time.Until(epoch.Add(time.Second)))
		photo, d := scr.Since(img.Version, time.Second)
		first, err := e.Encode(encoder.Input{Image: photo, Delta: d})
		require.NoError(t, err)
		require.Equal(t, bps/4/8, first.Bytes) // MaxSpan, 250 ms of bitrate
		t.Logf("photo (%.3f of the screen): %6d bytes, quality %.3f", d.Changed, first.Bytes, first.Quality)

		prev := first
		for pass := 1; pass <= 15; pass++ {
			time.Sleep(time.Until(epoch.Add(time.Second + time.Duration(pass)*100*time.Millisecond)))
			f, err := e.Refine()
			require.NoError(t, err)
			t.Logf("pass %2d: %6d bytes, quality %.4f, matched %v", f.Pass, f.Bytes, f.Quality, f.Matched)
			require.Equal(t, pass, f.Pass)
			require.Equal(t, photo.Version, f.Version)
			require.LessOrEqual(t, f.Bytes, prev.Bytes)
			if f.Bytes > encoder.DefaultOverheadBytes {
				require.Greater(t, f.Quality, prev.Quality)
			} else {
				require.Equal(t, prev.Quality, f.Quality)
			}
			prev = f
		}
		require.True(t, prev.Matched)
		require.Equal(t, encoder.DefaultOverheadBytes, prev.Bytes)
		require.InDelta(t, 1-1.0/256, prev.Quality, 1e-12)
	})
}

func TestSetBitrateReconfiguresInOneToFourMilliseconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetQuickSync, nil)
		twin := opened(t, encoder.PresetQuickSync, nil)
		seen := map[time.Duration]bool{}
		for i := range 20 {
			bps := 1_000_000 + i*100_000
			start := time.Now()
			require.NoError(t, e.SetBitrate(bps))
			took := time.Since(start)
			require.GreaterOrEqual(t, took, time.Millisecond)
			require.LessOrEqual(t, took, 4*time.Millisecond)
			require.Equal(t, bps, e.Bitrate())
			seen[took] = true
			// The same seed draws the same times.
			start = time.Now()
			require.NoError(t, twin.SetBitrate(bps))
			require.Equal(t, took, time.Since(start))
		}
		require.Greater(t, len(seen), 10)

		// The same bitrate again is not a change.
		start := time.Now()
		require.NoError(t, e.SetBitrate(e.Bitrate()))
		require.Zero(t, time.Since(start))

		// An encode asked for during a reconfiguration waits for it, and
		// the session goes on: no keyframe, no freeze.
		scr := newScreen(t, 1)
		img, d := scr.Since(0, 0)
		_, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		done := make(chan time.Time)
		go func() {
			require.NoError(t, e.SetBitrate(3_000_000))
			done <- time.Now()
		}()
		time.Sleep(500 * time.Microsecond)
		f, err := e.Encode(encoder.Input{Image: img, Delta: screen.Delta{From: img.Version, To: img.Version}})
		require.NoError(t, err)
		reconfigured := <-done
		require.False(t, f.Keyframe)
		require.Equal(t, 3_000_000, f.Bitrate)
		require.Equal(t, reconfigured.Sub(f.Start), f.Waited)
		require.Equal(t, f.Waited+4*time.Millisecond, f.End.Sub(f.Start))
	})
}

func TestOldBitrateChangeRestartsAndFreezesTheImage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := opened(t, encoder.PresetQuickSync, func(c *encoder.Config) { c.OldRestartOnBitrateChange = true })
		scr := newScreen(t, 1, screen.Phase{Source: screen.Animation{}})
		epoch := time.Now()
		var taken uint64
		var lastGood, firstBack time.Duration
		var frozen int
		var back encoder.Frame
		for k := int64(0); refresh(k) < 2*time.Second && firstBack == 0; k++ {
			time.Sleep(time.Until(epoch.Add(refresh(k))))
			if k == 30 {
				start := time.Now()
				require.NoError(t, e.SetBitrate(2_000_000))
				require.Zero(t, time.Since(start)) // returns at once; the session is down
			}
			img, d := scr.Since(taken, refresh(k))
			f, err := e.Encode(encoder.Input{Image: img, Delta: d})
			if err != nil {
				var un *encoder.UnavailableError
				require.ErrorAs(t, err, &un)
				require.ErrorIs(t, err, encoder.ErrUnavailable)
				require.Equal(t, epoch.Add(refresh(30)+time.Second), un.Until)
				frozen++
				continue
			}
			taken = img.Version
			if k < 30 {
				lastGood = refresh(k)
			} else {
				firstBack, back = refresh(k), f
			}
		}
		freeze := firstBack - lastGood
		t.Logf("old: the image stopped for %v (%d refreshes without a frame)", freeze, frozen)
		require.Equal(t, 60, frozen)
		require.Equal(t, refresh(90)-refresh(29), freeze)
		// The new session starts with a keyframe at the new bitrate.
		require.True(t, back.Keyframe)
		require.Equal(t, 2_000_000, back.Bitrate)
		// Its rate control starts afresh: four budgets of one frame.
		require.Equal(t, int(math.Ceil(4*2e6/60/8)), back.Bytes)
		// Refining is unavailable too.
		require.NoError(t, e.SetBitrate(1_000_000))
		_, err := e.Refine()
		require.ErrorIs(t, err, encoder.ErrUnavailable)
	})
}

func TestHardwareEncodeHoldsTheSharedDevice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dev := capture.NewDevice()
		hw := opened(t, encoder.PresetNVENC, func(c *encoder.Config) { c.Device = dev })
		sw := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { c.Device = dev })
		img, d := newScreen(t, 1).Since(0, 0)
		dev.Lock()
		go func() {
			time.Sleep(5 * time.Millisecond) // a capture holding the device
			dev.Unlock()
		}()
		f, err := sw.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		require.Zero(t, f.LockWait) // software does not need the device
		f, err = hw.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		require.Zero(t, f.LockWait) // the 5 ms passed during the software encode
		// Now hold it against the hardware encoder.
		dev.Lock()
		go func() {
			time.Sleep(5 * time.Millisecond)
			dev.Unlock()
		}()
		f, err = hw.Encode(encoder.Input{Image: img, Delta: screen.Delta{From: 1, To: 1}})
		require.NoError(t, err)
		require.Equal(t, 5*time.Millisecond, f.LockWait)
		require.Equal(t, 8*time.Millisecond, f.End.Sub(f.Start))
		// While it encodes, the device is busy.
		done := make(chan struct{})
		go func() {
			_, err := hw.Encode(encoder.Input{Image: img, Delta: screen.Delta{From: 1, To: 1}})
			require.NoError(t, err)
			close(done)
		}()
		synctest.Wait()
		require.Equal(t, 3*time.Millisecond, dev.Acquire())
		dev.Unlock()
		<-done
	})
}

func TestProbeFallsBackToSoftware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		qsv := preset(t, encoder.PresetQuickSync, func(c *encoder.Config) { c.Absent = true })
		nv := preset(t, encoder.PresetNVENC, func(c *encoder.Config) {
			c.OpenFailure = "MFT activation failed (0xC00D36B4)"
			c.OpenTime = 40 * time.Millisecond
		})
		sw := preset(t, encoder.PresetOpenH264Asm, nil)
		got, tried, err := encoder.Probe([]encoder.Encoder{qsv, nv}, sw)
		require.NoError(t, err)
		require.Same(t, sw, got)
		require.Len(t, tried, 3)
		require.Equal(t, "quicksync", tried[0].Name)
		require.True(t, tried[0].Hardware)
		require.ErrorIs(t, tried[0].Err, encoder.ErrAbsent)
		require.Zero(t, tried[0].Took)
		require.ErrorIs(t, tried[1].Err, encoder.ErrOpenFailed)
		require.ErrorContains(t, tried[1].Err, "0xC00D36B4")
		require.Equal(t, 40*time.Millisecond, tried[1].Took)
		require.Equal(t, encoder.Attempt{Name: "openh264-asm"}, tried[2])
		require.Equal(t, "quicksync: encoder: hardware absent; "+
			"nvenc: encoder: failed to open: MFT activation failed (0xC00D36B4); openh264-asm: ok", tried.String())
		// The failed ones stay closed.
		_, err = qsv.Encode(encoder.Input{})
		require.ErrorIs(t, err, encoder.ErrNotOpen)

		// Hardware that opens wins.
		hw := preset(t, encoder.PresetQuickSync, nil)
		got, tried, err = encoder.Probe([]encoder.Encoder{hw}, preset(t, encoder.PresetOpenH264Asm, nil))
		require.NoError(t, err)
		require.Same(t, hw, got)
		require.Len(t, tried, 1)

		// Nothing opens, no fallback.
		_, tried, err = encoder.Probe([]encoder.Encoder{preset(t, encoder.PresetNVENC, func(c *encoder.Config) { c.Absent = true })}, nil)
		require.ErrorIs(t, err, encoder.ErrNoEncoder)
		require.ErrorIs(t, errors.Unwrap(err), encoder.ErrNoEncoder)
		require.Len(t, tried, 1)
	})
}

func TestSameSeedSameFrames(t *testing.T) {
	encode := func(seed uint64) []encoder.Frame {
		var frames []encoder.Frame
		synctest.Test(t, func(t *testing.T) {
			e, err := encoder.New(seed, encoder.Config{Name: "jittery", EncodeTime: dist.Normal(12*time.Millisecond, 3*time.Millisecond)})
			require.NoError(t, err)
			require.NoError(t, e.Open())
			scr := newScreen(t, seed, screen.Phase{Source: screen.Typing{}}, screen.Phase{At: time.Second, Source: screen.Video{}})
			frames = run(t, e, scr, 2*time.Second)
			for i := range frames {
				// Instants differ between bubbles only by where each
				// started; keep what the model decided.
				frames[i].Start, frames[i].End = time.Time{}, time.Time{}
			}
		})
		return frames
	}
	a, b, c := encode(1), encode(1), encode(2)
	require.Equal(t, a, b)
	require.NotEqual(t, a, c)
	var times []time.Duration
	for _, f := range a {
		times = append(times, f.EncodeTime)
	}
	require.NotEqual(t, times[0], times[1])
}

func TestEncodeTimeFromAList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := encoder.New(1, encoder.Config{EncodeTime: dist.List(5*time.Millisecond, 10*time.Millisecond, 15*time.Millisecond)})
		require.NoError(t, err)
		require.NoError(t, e.Open())
		img, d := newScreen(t, 1).Since(0, 0)
		_, err = e.Refine()
		require.ErrorIs(t, err, encoder.ErrNoImage)
		var got []time.Duration
		f, err := e.Encode(encoder.Input{Image: img, Delta: d})
		require.NoError(t, err)
		got = append(got, f.EncodeTime)
		for range 4 {
			f, err := e.Refine()
			require.NoError(t, err)
			got = append(got, f.End.Sub(f.Start))
		}
		ms := time.Millisecond
		require.Equal(t, []time.Duration{5 * ms, 10 * ms, 15 * ms, 5 * ms, 10 * ms}, got)
	})
}

func TestClosedEncoderRefuses(t *testing.T) {
	e := preset(t, encoder.PresetOpenH264Asm, nil)
	_, err := e.Encode(encoder.Input{})
	require.ErrorIs(t, err, encoder.ErrNotOpen)
	require.ErrorIs(t, e.SetBitrate(1), encoder.ErrNotOpen)
	require.ErrorIs(t, e.SetBitrate(0), encoder.ErrConfig)
	require.NoError(t, e.Open())
	require.NoError(t, e.Close())
	_, err = e.Refine()
	require.ErrorIs(t, err, encoder.ErrNotOpen)
}

// With content costs, a moving kind's frames cost its motion bits whatever
// the target above them, the first keyframe its own size whatever the
// target, and a kind's own smallest frame holds its frames up at a low
// target.
func TestContentCosts(t *testing.T) {
	costs := func(c *encoder.Config) {
		c.FirstKeyframeBits = 2e6
		c.Content = []encoder.ContentCost{{Kind: "animation", MotionBits: 64e3}, {Kind: "typing", MinFrameBytes: 1000}}
	}
	for _, bps := range []int{8_000_000, 16_000_000} {
		synctest.Test(t, func(t *testing.T) {
			e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { costs(c); c.Bitrate = bps })
			frames, _ := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 2*time.Second)
			require.True(t, frames[0].Keyframe)
			// 2 Mbit x the animation's detail 0.8, below its need (4 Mbit x 0.8).
			require.Equal(t, 20+200_000, frames[0].Bytes, "%d bit/s", bps)
			require.Len(t, frames, 120, "nothing skipped at %d bit/s", bps)
			for _, f := range frames[1:] {
				require.Equal(t, 20+8000, f.Bytes, "64 kbit for the whole screen moving one version, at %d bit/s", bps)
				require.True(t, f.Matched)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		// A kind's own first-keyframe bits: the animation covers the
		// whole screen, 1 Mbit x 0.8.
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) {
			costs(c)
			c.Content[0].KeyframeBits = 1e6
		})
		frames, _ := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), time.Second/30)
		require.Equal(t, 20+100_000, frames[0].Bytes)
	})
	synctest.Test(t, func(t *testing.T) {
		// At 1 Mbit/s the first keyframe is as large, and the rate control
		// skips over a second of frames to pay for it; the first frame
		// after the skips needs the shift of every version skipped (70 x
		// 8 KB) and is held to its budget, one refresh's (the skips paid
		// for their time): 1 Mbit/60, headers included.
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { costs(c); c.Bitrate = 1_000_000 })
		frames, at := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 3*time.Second)
		require.Equal(t, 20+200_000, frames[0].Bytes)
		require.Greater(t, at[1], int64(60), "a second and more of frames skipped")
		require.Equal(t, 2084, frames[1].Bytes)
		require.False(t, frames[1].Matched)
	})
	synctest.Test(t, func(t *testing.T) {
		// A keystroke of 1% of the screen at detail 0.6 needs 3 KB; at 30
		// kbit/s its budget is 62 bytes, and typing's own smallest frame
		// (1000 bytes, the default's would be 300) is what it gets, as a
		// video's smallest frame, the shared one, is what the video gets.
		e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { costs(c); c.Bitrate = 30_000 })
		img := screen.Image{Version: 1, Whole: 0.5}
		_, err := e.Encode(encoder.Input{Image: img, Delta: screen.Delta{To: 1, Changed: 1, Complexity: 0.5}})
		require.NoError(t, err)
		for i, kind := range []string{"typing", "video"} {
			v := uint64(i + 2)
			time.Sleep(time.Second / 60)
			d := screen.Delta{From: v - 1, To: v, Changed: 0.01, Complexity: 0.6}
			d.Kinds[0] = screen.KindChange{Kind: kind, Changed: 0.01, Complexity: 0.6}
			f, err := e.Encode(encoder.Input{Image: screen.Image{Version: v, Whole: 0.5}, Delta: d})
			require.NoError(t, err)
			want := map[string]int{"typing": 1020, "video": encoder.DefaultMinFrameBytes + 20}[kind]
			require.Equal(t, want, f.Bytes, kind)
		}
	})
}

func TestConfigErrors(t *testing.T) {
	_, err := encoder.Preset("x265")
	require.ErrorIs(t, err, encoder.ErrConfig)
	require.Equal(t, []string{"busy-pc", "nvenc", "openh264", "openh264-asm", "quicksync"}, encoder.PresetNames())
	for name, cfg := range map[string]encoder.Config{
		"clamp":       {EncodeTime: dist.Duration{Mean: 12 * time.Millisecond, SD: 3 * time.Millisecond, Min: 5 * time.Millisecond, Max: 2 * time.Millisecond}},
		"uniform":     {EncodeTime: dist.Uniform(4*time.Millisecond, time.Millisecond)},
		"list":        {EncodeTime: dist.List()},
		"negative":    {EncodeTime: dist.Constant(-time.Millisecond)},
		"reconfigure": {Reconfigure: dist.Uniform(-time.Millisecond, time.Millisecond)},
		"bitrate":     {Bitrate: -1},
		"span":        {MaxSpan: time.Millisecond},
		"keyframe":    {KeyframeFactor: 0.5},
		"bits":        {FullScreenBits: -1},
		"first":       {FirstKeyframeBits: -1},
		"no kind":     {Content: []encoder.ContentCost{{MotionBits: 1}}},
		"motion":      {Content: []encoder.ContentCost{{Kind: "video", MotionBits: -1}}},
		"twice":       {Content: []encoder.ContentCost{{Kind: "video"}, {Kind: "video"}}},
		"kind's key":  {Content: []encoder.ContentCost{{Kind: "video", KeyframeBits: -1}}},
		"skip rule":   {SkipRule: encoder.SkipByFrames + 1},
	} {
		_, err := encoder.New(1, cfg)
		require.ErrorIs(t, err, encoder.ErrConfig, name)
	}
}

// The presets that claim to be OpenH264 size frames as the calibration
// against the real encoder found at 720p: the animation's first keyframe
// is 0.7 Mbit x its detail (0.8), 70 KB, whatever the target; at 4 Mbit/s
// its frames are its motion, 32 kbit a version (4 KB), under the budget,
// so none is skipped; at 1 Mbit/s that motion is over the budget and a
// frame carrying it spends the animation's smallest frame, 40 KB, so the
// rate control keeps only a few frames a second, as OpenH264's does
// (25 KB frames, 92% skipped). Budgeted gives the old rule back, and the
// hardware presets have no calibration.
func TestOpenH264PresetsAreCalibrated(t *testing.T) {
	for _, name := range []string{encoder.PresetOpenH264Asm, encoder.PresetOpenH264, encoder.PresetBusyPC} {
		cfg, err := encoder.Preset(name)
		require.NoError(t, err)
		require.True(t, encoder.Calibrated(cfg), name)
		require.False(t, encoder.Calibrated(encoder.Budgeted(cfg)), name)
	}
	for _, name := range []string{encoder.PresetQuickSync, encoder.PresetNVENC} {
		cfg, err := encoder.Preset(name)
		require.NoError(t, err)
		require.False(t, encoder.Calibrated(cfg), name)
	}
	fps := map[int]float64{}
	for _, bps := range []int{4_000_000, 1_000_000} {
		synctest.Test(t, func(t *testing.T) {
			cfg, err := encoder.Preset(encoder.PresetOpenH264Asm)
			require.NoError(t, err)
			cfg.Bitrate = bps
			e, err := encoder.New(1, cfg)
			require.NoError(t, err)
			require.NoError(t, e.Open())
			frames, at := runSkipping(t, e, newScreen(t, 1, screen.Phase{Source: screen.Animation{}}), 6*time.Second)
			require.True(t, frames[0].Keyframe)
			require.Equal(t, 20+70_000, frames[0].Bytes, "%d bit/s: the first keyframe", bps)
			var n int
			for i, f := range frames {
				if at[i] >= 3*60 { // from the third second
					n++
					if bps == 4_000_000 {
						require.Equal(t, 20+4000, f.Bytes, "at 4 Mbit/s a frame is its motion")
					}
				}
			}
			fps[bps] = float64(n) / 3
		})
	}
	require.Equal(t, 60.0, fps[4_000_000], "no frame skipped at 4 Mbit/s")
	require.Less(t, fps[1_000_000], 10.0, "most frames skipped at 1 Mbit/s")
}

// A rolling refresh spreads a keyframe's intra cost over RefreshFrames
// frames of the animation: the first marked RefreshBegin, the last
// RefreshEnd, each larger than the same frame without it by a share of
// what a keyframe then spends; a keyframe asked for meanwhile ends it.
func TestRollingRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		encode := func(refreshAt int, keyAt int) []encoder.Frame {
			e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) {
				c.RefreshFrames = 4
				c.EncodeTime = dist.Constant(0)
			})
			scr := newScreen(t, 1, screen.Phase{Source: screen.Animation{}})
			epoch := time.Now()
			var frames []encoder.Frame
			var img screen.Image
			for k := range 12 {
				time.Sleep(refresh(int64(k)) - time.Since(epoch))
				next, d := scr.Since(img.Version, refresh(int64(k)))
				if k == refreshAt {
					e.RequestRefresh()
				}
				if k == keyAt {
					e.RequestKeyframe()
				}
				f, err := e.Encode(encoder.Input{Image: next, Delta: d})
				require.NoError(t, err)
				frames = append(frames, f)
				img = next
			}
			return frames
		}
		plain, refreshed := encode(-1, -1), encode(3, -1)
		for i, f := range refreshed {
			require.Equal(t, i == 3, f.RefreshBegin, "frame %d", i)
			require.Equal(t, i == 6, f.RefreshEnd, "frame %d", i)
			if i >= 3 && i <= 6 {
				require.Greater(t, f.Bytes, plain[i].Bytes+plain[0].Bytes/4/4, "frame %d carries a share of the intra cost", i)
			} else {
				require.Equal(t, plain[i].Bytes, f.Bytes, "frame %d", i)
			}
		}
		cut := encode(3, 5)
		require.True(t, cut[5].Keyframe)
		for i, f := range cut[5:] {
			require.False(t, f.RefreshEnd, "frame %d: the keyframe ended the refresh", i+5)
		}
	})
}

// TestInterFrameWeighsFill checks a P frame weighs its change's detail by
// the share of its pixels that changed (screen.Delta.Fill) to the power
// FillExponent: half the screen at detail 0.8 of which a quarter changed
// costs a quarter of the same half changed whole at exponent 1, half of
// it at 0.5, all of it at 0 (the default, which ignores the fill).
func TestInterFrameWeighsFill(t *testing.T) {
	for _, tc := range []struct {
		exponent float64
		want     int
	}{{0, 200_000}, {0.5, 100_000}, {1, 50_000}} {
		synctest.Test(t, func(t *testing.T) {
			e := opened(t, encoder.PresetOpenH264Asm, func(c *encoder.Config) { c.Bitrate, c.FillExponent = 100_000_000, tc.exponent })
			_, err := e.Encode(encoder.Input{Image: screen.Image{Version: 1, Whole: 0.8}, Delta: screen.Delta{To: 1, Changed: 1, Complexity: 0.8, Fill: 1}})
			require.NoError(t, err)
			var sizes []int
			for i, fill := range []float64{1, 0.25} {
				v := uint64(i + 2)
				time.Sleep(time.Second / 60)
				d := screen.Delta{From: v - 1, To: v, Changed: 0.5, Complexity: 0.8, Fill: fill}
				f, err := e.Encode(encoder.Input{Image: screen.Image{Version: v, Whole: 0.8}, Delta: d})
				require.NoError(t, err)
				require.False(t, f.Keyframe)
				sizes = append(sizes, f.Bytes-20)
			}
			// DefaultFullScreenBits (4 Mbit) for the whole screen at
			// detail 1, the budget far above it.
			require.Equal(t, []int{200_000, tc.want}, sizes, "exponent %v", tc.exponent)
		})
	}
	_, err := encoder.New(1, encoder.Config{FillExponent: 1.5})
	require.ErrorIs(t, err, encoder.ErrConfig)
}
