package measure

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/nuvirahub/latencylab/viewer"
)

const ms = time.Millisecond

// handmade is a three-second result small enough to measure by hand:
//
//	seq captured sent  arrived displayed latency network estimate bytes quality pass
//	1     0       5    15      20        20      10      21       1000  0.5
//	2     100     105  135     140       40      30      38       2000  0.6
//	3     200     205  225     230       30      20      -        3000  0.7
//	4     300     305  330     dropped (overtaken at 340)         4000  0.75
//	5     1500    1505 1515    1600      100     10      110      500   0.8     1
//	6     1700    1705 1710    1760      60      5       60       500   0.9     2
//	7     2500    2505 2510    2520      20      5       20       1000  0.95
//
// (instants in ms; encoding ends when the frame is sent). Skips: send-cap
// at 400 and 450, encoder-unavailable at 500; drops: overtaken at 340,
// late at 1800. Targets: 4 Mbit/s from 0, 2 from 1 s, 3 from 1.5 s. The
// network changes at 1 s in both directions and at 2.2 s downstream; the
// downlink is capped at 100 kbit/s in [0, 1 s) and 50 kbit/s in [2 s, 3 s).
// damaged is handmade with a broken reference chain: frames 1 and 7 are
// keyframes, 2, 3 and 6 were decoded onto a broken chain; the viewer asked
// for a keyframe at 120 and 1720 ms and for a refresh at 1730 ms.
func damaged() *result.Run {
	r := handmade()
	for i := range r.Frames {
		f := &r.Frames[i]
		switch f.Seq {
		case 1, 7:
			f.Keyframe = true
		case 2, 3, 6:
			f.Damaged, f.DamageAge = true, int(f.Seq%4)
		}
	}
	r.Events = append(r.Events,
		result.EventRecord{At: 120 * ms, Kind: result.EventAsk, Reason: "keyframe"},
		result.EventRecord{At: 1720 * ms, Kind: result.EventAsk, Reason: "keyframe"},
		result.EventRecord{At: 1730 * ms, Kind: result.EventAsk, Reason: "refresh"})
	slices.SortStableFunc(r.Events, func(a, b result.EventRecord) int { return cmp.Compare(a.At, b.At) })
	return r
}

// The damaged time is cut to the window: from 1 s, the first stretch
// counts from 1 s to 1.6 s, and a stretch still open at the window's end
// stops there.
func TestDamagedTimeCutToTheWindow(t *testing.T) {
	r := damaged()
	got, err := Of(r, "damaged.time", time.Second, 0)
	require.NoError(t, err)
	require.InDelta(t, 0.600+0.760, got, 1e-9)
	got, err = Of(r, "damaged.longest", time.Second, 2*time.Second)
	require.NoError(t, err)
	require.InDelta(t, 0.600, got, 1e-9)
	got, err = Of(r, "frames.damaged", time.Second, 0)
	require.NoError(t, err)
	require.Equal(t, 1.0, got, "frame 6 only: 2 and 3 were displayed before 1 s")
}

func handmade() *result.Run {
	// The quality shown, dB (a real decoder's; frame 5 was not judged).
	psnr := map[uint64]float64{1: 30, 2: 35, 3: 40, 4: 20, 6: 45, 7: 38}
	// Their SSIM (frame 4's never shown; frame 5's, not judged, is 0 and
	// counts for nothing).
	ssim := map[uint64]float64{1: 0.5, 2: 0.8, 3: 0.95, 4: 0.1, 6: 0.99, 7: 0.9}
	frame := func(seq uint64, capt, sent, arr, disp, est time.Duration, bytes int, q float64, pass int) result.FrameRecord {
		f := result.FrameRecord{Seq: seq, Pass: pass, Bytes: bytes, Quality: q, PSNR: psnr[seq], SSIM: ssim[seq],
			Captured: capt * ms, EncodeEnd: sent * ms, Sent: sent * ms, Arrived: arr * ms, Displayed: disp * ms,
			Network: (arr - sent) * ms, Estimate: est * ms}
		if disp > 0 {
			f.Latency = (disp - capt) * ms
		}
		return f
	}
	f4 := frame(4, 300, 305, 330, 0, 0, 4000, 0.75, 0)
	f4.Dropped = "overtaken"
	return &result.Run{
		Schema: result.Version, Scenario: "handmade", Seed: 1,
		Duration: 3 * time.Second, Ran: 3 * time.Second,
		Refresh: 60, FreezeThreshold: result.FreezeAfter(60), SampleEvery: time.Second,
		Network: result.NetworkInfo{
			Up:   []result.PhaseInfo{{At: 0}, {At: time.Second}},
			Down: []result.PhaseInfo{{At: 0}, {At: time.Second}, {At: 2200 * ms}},
		},
		Frames: []result.FrameRecord{
			frame(1, 0, 5, 15, 20, 21, 1000, 0.5, 0),
			frame(2, 100, 105, 135, 140, 38, 2000, 0.6, 0),
			frame(3, 200, 205, 225, 230, 0, 3000, 0.7, 0),
			f4,
			frame(5, 1500, 1505, 1515, 1600, 110, 500, 0.8, 1),
			frame(6, 1700, 1705, 1710, 1760, 60, 500, 0.9, 2),
			frame(7, 2500, 2505, 2510, 2520, 20, 1000, 0.95, 0),
		},
		Events: []result.EventRecord{
			{At: 340 * ms, Kind: result.EventDrop, Reason: "overtaken", Seq: 4},
			{At: 400 * ms, Kind: result.EventSkip, Reason: "send-cap"},
			{At: 450 * ms, Kind: result.EventSkip, Reason: "send-cap"},
			{At: 500 * ms, Kind: result.EventSkip, Reason: "encoder-unavailable"},
			{At: 1800 * ms, Kind: result.EventDrop, Reason: "late"},
		},
		Targets: []result.TargetRecord{{At: 0, Bps: 4_000_000}, {At: time.Second, Bps: 2_000_000}, {At: 1500 * ms, Bps: 3_000_000}},
		Series: []result.Point{
			{From: 0, To: time.Second, Down: result.LinkPoint{CapacityBps: 100_000, Capped: true}},
			{From: time.Second, To: 2 * time.Second},
			{From: 2 * time.Second, To: 3 * time.Second, Down: result.LinkPoint{CapacityBps: 50_000, Capped: true}},
		},
	}
}

