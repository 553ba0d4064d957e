package measure

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
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
func handmade() *result.Run {
	frame := func(seq uint64, capt, sent, arr, disp, est time.Duration, bytes int, q float64, pass int) result.FrameRecord {
		f := result.FrameRecord{Seq: seq, Pass: pass, Bytes: bytes, Quality: q,
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
		// Pauses after displays at 20 140 230 1600 1760 2520 ms and to the
		// end: 120 90 1370 160 760 480; over 150 ms: 4.
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
	// Beyond the end is the end.
	v, err := Of(r, "frames.displayed", 0, time.Hour)
	require.NoError(t, err)
	require.Equal(t, 6.0, v)
}

// The lab computes every measurement of the catalogue: a measurement added
// to it without the lab's support fails here, not in a scenario.
func TestMeasureCoversTheCatalogue(t *testing.T) {
	r := handmade()
	for _, m := range scenarios.Measurements {
		_, err := Of(r, m.Name, 0, 0)
		if m.Name == "time-to-full-use" || m.Name == "connect.time" || m.Name == "first-frame" || strings.HasPrefix(m.Name, "path.") {
			// The handmade video never uses 90% of its link, and has no
			// path: the check must fail saying so, not pass with a
			// made-up figure.
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
	require.Equal(t, result.Check{Measure: "latency.median", Unit: scenarios.UnitDuration, To: 2 * time.Second, Max: f64(0.05), Value: 0.04, Pass: true, Line: 10}, checks[0])
	require.Equal(t, "latency.median [0s, 2s) = 40 ms, want <= 50 ms: pass", checks[0].String())
	require.False(t, checks[1].Pass)
	require.Equal(t, 0.04, checks[1].Value)
	require.Equal(t, "latency.median [0s, 2s) = 40 ms, want <= 30 ms: FAIL", checks[1].String())
	require.True(t, checks[2].Pass)
	require.Equal(t, 2.0, checks[2].Value)
	require.Equal(t, 3*time.Second, checks[2].To, "an open window ends at the end")
	require.False(t, checks[3].Pass)
	require.Equal(t, 2.0, checks[3].Value)
	require.Equal(t, "fps [0s, 3s) = 2, want >= 1 and <= 1.5: FAIL", checks[3].String())
	require.False(t, checks[4].Pass)
	require.Contains(t, checks[4].Error, "no frame displayed")
	require.False(t, checks[5].Pass)
	require.Contains(t, checks[5].Error, "unknown measurement")

	r.Checks = checks
	require.False(t, r.Passed())
	r.Checks = checks[:1]
	require.True(t, r.Passed())
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

// measured is Of that fails the test on an error.
func measured(t *testing.T, r *result.Run, name string, from, to time.Duration) float64 {
	t.Helper()
	v, err := Of(r, name, from, to)
	require.NoError(t, err, name)
	return v
}