// Every measurement, on a result whose answers are worked out by hand.
func TestMeasureKnownAnswers(t *testing.T) {
	r := handmade()
	s := time.Second
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		want     float64
	}{
		// Displayed in [0, 2 s): 20 30 40 60 100 ms.
		{"latency.median", 0, 2 * s, 0.040},
		{"latency.p95", 0, 2 * s, 0.100},
		{"latency.p99", 0, 2 * s, 0.100},
		{"latency.min", 0, 2 * s, 0.020},
		{"latency.max", 0, 2 * s, 0.100},
		{"latency.median", 0, 0, 0.030}, // to 0 is the end: 20 20 30 40 60 100
		{"latency.median", 1500 * ms, 0, 0.060},
		// Arrived in [0, 2 s): 5 10 10 20 25 30 ms.
		{"network.median", 0, 2 * s, 0.010},
		{"estimate.error.max", 0, 2 * s, 0.010},
		{"estimate.error.max", 0, s, 0.002}, // frame 3 has no estimate
		{"frames.displayed", 0, 2 * s, 5},
		{"frames.displayed", 0, 0, 6},
		{"fps", 0, 2 * s, 2.5},
		{"frames.skipped", 0, 2 * s, 3},
		{"frames.skipped", 420 * ms, 0, 2},
		{"frames.skipped.send-cap", 0, 0, 2},
		{"frames.skipped.encoder-unavailable", 0, 0, 1},
		{"frames.dropped", 0, 0, 2},
		{"frames.dropped.overtaken", 0, 0, 1},
		// handmade records no screen changes, as results written before
		// they were recorded: every pause counts (TestFreezesFollowTheScreen
		// measures a screen). Pauses after displays at 20 140 230 1600 1760
		// 2520 ms and to the end: 120 90 1370 160 760 480; over 150 ms: 4.
		{"freezes", 0, 0, 4},
		{"freeze.longest", 0, 0, 1.370},
		// Cut at 2 s, the pause from 1760 lasts 240 ms there.
		{"freezes", 0, 2 * s, 3},
		// From 1.7 s: 60 ms to 1760, then 760 (freeze), then 480 (freeze).
		{"freezes", 1700 * ms, 0, 2},
		{"freeze.longest", 1700 * ms, 0, 0.760},
		{"freezes", 0, 1500 * ms, 1}, // 230 -> 1500
		// Bytes sent in [0, 2 s): 11000.
		{"bitrate.mean", 0, 2 * s, 44_000},
		{"bitrate.min", 0, 2 * s, 2_000_000},
		{"bitrate.min", 1600 * ms, 0, 3_000_000},
		{"bitrate.min", 1200 * ms, 1400 * ms, 2_000_000},
		{"quality.final", 0, 0, 0.95},
		{"quality.final", 0, 2 * s, 0.9},
		{"quality.final", s, 1500 * ms, 0.7}, // still on the screen from before
		// Displayed and judged in [0, 2 s): 30 35 40 45 dB (frame 4 was
		// dropped, frame 5 not judged); from 1.5 s: 45 38.
		{"quality.psnr.median", 0, 2 * s, 35},
		{"quality.psnr.min", 0, 2 * s, 30},
		{"quality.psnr.median", 0, 0, 38},
		{"quality.psnr.median", 1500 * ms, 0, 38},
		{"quality.psnr.min", 1500 * ms, 0, 38},
		{"refinements", 0, 0, 2},
		{"refinements", 0, 1600 * ms, 1},
		// Capped in [0, 1 s) (80000 bits arrived, 100000 possible) and in
		// [2 s, 3 s) (8000 of 50000).
		{"utilisation", 0, 0, 88_000.0 / 150_000},
		{"utilisation", 0, s, 0.8},
		{"utilisation", 500 * ms, s, 0},
		// The change at 1 s: the second before has 20 30 40 (median 30);
		// from 1.61 s on the median of a second is back at 20 ms, but every
		// such second holds a freeze (1760 -> 2520 or 2520 -> the end), so
		// the latency never recovers: 2 s to the end. The change at 2.2 s
		// has a second before with median 60 and no whole second after it:
		// not recovered, 800 ms to the end.
		{"recovery", 0, 0, 2},
		// Cut at 2.2 s, the change at 1 s has no good second before the
		// window ends: unrecovered, 1.2 s to the end of the window.
		{"recovery", 0, 2200 * ms, 1.2},
	} {
		got, err := Of(r, tc.name, tc.from, tc.to)
		require.NoError(t, err, "%s [%v, %v)", tc.name, tc.from, tc.to)
		require.InDelta(t, tc.want, got, 1e-9, "%s [%v, %v)", tc.name, tc.from, tc.to)
	}

	rec, err := newWindow(r, 0, 3*s).recoveries()
	require.NoError(t, err)
	require.Equal(t, []result.Recovery{
		{At: time.Second, Direction: "both", Before: 30 * ms, Recovered: false, After: 2 * time.Second},
		{At: 2200 * ms, Direction: "down", Before: 60 * ms, Recovered: false, After: 800 * ms},
	}, rec)
}

// withScreen is handmade with its screen recorded: versions 1-4 appear at
// 0, 100, 200 and 300 ms and version 5 at 2450 ms. Frames 1-3 show
// versions 1-3, frame 4 (dropped) version 4, the refinement passes 5 and
// 6 refine version 4, frame 7 shows version 5.
func withScreen() *result.Run {
	r := handmade()
	r.ScreenChanges = []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 2450 * ms}
	for i, v := range []uint64{1, 2, 3, 4, 4, 4, 5} {
		r.Frames[i].Version = v
	}
	return r
}

// A freeze is a stretch in which the screen had changed and the display
// did not. On withScreen: version 2 appears at 100 and shows at 140 (40
// ms), version 3 at 200, shown at 230 (30 ms), version 4 at 300, shown at
// 1600 by a refinement pass after its frame was dropped (1300 ms, the one
// freeze); the pass at 1760 shows nothing newer, version 5 appears at 2450
// and shows at 2520 (70 ms); then the screen stays still to the end.
func TestFreezesFollowTheScreen(t *testing.T) {
	r := withScreen()
	s := time.Second
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		want     float64
	}{
		{"freezes", 0, 0, 1},
		{"freeze.longest", 0, 0, 1.3},
		{"freezes", 0, 1500 * ms, 1}, // 300 -> 1500
		{"freeze.longest", 0, 1500 * ms, 1.2},
		{"freezes", s, 2 * s, 1}, // 1000 -> 1600
		{"freeze.longest", s, 2 * s, 0.6},
		{"freezes", 1700 * ms, 0, 0},
		{"freeze.longest", 1700 * ms, 0, 0.070},
		{"freezes", 0, 250 * ms, 0},
		{"freeze.longest", 0, 250 * ms, 0.040},
	} {
		require.InDelta(t, tc.want, measured(t, r, tc.name, tc.from, tc.to), 1e-9, "%s [%v, %v)", tc.name, tc.from, tc.to)
	}
	require.Equal(t, []result.Interval{{From: 100 * ms, To: 140 * ms}, {From: 200 * ms, To: 230 * ms}, {From: 300 * ms, To: 1600 * ms}, {From: 2450 * ms, To: 2520 * ms}},
		stills(r, Displayed(r)))
	sum := Summarise(r)
	require.Equal(t, []result.Interval{{From: 300 * ms, To: 1600 * ms}}, sum.Freezes)
	require.Equal(t, 1300*ms, sum.FreezeLongest)

	// The screen still after the first image: the same pauses in the
	// display are no freeze, there being nothing to show.
	still := withScreen()
	still.ScreenChanges = still.ScreenChanges[:1]
	for i := range still.Frames {
		still.Frames[i].Version = 1
	}
	require.Zero(t, measured(t, still, "freezes", 0, 0))
	require.Zero(t, measured(t, still, "freeze.longest", 0, 0))

	// A moving screen shown half a second late, but at every refresh: the
	// display never stands still, so that is latency, not a freeze. (The
	// synthetic stream's first frames are captured before time zero,
	// hence the window from 1 s.)
	late := stream(func(time.Duration) time.Duration { return 500 * ms })
	animate(late)
	require.Zero(t, measured(t, late, "freezes", s, 0))
	require.InDelta(t, (s / 60).Seconds(), measured(t, late, "freeze.longest", s, 0), 1e-9)
	// The same frames on a screen that stands still from 2 s: its last
	// change shows at 2.5 s, and nothing is pending after it.
	late.ScreenChanges = late.ScreenChanges[:121]
	for i, f := range late.Frames {
		late.Frames[i].Version = min(f.Version, 121)
	}
	require.InDelta(t, 0, measured(t, late, "freeze.longest", 2600*ms, 0), 1e-9)

	// A frame without its version cannot be placed against the screen:
	// the result is measured as one without the screen's changes.
	unplaced := withScreen()
	unplaced.Frames[2].Version = 0
	require.Equal(t, 4.0, measured(t, unplaced, "freezes", 0, 0))

	// Nothing displayed before the window's end: nothing to measure.
	_, err := Of(r, "freezes", 0, 10*ms)
	require.ErrorIs(t, err, ErrNoData)
}

// The measurements that read a figure of their own, on the same result.
func TestMeasureKnownAnswersWithParams(t *testing.T) {
	r := handmade()
	s := time.Second
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		p        Params
		want     float64
	}{
		// The median latency of the second up to t, from the change at
		// 1 s: 30 ms until 1230 (frames 20 140 230 leaving one by one),
		// none in (230, 1230] until 1600, then 100, and 60 from 1760 to
		// the next change at 2.2 s. Under 150 ms for good from 1600: 0.6 s.
		// After 2.2 s: 60, 60 (2520 enters), 20 (1600 leaves at 2600), 20:
		// under 150 ms at once.
		{"recovery.under", 0, 0, Params{Latency: 150 * ms}, 0.6},
		{"recovery.under", 0, 2 * s, Params{Latency: 150 * ms}, 0.6},
		// Under 50 ms, only the change at 2.2 s counts from 2 s: 60 ms
		// until 1600 leaves at 2600, then 20: 0.4 s.
		{"recovery.under", 2 * s, 0, Params{Latency: 50 * ms}, 0.4},
		// On the screen: 20 ms latency [20, 140), 40 [140, 230), 30
		// [230, 1600), 100 [1600, 1760), 60 [1760, 2520), 20 [2520, 3000).
		// Above 50 ms: 160 + 760 of the 2980 ms with a picture.
		{"latency.time-above", 0, 0, Params{Latency: 50 * ms}, 920.0 / 2980},
		{"latency.time-above", 0, 0, Params{Latency: 35 * ms}, 1010.0 / 2980},
		{"latency.time-above", 0, 0, Params{Latency: 100 * ms}, 0}, // above, not at
		// From 1.7 s the frame of 1600 (100 ms) is still on the screen.
		{"latency.time-above", 1700 * ms, 2 * s, Params{Latency: 50 * ms}, 1},
		{"latency.time-above", 2600 * ms, 0, Params{Latency: 50 * ms}, 0},
		// Sent in [0, 320 ms): 10000 bytes; arrived: 6000; the capacity
		// 100 kbit/s.
		{"utilisation.sent", 0, 320 * ms, Params{}, 80_000.0 / 32_000},
		{"utilisation", 0, 320 * ms, Params{}, 48_000.0 / 32_000},
		{"utilisation.sent", 0, 0, Params{}, 88_000.0 / 150_000},
		// Targets: 4 Mbit/s from 0, 2 from 1 s, 3 from 1.5 s.
		{"bitrate.target", 0, 0, Params{At: 999 * ms}, 4_000_000},
		{"bitrate.target", 0, 0, Params{At: s}, 2_000_000},
		{"bitrate.target", 0, 0, Params{At: 3 * s}, 3_000_000},
		{"bitrate.target", 2 * s, 0, Params{At: s}, 2_000_000}, // the window does not apply
		// The sample period is 1 s here: sent in [0, 1 s): 10000 bytes;
		// in [0, 320 ms) the same; in [1 s, 2 s): 1000.
		{"bitrate.sent", 0, 0, Params{At: s}, 80_000},
		{"bitrate.sent", 0, 0, Params{At: 320 * ms}, 80_000 / 0.32},
		{"bitrate.sent", 0, 0, Params{At: 2 * s}, 8_000},
		// Periods of 500 ms capped: [0, 1 s) at 100 kbit/s with the target
		// at 4 Mbit/s, [2 s, 3 s) at 50 kbit/s with 3 Mbit/s: in line.
		{"bitrate.capacity-correlation", 0, 0, Params{Every: 500 * ms}, 1},
	} {
		got, err := OfWith(r, tc.name, tc.from, tc.to, tc.p)
		require.NoError(t, err, "%s %+v [%v, %v)", tc.name, tc.p, tc.from, tc.to)
		require.InDelta(t, tc.want, got, 1e-9, "%s %+v [%v, %v)", tc.name, tc.p, tc.from, tc.to)
	}

	rec, err := newWindow(r, 0, 3*s).recoveriesUnder(50 * ms)
	require.NoError(t, err)
	require.Equal(t, []result.Recovery{
		// 30 ms to 1230, none to 1600, 100, then 60 to the next change.
		{At: time.Second, Direction: "both", Before: 30 * ms, Recovered: false, After: 1200 * ms},
		{At: 2200 * ms, Direction: "down", Before: 60 * ms, Recovered: true, After: 400 * ms},
	}, rec)
	_, err = OfWith(r, "recovery.under", 0, 0, Params{Latency: 50 * ms})
	require.ErrorIs(t, err, ErrNotRecovered)
	require.EqualError(t, err, "lab: never recovered: after the change at 1s (both) the latency did not come back under 50ms for good before the next change, at 2.2s: the median of the last second was 60ms")
	_, err = OfWith(r, "recovery.under", 0, 1500*ms, Params{Latency: 150 * ms})
	require.EqualError(t, err, "lab: never recovered: after the change at 1s (both) the latency did not come back under 150ms for good before the window's end, at 1.5s: no frame was displayed in the last second")
}

// The correlation's periods: means over each, by time for the target and
// from the series' points for the capacity.
func TestMeasureCapacityCorrelation(t *testing.T) {
	mbit := func(x float64) float64 { return x * 1e6 }
	r := &result.Run{Duration: 4 * time.Second, Ran: 4 * time.Second, SampleEvery: 250 * ms,
		// Means over each second: 1, 3 (2 then 4), 2, 4 Mbit/s.
		Targets: []result.TargetRecord{{At: 0, Bps: 1_000_000}, {At: time.Second, Bps: 2_000_000},
			{At: 1500 * ms, Bps: 4_000_000}, {At: 2 * time.Second, Bps: 2_000_000}, {At: 3 * time.Second, Bps: 4_000_000}}}
	// Means over each second: 1, 2 (1.5 and 2.5 in turn), 3, 4 Mbit/s.
	for i, c := range []float64{1, 1, 1, 1, 1.5, 2.5, 1.5, 2.5, 3, 3, 3, 3, 4, 4, 4, 4} {
		from := time.Duration(i) * 250 * ms
		r.Series = append(r.Series, result.Point{From: from, To: from + 250*ms, Down: result.LinkPoint{CapacityBps: mbit(c), Capped: true}})
	}
	// Deviations from the means (2.5 both): target -1.5 .5 -.5 1.5,
	// capacity -1.5 -.5 .5 1.5; products sum to 4, squares to 5 each.
	v, err := OfWith(r, "bitrate.capacity-correlation", 0, 0, Params{Every: time.Second})
	require.NoError(t, err)
	require.InDelta(t, 0.8, v, 1e-12)

	// Uncapped in the second second: three periods remain (1, 2, 4 and
	// 1, 3, 4 Mbit/s).
	uncapped := *r
	uncapped.Series = slices.Clone(r.Series)
	uncapped.Series[5].Down = result.LinkPoint{}
	v, err = OfWith(&uncapped, "bitrate.capacity-correlation", 0, 0, Params{Every: time.Second})
	require.NoError(t, err)
	require.InDelta(t, stat.Correlation([]float64{1, 2, 4}, []float64{1, 3, 4}, nil), v, 1e-12)
	// Two periods left say nothing.
	uncapped.Series[9].Down = result.LinkPoint{}
	_, err = OfWith(&uncapped, "bitrate.capacity-correlation", 0, 0, Params{Every: time.Second})
	require.ErrorIs(t, err, ErrNoData)
	require.ErrorContains(t, err, "2 periods of 1s in [0s, 4s) with the downlink capped throughout: a correlation needs three")

	fixed := *r
	fixed.Targets = r.Targets[:1]
	_, err = OfWith(&fixed, "bitrate.capacity-correlation", 0, 0, Params{Every: time.Second})
	require.ErrorIs(t, err, ErrNoData)
	require.ErrorContains(t, err, "the target bitrate is the same in every period")
}

// stream is a result displaying a frame every 1/60 s for 10 s, whose
// latency is latency(display instant), with a network change at 5 s;
// nothing is displayed in the pauses.
func stream(latency func(time.Duration) time.Duration, pauses ...result.Interval) *result.Run {
	r := &result.Run{Duration: 10 * time.Second, Ran: 10 * time.Second, Refresh: 60, FreezeThreshold: result.FreezeAfter(60),
		Network: result.NetworkInfo{Down: []result.PhaseInfo{{At: 0}, {At: 5 * time.Second}}}}
	seq := uint64(0)
outer:
	for k := int64(1); k < 600; k++ {
		d := time.Duration(k) * time.Second / 60
		for _, p := range pauses {
			if d >= p.From && d < p.To {
				continue outer
			}
		}
		seq++
		r.Frames = append(r.Frames, result.FrameRecord{Seq: seq, Captured: d - latency(d), Displayed: d, Latency: latency(d)})
	}
	return r
}

// animate records r's screen as an animation that changes at every
// refresh, and each frame's version as the one on the screen at its
// capture.
func animate(r *result.Run) {
	tick := time.Second / 60
	for t := time.Duration(0); t <= r.Ran; t += tick {
		r.ScreenChanges = append(r.ScreenChanges, t)
	}
	for i, f := range r.Frames {
		r.Frames[i].Version = uint64(max(0, f.Captured)/tick) + 1
	}
}

// recovery.under on a steady stream: 60 frames in every second, so the
// median of the second up to the display of frame k (the lower middle, the
// 30th of 60) is under the bound once the last 30 frames are.
func TestMeasureRecoveryUnder(t *testing.T) {
	k := func(k int64) time.Duration { return time.Duration(k) * time.Second / 60 }
	// 20 ms before the change at 5 s, 200 ms until 6.5 s (frame 390),
	// 22 ms after: under 100 ms from frame 390+29 on.
	lat := func(d time.Duration) time.Duration {
		switch {
		case d < 5*time.Second:
			return 20 * ms
		case d < 6500*ms:
			return 200 * ms
		}
		return 22 * ms
	}
	r := stream(lat)
	rec, err := newWindow(r, 0, r.Ran).recoveriesUnder(100 * ms)
	require.NoError(t, err)
	require.Equal(t, []result.Recovery{{At: 5 * time.Second, Direction: "down", Before: 20 * ms, Recovered: true, After: k(419) - 5*time.Second}}, rec)
	require.Equal(t, (k(419) - 5*time.Second).Seconds(), measuredWith(t, r, "recovery.under", Params{Latency: 100 * ms}))

	// A spike of 300 ms over frames 480-515 after the recovery: the
	// median of a second is above the bound while 31 or more of its
	// frames are from the spike, up to frame 544. Back for good at 545:
	// not the first time it went under.
	spiked := stream(func(d time.Duration) time.Duration {
		if d >= k(480) && d <= k(515) {
			return 300 * ms
		}
		return lat(d)
	})
	require.Equal(t, (k(545) - 5*time.Second).Seconds(), measuredWith(t, spiked, "recovery.under", Params{Latency: 100 * ms}))

	// Never back before the run ends: a failed check saying so.
	never := stream(func(d time.Duration) time.Duration {
		if d < 5*time.Second {
			return 20 * ms
		}
		return 200 * ms
	})
	_, err = OfWith(never, "recovery.under", 0, 0, Params{Latency: 100 * ms})
	require.ErrorIs(t, err, ErrNotRecovered)
	require.EqualError(t, err, "lab: never recovered: after the change at 5s (down) the latency did not come back under 100ms for good before the window's end, at 10s: the median of the last second was 200ms")
	checks := Evaluate(never, []scenarios.Expectation{{Measure: "recovery.under", Latency: 100 * ms, Max: f64(3), Line: 7}})
	require.False(t, checks[0].Pass)
	require.Equal(t, []result.Recovery{{At: 5 * time.Second, Direction: "down", Before: 20 * ms, After: 5 * time.Second}}, checks[0].Recovery)
	require.Equal(t, "recovery.under (latency 100ms) [0s, 10s): "+err.Error()+", want <= 3 s: FAIL", checks[0].String())

	// Already under the bound: no time at all.
	require.Zero(t, measuredWith(t, r, "recovery.under", Params{Latency: 250 * ms}))

	// No change in the window: nothing to measure.
	_, err = OfWith(r, "recovery.under", 6*time.Second, 0, Params{Latency: 100 * ms})
	require.ErrorIs(t, err, ErrNoData)
	require.ErrorContains(t, err, "no network phase change in [6s, 10s)")
}

// Recovery: 20 ms before the change, 200 ms for 1.5 s after it, 22 ms
// (within 20%) from 6.5 s. The median of a second starting at s after the
// change is back once more than half its frames are from 6.5 s on: s = 1 s.
// A pause in the display after 6.5 s holds the recovery back until a whole
// second without a freeze follows it.
func TestMeasureRecovery(t *testing.T) {
	lat := func(d time.Duration) time.Duration {
		switch {
		case d < 5*time.Second:
			return 20 * ms
		case d < 6500*ms:
			return 200 * ms
		}
		return 22 * ms
	}
	r := stream(lat)
	rec, err := newWindow(r, 0, r.Ran).recoveries()
	require.NoError(t, err)
	require.Len(t, rec, 1)
	require.True(t, rec[0].Recovered)
	require.Equal(t, 20*ms, rec[0].Before)
	require.InDelta(t, float64(time.Second), float64(rec[0].After), float64(20*ms))
	require.InDelta(t, rec[0].After.Seconds(), measured(t, r, "recovery", 0, 0), 1e-9)

	frozen := stream(lat, result.Interval{From: 6500 * ms, To: 7 * time.Second})
	rec, err = newWindow(frozen, 0, frozen.Ran).recoveries()
	require.NoError(t, err)
	require.True(t, rec[0].Recovered)
	// The pause from the last display before 6.5 s to 7 s must be under
	// 150 ms inside the second: it starts at 6.85 s at the earliest.
	require.InDelta(t, float64(1850*ms), float64(rec[0].After), float64(20*ms))
	// The same with the screen recorded, an animation changing at every
	// refresh: the pause is a freeze all the same.
	animate(frozen)
	again, err := newWindow(frozen, 0, frozen.Ran).recoveries()
	require.NoError(t, err)
	require.Equal(t, rec, again)

	// Never back: the time to the end of the window.
	never := stream(func(d time.Duration) time.Duration {
		if d < 5*time.Second {
			return 20 * ms
		}
		return 30 * ms
	})
	rec, err = newWindow(never, 0, 9*time.Second).recoveries()
	require.NoError(t, err)
	require.Equal(t, result.Recovery{At: 5 * time.Second, Direction: "down", Before: 20 * ms, Recovered: false, After: 4 * time.Second}, rec[0])
}

func TestMeasureErrors(t *testing.T) {
	r := handmade()
	_, err := Of(r, "latency.mean", 0, 0)
	require.ErrorIs(t, err, ErrUnknown)
	_, err = Of(r, "latency.median", 2*time.Second, time.Second)
	require.ErrorIs(t, err, ErrWindow)
	_, err = Of(r, "latency.median", -time.Second, 0)
	require.ErrorIs(t, err, ErrWindow)
	_, err = Of(r, "latency.median", 2600*ms, 0)
	require.ErrorIs(t, err, ErrNoData)
	require.ErrorContains(t, err, "no frame displayed in [2.6s, 3s)")
	_, err = Of(r, "utilisation", time.Second, 2*time.Second)
	require.ErrorIs(t, err, ErrNoData)
	require.ErrorContains(t, err, "no rate cap or trace")
	_, err = Of(r, "freezes", 0, 10*ms)
	require.ErrorIs(t, err, ErrNoData)
	_, err = Of(r, "recovery", 0, 900*ms)
	require.ErrorIs(t, err, ErrNoData, "no change in the window")
	_, err = OfWith(r, "utilisation.sent", time.Second, 2*time.Second, Params{})
	require.ErrorIs(t, err, ErrNoData)
	require.EqualError(t, err, "lab: nothing to measure: the downlink has no rate cap or trace in [1s, 2s)")
	_, err = OfWith(r, "latency.time-above", 0, 10*ms, Params{Latency: 50 * ms})
	require.ErrorIs(t, err, ErrNoData)
	require.ErrorContains(t, err, "no frame displayed before 10ms")
	_, err = OfWith(r, "bitrate.target", 0, 0, Params{At: 3500 * ms})
	require.ErrorIs(t, err, ErrWindow)
	require.ErrorContains(t, err, "at 3.5s is after the session's end, 3s")
	_, err = OfWith(r, "bitrate.capacity-correlation", 0, 0, Params{Every: time.Second})
	require.ErrorIs(t, err, ErrNoData, "two capped periods of a second")
	// The figures: each measurement needs its own, and takes no other.
	_, err = Of(r, "recovery.under", 0, 0)
	require.ErrorIs(t, err, ErrParams)
	require.EqualError(t, err, "lab: bad parameters: recovery.under needs latency")
	_, err = OfWith(r, "latency.median", 0, 0, Params{At: time.Second})
	require.ErrorIs(t, err, ErrParams)
	require.EqualError(t, err, "lab: bad parameters: latency.median does not read at")
	_, err = OfWith(r, "bitrate.target", 0, 0, Params{At: time.Second, Latency: ms})
	require.ErrorIs(t, err, ErrParams)
	// Beyond the end is the end.
	v, err := Of(r, "frames.displayed", 0, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 6.0, v)
}

// The lab computes every measurement of the catalogue: a measurement added
// to it without the lab's support fails here, not in a scenario.
func TestMeasureCoversTheCatalogue(t *testing.T) {
	r := handmade()
	// A figure for each key a measurement may read, one the handmade
	// result can be measured with.
	example := map[string]Params{"latency": {Latency: 150 * ms}, "at": {At: 1500 * ms}, "every": {Every: 500 * ms}, "flow": {Flow: "main"}}
	for _, m := range scenarios.Measurements {
		var p Params
		for _, key := range scenarios.MeasurementKeys(m.Name) {
			e, ok := example[key]
			require.True(t, ok, "%s reads %s, which Params lacks", m.Name, key)
			p.Latency, p.At, p.Every = max(p.Latency, e.Latency), max(p.At, e.At), max(p.Every, e.Every)
			p.Flow = max(p.Flow, e.Flow)
		}
		if p != (Params{}) {
			_, err := Of(r, m.Name, 0, 0)
			require.ErrorIs(t, err, ErrParams, "%s without its figure", m.Name)
		}
		_, err := OfWith(r, m.Name, 0, 0, p)
		if m.Name == "time-to-full-use" || m.Name == "connect.time" || m.Name == "first-frame" || strings.HasPrefix(m.Name, "path.") ||
			m.Name == "fairness.jain" {
			// The handmade video never uses 90% of its link, and has no
			// path and no second session: the check must fail saying so,
			// not pass with a made-up figure.
			require.ErrorIs(t, err, ErrNoData, m.Name)
			continue
		}
		require.NoError(t, err, m.Name)
	}
	r.Path = &result.PathRecord{Path: "relay", Connect: 250 * ms}
	for _, m := range scenarios.Measurements {
		if m.Name == "connect.time" || m.Name == "first-frame" || strings.HasPrefix(m.Name, "path.") {
			_, err := Of(r, m.Name, 0, 0)
			require.NoError(t, err, m.Name)
		}
	}
	_, err := Of(withTraffic(handmade()), "fairness.jain", 0, 0)
	require.NoError(t, err)

	// Each measurement's figure, worked out by hand, on a result that has
	// what it measures: a measurement of the catalogue that is computed
	// wrongly (another's figure, or none) fails here, and one added to the
	// catalogue fails until it has its answer here.
	s := time.Second
	// A steady stream whose k-th frame (1..599) has k ms of latency:
	// nearest-rank median 300, p95 570, p99 594.
	ramp := func() *result.Run {
		return stream(func(d time.Duration) time.Duration { return (d*60 + s/2) / s * ms })
	}
	// A stream 200 ms late until 2 s and 50 ms after: the seconds tried
	// every 250 ms, the first whose median is under 100 ms starts at 1.5 s
	// (30 frames of each).
	late := func() *result.Run {
		return stream(func(d time.Duration) time.Duration {
			if d < 2*s {
				return 200 * ms
			}
			return 50 * ms
		})
	}
	// handmade with its last second's capacity what frame 7 brings, 8000
	// bits: that second is fully used.
	full := func() *result.Run {
		r := handmade()
		r.Series[2].Down.CapacityBps = 8000
		return r
	}
	withPath := func() *result.Run {
		r := handmade()
		r.Path = &result.PathRecord{Path: "relay", Connect: 250 * ms}
		return r
	}
	rateControl := func() *result.Run {
		r := handmade()
		r.Events = append(r.Events, result.EventRecord{At: 2600 * ms, Kind: result.EventSkip, Reason: agent.SkipRateControl})
		return r
	}
	traffic := func() *result.Run { return withTraffic(handmade()) }
	answers := map[string]struct {
		run      func() *result.Run
		from, to time.Duration
		p        Params
		want     float64
	}{
		"latency.median":     {run: ramp, want: 0.300},
		"latency.p95":        {run: ramp, want: 0.570},
		"latency.p99":        {run: ramp, want: 0.594},
		"latency.min":        {run: ramp, want: 0.001},
		"latency.max":        {run: ramp, want: 0.599},
		"latency.time-above": {run: handmade, p: Params{Latency: 50 * ms}, want: 920.0 / 2980},
		// Arrived: 5 5 10 10 20 25 30 ms.
		"network.median":     {run: handmade, want: 0.010},
		"estimate.error.max": {run: handmade, want: 0.010},
		"frames.displayed":   {run: handmade, want: 6},
		"frames.skipped":     {run: handmade, want: 3},
		// The reasons the agent and the viewer record (checked below).
		"frames.skipped.send-cap":            {run: handmade, want: 2},
		"frames.skipped.encoder-unavailable": {run: handmade, want: 1},
		"frames.skipped.rate-control":        {run: rateControl, want: 1},
		"frames.dropped":                     {run: handmade, want: 2},
		"frames.dropped.overtaken":           {run: handmade, want: 1},
		"fps":                                {run: handmade, want: 2},
		"freezes":                            {run: handmade, want: 4},
		"freeze.longest":                     {run: handmade, want: 1.370},
		// 12000 bytes in 3 s.
		"bitrate.mean":                 {run: handmade, want: 32_000},
		"bitrate.min":                  {run: handmade, want: 2_000_000},
		"bitrate.target":               {run: handmade, p: Params{At: 1500 * ms}, want: 3_000_000},
		"bitrate.sent":                 {run: handmade, p: Params{At: s}, want: 80_000},
		"bitrate.capacity-correlation": {run: handmade, p: Params{Every: 500 * ms}, want: 1},
		"quality.final":                {run: handmade, want: 0.95},
		"quality.psnr.median":          {run: handmade, want: 38},
		"quality.psnr.min":             {run: handmade, want: 30},
		"quality.ssim.median":          {run: handmade, want: 0.9},
		"quality.ssim.min":             {run: handmade, want: 0.5},
		"refinements":                  {run: handmade, want: 2},
		// Damaged: frames 2 and 3 (on the display from 140 ms until frame
		// 5 at 1600 ms) and 6 (1760 ms until frame 7 at 2520 ms).
		"frames.damaged":  {run: damaged, want: 3},
		"damaged.time":    {run: damaged, want: 1.460 + 0.760},
		"damaged.longest": {run: damaged, want: 1.460},
		"keyframes.asked": {run: damaged, want: 2},
		"keyframes.sent":  {run: damaged, want: 2},
		"refreshes.asked": {run: damaged, want: 1},
		// In [0, 320 ms) 10000 bytes sent, 6000 arrived, of 32000 bits
		// the link could carry.
		"utilisation":         {run: handmade, to: 320 * ms, want: 48_000.0 / 32_000},
		"utilisation.sent":    {run: handmade, to: 320 * ms, want: 80_000.0 / 32_000},
		"recovery":            {run: handmade, want: 2},
		"recovery.under":      {run: handmade, p: Params{Latency: 150 * ms}, want: 0.6},
		"time-to-low-latency": {run: late, want: 1.5},
		"time-to-full-use":    {run: full, want: 2},
		"connect.time":        {run: withPath, want: 0.25},
		"first-frame":         {run: withPath, want: 0.27},
		"path.direct-lan":     {run: withPath, want: 0},
		"path.direct-public":  {run: withPath, want: 0},
		"path.relay":          {run: withPath, want: 1},
		"path.websocket":      {run: withPath, want: 0},
		"flow.throughput":     {run: traffic, p: Params{Flow: "download"}, want: 50_000},
		"flow.share":          {run: traffic, p: Params{Flow: "download"}, want: 1},
		"flow.latency.median": {run: traffic, p: Params{Flow: "colleague"}, want: 0.080},
		"flow.latency.p95":    {run: traffic, p: Params{Flow: "colleague"}, want: 0.120},
		"fairness.jain":       {run: traffic, from: s, to: 3 * s, want: 6.4e9 / 8.704e9},
	}
	var names []string
	for _, m := range scenarios.Measurements {
		names = append(names, m.Name)
		a, ok := answers[m.Name]
		if !ok {
			t.Errorf("%s: in the catalogue without an answer worked out here", m.Name)
			continue
		}
		got, err := OfWith(a.run(), m.Name, a.from, a.to, a.p)
		require.NoError(t, err, m.Name)
		require.InDelta(t, a.want, got, 1e-9, m.Name)
	}
	for name := range answers {
		require.Contains(t, names, name, "an answer for a measurement the catalogue no longer has")
	}
	// A measurement by reason counts what the agent or viewer records
	// under that reason: a name no one records would always be 0.
	reasons := map[string][]string{
		"frames.skipped.": {agent.SkipSendCap, agent.SkipUnavailable, agent.SkipRateControl},
		"frames.dropped.": {viewer.ReasonCorrupt, viewer.ReasonTruncated, viewer.ReasonOvertaken, viewer.ReasonLate},
	}
	for _, name := range names {
		for prefix, recorded := range reasons {
			if reason, ok := strings.CutPrefix(name, prefix); ok {
				require.Contains(t, recorded, reason, "%s: a reason no one records", name)
			}
		}
	}
}

// withTraffic adds three flows to a handmade result (periods of 1 s):
// a download delivering 12500, 0 and 6250 bytes in its three seconds,
// an upload over the uncapped uplink, and a second session from 1 s
// whose frames arrive at 1.1 s (2000 bytes, 50 ms latency), 1.5 s (2000,
// 80 ms) and 2.5 s (4000, 120 ms).
func withTraffic(r *result.Run) *result.Run {
	r.Traffic = []result.FlowRecord{
		{Name: "download", Kind: "tcp-bulk", Direction: "down", Stop: 3 * time.Second, Delivered: []int64{12500, 0, 6250}},
		{Name: "upload", Kind: "quic-bulk", Direction: "up", Stop: 3 * time.Second, Delivered: []int64{1000, 1000, 1000}},
		{Name: "colleague", Kind: "session", Direction: "down", Start: time.Second, Stop: 3 * time.Second, Frames: []result.FlowFrame{
			{Seq: 1, Bytes: 2000, Arrived: 1100 * ms, Displayed: 1150 * ms, Latency: 50 * ms},
			{Seq: 2, Bytes: 2000, Arrived: 1500 * ms, Displayed: 1600 * ms, Latency: 80 * ms},
			{Seq: 3, Bytes: 4000, Arrived: 2500 * ms, Displayed: 2600 * ms, Latency: 120 * ms},
		}},
	}
	return r
}

// The flow measurements, on the handmade result with traffic.
func TestMeasureFlowsKnownAnswers(t *testing.T) {
	r := withTraffic(handmade())
	s := time.Second
	for _, tc := range []struct {
		name, flow string
		from, to   time.Duration
		want       float64
	}{
		// 100000 + 0 + 50000 bits in 3 s; the first half second holds
		// half the first period's.
		{"flow.throughput", "download", 0, 0, 50_000},
		{"flow.throughput", "download", 0, 500 * ms, 100_000},
		{"flow.throughput", "download", 1500 * ms, 2500 * ms, 25_000},
		// main: the frames that arrived in [0, 2 s), 11000 bytes.
		{"flow.throughput", "main", 0, 2 * s, 44_000},
		{"flow.throughput", "colleague", s, 3 * s, 32_000},
		// The downlink is capped in [0, 1 s) (100000 bits) and [2 s, 3 s)
		// (50000): the download fills both.
		{"flow.share", "download", 0, 0, 1},
		{"flow.share", "download", 2 * s, 3 * s, 1},
		{"flow.share", "main", 0, s, 0.8}, // utilisation's figure
		{"flow.latency.median", "colleague", 0, 0, 0.080},
		{"flow.latency.p95", "colleague", 0, 0, 0.120},
		{"flow.latency.median", "colleague", 1500 * ms, 0, 0.080}, // 80 and 120: the lower middle
		{"flow.latency.median", "main", 0, 2 * s, 0.040},          // latency.median's
		// In [1 s, 3 s) main's frames brought 2000 bytes, the colleague's
		// 8000: (16000 + 64000)^2 / (2 x (16000^2 + 64000^2)).
		{"fairness.jain", "", s, 3 * s, 6.4e9 / 8.704e9},
	} {
		t.Run(fmt.Sprintf("%s %s [%v,%v)", tc.name, tc.flow, tc.from, tc.to), func(t *testing.T) {
			got, err := OfWith(r, tc.name, tc.from, tc.to, Params{Flow: tc.flow})
			require.NoError(t, err)
			require.InDelta(t, tc.want, got, 1e-9)
		})
	}
	j, err := Jain([]float64{1, 1, 1})
	require.NoError(t, err)
	require.Equal(t, 1.0, j)
	j, err = Jain([]float64{4, 0, 0, 0})
	require.NoError(t, err)
	require.Equal(t, 0.25, j, "one takes all: 1/n")

	_, err = OfWith(r, "flow.latency.median", 0, 0, Params{Flow: "download"})
	require.ErrorIs(t, err, ErrParams)
	require.EqualError(t, err, "lab: bad parameters: download is a tcp-bulk flow: it has no frames, no latency")
	_, err = OfWith(r, "flow.share", 0, 0, Params{Flow: "upload"})
	require.ErrorIs(t, err, ErrNoData)
	require.EqualError(t, err, "lab: nothing to measure: the uplink has no rate cap or trace in [0s, 3s)")
	_, err = OfWith(r, "flow.throughput", 0, 0, Params{Flow: "dowload"})
	require.ErrorIs(t, err, ErrParams)
	_, err = Of(r, "flow.throughput", 0, 0)
	require.EqualError(t, err, "lab: bad parameters: flow.throughput needs flow")
	_, err = OfWith(r, "fairness.jain", 0, s, Params{})
	require.ErrorIs(t, err, ErrNoData, "the colleague starts at 1 s")

	sum := Summarise(r)
	require.Len(t, sum.Flows, 4)
	require.Equal(t, "main", sum.Flows[0].Name)
	require.InDelta(t, 50_000, sum.Flows[1].ThroughputBps, 1e-9)
	require.Nil(t, sum.Flows[2].Share, "the uplink has no bottleneck")
	require.Equal(t, 80*ms, sum.Flows[3].Latency.Median)
	require.NotNil(t, sum.Fairness)
	require.Nil(t, Summarise(handmade()).Flows, "no traffic, no flows in the summary")
}

// A flow's throughput period by period, as the reports' plot draws it:
// the download's 1 s periods as they are, halves of them prorated, and a
// session's frames by arrival.
func TestFlowThroughputs(t *testing.T) {
	r := withTraffic(handmade())
	got, err := FlowThroughputs(r, "download", time.Second)
	require.NoError(t, err)
	require.Equal(t, []float64{100_000, 0, 50_000}, got)
	got, err = FlowThroughputs(r, "download", 500*ms)
	require.NoError(t, err)
	require.Equal(t, []float64{100_000, 100_000, 0, 0, 50_000, 50_000}, got)
	got, err = FlowThroughputs(r, "colleague", time.Second)
	require.NoError(t, err)
	require.Equal(t, []float64{0, 32_000, 32_000}, got)
	_, err = FlowThroughputs(r, "dowload", time.Second)
	require.ErrorIs(t, err, ErrParams)
	_, err = FlowThroughputs(r, "download", 0)
	require.ErrorIs(t, err, ErrParams)
}

func TestPathMeasurements(t *testing.T) {
	r := handmade()
	r.Path = &result.PathRecord{Path: "websocket", Connect: 3100 * ms}
	for name, want := range map[string]float64{
		"path.websocket": 1, "path.relay": 0, "path.direct-lan": 0, "path.direct-public": 0,
		"connect.time": 3.1,
		// The first frame is displayed 20 ms after time zero.
		"first-frame": 3.12,
	} {
		v, err := Of(r, name, 0, 0)
		require.NoError(t, err, name)
		require.InDelta(t, want, v, 1e-9, name)
	}
}

func TestTimeUntil(t *testing.T) {
	r := handmade()
	v, err := Of(r, "time-to-low-latency", 0, 0)
	require.NoError(t, err)
	require.Zero(t, v, "the first second's median (30 ms) is already under 100 ms")
	_, err = Of(r, "time-to-low-latency", 0, 500*ms)
	require.ErrorIs(t, err, ErrNoData, "a window shorter than a second holds no whole second")
}

func TestSummaryOfHandmade(t *testing.T) {
	r := handmade()
	s := Summarise(r)
	u := 88_000.0 / 150_000
	require.Equal(t, result.Summary{
		Frames: 7, Displayed: 6, FirstDisplay: 20 * ms,
		Latency:       result.LatencySummary{Median: 30 * ms, P95: 100 * ms, P99: 100 * ms, Min: 20 * ms, Max: 100 * ms},
		NetworkMedian: 10 * ms, EstimateErrorMax: 10 * ms, FPS: 2,
		Freezes:       []result.Interval{{From: 230 * ms, To: 1600 * ms}, {From: 1600 * ms, To: 1760 * ms}, {From: 1760 * ms, To: 2520 * ms}, {From: 2520 * ms, To: 3000 * ms}},
		FreezeLongest: 1370 * ms,
		Skipped:       map[string]int{"send-cap": 2, "encoder-unavailable": 1},
		Dropped:       map[string]int{"overtaken": 1, "late": 1},
		BitrateMean:   12_000 * 8 / 3, BitrateMin: 2_000_000,
		QualityFinal: 0.95, Refinements: 2, Utilisation: &u,
		Recovery: []result.Recovery{
			{At: time.Second, Direction: "both", Before: 30 * ms, After: 2 * time.Second},
			{At: 2200 * ms, Direction: "down", Before: 60 * ms, After: 800 * ms},
		},
	}, s)
}

func f64(v float64) *float64 { return &v }

// Expectations: each check carries the value measured beside its bounds,
// passes or fails on them, and fails with the reason when nothing could be
// measured.
func TestEvaluateExpectations(t *testing.T) {
	r := handmade()
	checks := Evaluate(r, []scenarios.Expectation{
		{Measure: "latency.median", To: 2 * time.Second, Max: f64(0.05), Line: 10},
		{Measure: "latency.median", To: 2 * time.Second, Max: f64(0.03), Line: 11},
		{Measure: "frames.skipped.send-cap", Min: f64(1), Line: 12},
		{Measure: "fps", Min: f64(1), Max: f64(1.5), Line: 13},
		{Measure: "latency.max", From: 2600 * ms, Max: f64(1), Line: 14},
		{Measure: "no.such", Line: 15},
	})
	require.Len(t, checks, 6)
	require.Equal(t, result.Check{Measure: "latency.median", Unit: scenarios.UnitDuration, To: 2 * time.Second, Max: f64(0.05), Value: 0.04, Within: true, Pass: true, Line: 10}, checks[0])
	require.Equal(t, "latency.median [0s, 2s) = 40 ms, want <= 50 ms: pass", checks[0].String())
	require.False(t, checks[1].Pass)
	require.Equal(t, 0.04, checks[1].Value)
	require.Equal(t, "latency.median [0s, 2s) = 40 ms, want <= 30 ms: FAIL: above the required maximum", checks[1].String())
	require.True(t, checks[2].Pass)
	require.Equal(t, 2.0, checks[2].Value)
	require.Equal(t, 3*time.Second, checks[2].To, "an open window ends at the end")
	require.False(t, checks[3].Pass)
	require.Equal(t, 2.0, checks[3].Value)
	require.Equal(t, "fps [0s, 3s) = 2, want >= 1 and <= 1.5: FAIL: above the required maximum", checks[3].String())
	require.False(t, checks[4].Pass)
	require.Contains(t, checks[4].Error, "no frame displayed")
	require.False(t, checks[5].Pass)
	require.Contains(t, checks[5].Error, "unknown measurement")

	// The measurements with a figure of their own carry it in the check.
	withParams := Evaluate(r, []scenarios.Expectation{
		{Measure: "bitrate.target", At: time.Second, Max: f64(2_500_000), Line: 16},
		{Measure: "recovery.under", Latency: 150 * ms, Max: f64(1), Line: 17},
		{Measure: "latency.time-above", Latency: 50 * ms, Max: f64(0.25), From: time.Second, Line: 18},
		{Measure: "utilisation.sent", Max: f64(1.2), To: 320 * ms, Line: 19},
		{Measure: "bitrate.capacity-correlation", Every: 500 * ms, Min: f64(-0.5), Line: 20},
	})
	require.Equal(t, "bitrate.target at 1s = 2 Mbit/s, want <= 2.5 Mbit/s: pass", withParams[0].String())
	require.Equal(t, time.Second, withParams[0].At)
	require.Equal(t, "recovery.under (latency 150ms) [0s, 3s) = 600 ms, want <= 1 s: pass", withParams[1].String())
	require.Equal(t, []result.Recovery{
		{At: time.Second, Direction: "both", Before: 30 * ms, Recovered: true, After: 600 * ms},
		{At: 2200 * ms, Direction: "down", Before: 60 * ms, Recovered: true},
	}, withParams[1].Recovery)
	// From 1 s: 30 ms to 1600, 100 to 1760, 60 to 2520, 20 to the end.
	require.Equal(t, "latency.time-above (latency 50ms) [1s, 3s) = 46%, want <= 25%: FAIL: above the required maximum", withParams[2].String())
	require.Equal(t, "utilisation.sent [0s, 320ms) = 250%, want <= 120%: FAIL: above the required maximum", withParams[3].String())
	require.Equal(t, "bitrate.capacity-correlation (every 500ms) [0s, 3s) = 1, want >= -0.5: pass", withParams[4].String())

	r.Checks = checks
	require.False(t, r.Passed())
	r.Checks = checks[:1]
	require.True(t, r.Passed())

	// An expected failure inverts the verdict: missing the bound passes
	// and says so with the reason; meeting it fails, so the mark comes
	// off; measuring nothing fails as any check does.
	const why = "the queue drains slowly"
	marked := Evaluate(r, []scenarios.Expectation{
		{Measure: "latency.median", To: 2 * time.Second, Max: f64(0.03), ExpectedFailure: why},
		{Measure: "latency.median", To: 2 * time.Second, Max: f64(0.05), ExpectedFailure: why},
		{Measure: "latency.max", From: 2600 * ms, Max: f64(1), ExpectedFailure: why},
	})
	require.True(t, marked[0].Pass)
	require.False(t, marked[0].Within)
	require.Equal(t, "latency.median [0s, 2s) = 40 ms, want <= 30 ms: expected failure (the queue drains slowly)", marked[0].String())
	require.False(t, marked[1].Pass)
	require.True(t, marked[1].Within)
	require.Equal(t, "latency.median [0s, 2s) = 40 ms, want <= 50 ms: FAIL (met a bound marked as an expected failure: the queue drains slowly; take the mark off)", marked[1].String())
	require.False(t, marked[2].Pass, "nothing measured is no expected failure")
	require.Contains(t, marked[2].String(), "no frame displayed")
}

// A result read back from JSON is the same result and measures the same.
func TestHandmadeJSONRoundTrip(t *testing.T) {
	r := handmade()
	r.Summary = Summarise(r)
	r.Checks = Evaluate(r, []scenarios.Expectation{{Measure: "fps", Min: f64(1)}})
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var back result.Run
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, r, &back)
}

// measuredWith is OfWith over the whole run that fails the test on an
// error.
func measuredWith(t *testing.T, r *result.Run, name string, p Params) float64 {
	t.Helper()
	v, err := OfWith(r, name, 0, 0, p)
	require.NoError(t, err, name)
	return v
}

// measured is Of that fails the test on an error.
func measured(t *testing.T, r *result.Run, name string, from, to time.Duration) float64 {
	t.Helper()
	v, err := Of(r, name, from, to)
	require.NoError(t, err, name)
	return v
}
