package lab

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// runScenario runs a scenario in a synctest bubble with crypto/rand seeded
// from the scenario's seed, as the library's entry points do.
// libraryScenario is the library's scenario of that name.
func libraryScenario(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	i := slices.IndexFunc(lib, func(sc *scenarios.Scenario) bool { return sc.Name == name })
	require.GreaterOrEqual(t, i, 0, name)
	return lib[i]
}

func runScenario(t *testing.T, sc *scenarios.Scenario) *result.Run {
	t.Helper()
	cryptotest.SetGlobalRandom(t, sc.Seed)
	var res *result.Run
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = Run(context.Background(), sc)
		require.NoError(t, err)
	})
	return res
}

// budget is the agent of a test that needs a video at its target bitrate
// whatever the content: the H.264 model's budget sizes, not OpenH264's
// calibrated ones.
var budget = scenarios.Agent{FrameSizes: "budget"}

// budgetPreset is the default software encoder with the budget's sizes.
func budgetPreset() encoder.Config {
	c, err := encoder.Preset(encoder.PresetOpenH264Asm)
	if err != nil {
		panic(err)
	}
	return encoder.Budgeted(c)
}

// ms shortens the tests' durations.
const ms = time.Millisecond

// f64 points at a bound.
func f64(v float64) *float64 { return &v }

// measured is measure.Of that fails the test on an error.
func measured(t *testing.T, r *result.Run, name string, from, to time.Duration) float64 {
	t.Helper()
	v, err := measure.Of(r, name, from, to)
	require.NoError(t, err, name)
	return v
}

func lanPhase() scenarios.Phase {
	return scenarios.Phase{Delay: 250 * time.Microsecond, Rate: 1_000_000_000, Queue: scenarios.Queue{Packets: 1000}}
}

func both(ph ...scenarios.Phase) scenarios.Network {
	return scenarios.Network{Up: ph, Down: ph}
}

// The scenario's instants are the session's: time zero of the result is
// the links' epoch, so a phase that starts at 2 s changes the link for
// every packet sent from 2 s on, however long the handshake took.
func TestRunTimelineChangesTheLinkAtItsInstant(t *testing.T) {
	const change = 2 * time.Second
	sc := &scenarios.Scenario{Name: "timeline", Seed: 1, Duration: 4 * time.Second, Agent: budget,
		Network: scenarios.Network{
			Up:   []scenarios.Phase{{Delay: 10 * ms}},
			Down: []scenarios.Phase{{Delay: 10 * ms}, {At: change, Delay: 60 * ms}},
		}}
	r := runScenario(t, sc)
	require.Zero(t, r.Late)
	require.Positive(t, r.Handshake)
	var before, after int
	for _, f := range r.Frames {
		if f.Arrived == 0 {
			continue
		}
		switch {
		case f.Sent >= change:
			require.GreaterOrEqual(t, f.Network, 60*ms, "frame %d sent at %v", f.Seq, f.Sent)
			after++
		case f.Network >= 60*ms:
			// Sent before the change, so a packet of it left after.
			require.GreaterOrEqual(t, f.Arrived, change+60*ms, "frame %d", f.Seq)
		default:
			require.Less(t, f.Network, 30*ms, "frame %d sent at %v", f.Seq, f.Sent)
			require.Less(t, f.Arrived, change+10*ms, "frame %d", f.Seq)
			before++
		}
	}
	require.Greater(t, before, 100)
	require.Greater(t, after, 100)
	require.Equal(t, []result.PhaseInfo{{At: 0, Description: "delay 10ms"}, {At: change, Description: "delay 60ms"}}, r.Network.Down)
	// The latency never comes back to the level of the 10 ms link.
	require.Len(t, r.Summary.Recovery, 1)
	rec := r.Summary.Recovery[0]
	require.False(t, rec.Recovered)
	require.Equal(t, "down", rec.Direction)
	require.Equal(t, 2*time.Second, rec.After)
	t.Logf("before the change %d frames, after %d; latency before %v, after %.1f ms", before, after, rec.Before,
		1000*measured(t, r, "latency.median", change+time.Second, 0))
}

// Spikes, outages and a blocked UDP reach the link on the session's clock.
func TestRunSpikesOutagesAndBlockReachTheLink(t *testing.T) {
	sc := &scenarios.Scenario{Name: "mobile-ish", Seed: 2, Duration: 6 * time.Second,
		Network: scenarios.Network{
			Up: []scenarios.Phase{{Delay: 10 * ms}},
			Down: []scenarios.Phase{
				{Delay: 10 * ms, Spikes: &scenarios.Spikes{Min: 200 * ms, Max: 200 * ms, Every: time.Second, Duration: 100 * ms, Offset: 500 * ms}},
				{At: 2 * time.Second, Delay: 10 * ms, Outages: &scenarios.Outages{Windows: []scenarios.Window{{Start: 2500 * ms, Duration: time.Second}}}},
				{At: 4500 * ms, BlockUDP: true},
				{At: 5 * time.Second, Delay: 10 * ms},
			},
		}}
	r := runScenario(t, sc)
	// Spike windows [0.5, 0.6) and [1.5, 1.6) s: 200 ms more for frames
	// sent inside, nothing for frames sent well clear of them.
	var spiked, clear int
	for _, f := range r.Frames {
		in := func(a, b time.Duration) bool { return f.Sent >= a && f.Sent < b && f.Arrived > 0 }
		switch {
		case in(520*ms, 580*ms), in(1520*ms, 1580*ms):
			require.GreaterOrEqual(t, f.Network, 200*ms, "frame %d sent at %v", f.Seq, f.Sent)
			spiked++
		case in(100*ms, 450*ms), in(1100*ms, 1450*ms):
			require.Less(t, f.Network, 20*ms, "frame %d sent at %v", f.Seq, f.Sent)
			clear++
		}
	}
	require.Positive(t, spiked)
	require.Positive(t, clear)
	require.Positive(t, r.Links.Down.Dropped["outage"])
	require.Positive(t, r.Links.Down.Dropped["blocked"])
	// The outage (2.5-3.5 s) and the block (4.5-5 s) freeze the image.
	var covers [2]bool
	for _, fz := range r.Summary.Freezes {
		covers[0] = covers[0] || (fz.From <= 2600*ms && fz.To >= 3500*ms)
		covers[1] = covers[1] || (fz.From <= 4600*ms && fz.To >= 5000*ms)
	}
	require.Equal(t, [2]bool{true, true}, covers, "freezes %v", r.Summary.Freezes)
	for _, c := range r.Summary.Recovery {
		t.Logf("recovery after %v (%s): %+v", c.At, c.Direction, c)
	}
	t.Logf("spiked frames %d, clear %d; freezes %v; dropped %v", spiked, clear, r.Summary.Freezes, r.Links.Down.Dropped)
}

// N16 through a scenario: the old encoder restart freezes the image once,
// for about a second; the fix does not freeze.
func TestRunN16RestartIsOneFreeze(t *testing.T) {
	for _, old := range []bool{false, true} {
		sc := &scenarios.Scenario{Name: "n16", Findings: []string{"N16"}, Seed: 1, Duration: 8 * time.Second,
			Network:    both(lanPhase()),
			Controller: scenarios.Controller{Kind: "steps", Bitrate: 4_000_000, Steps: []scenarios.Step{{At: 5 * time.Second, Bitrate: 3_200_000}}},
			Switches:   scenarios.Switches{OldRestartOnBitrateChange: old},
			Agent:      budget, // the library's sizes: no skipped frame makes a gap of its own
		}
		r := runScenario(t, sc)
		freezes := measured(t, r, "freezes", 0, 0)
		longest := measured(t, r, "freeze.longest", 0, 0)
		t.Logf("N16 old=%v: freezes %v, longest %.3f s, skipped %v, targets %v", old, freezes, longest, r.Summary.Skipped, r.Targets)
		require.Equal(t, []result.TargetRecord{{At: 0, Bps: 4_000_000}, {At: 5 * time.Second, Bps: 3_200_000}}, r.Targets, "the steps count from time zero")
		require.Equal(t, 3_200_000.0, measured(t, r, "bitrate.min", 0, 0))
		if old {
			require.Equal(t, 1.0, freezes)
			require.InDelta(t, 1.0, longest, 0.1)
			require.Positive(t, measured(t, r, "frames.skipped.encoder-unavailable", 0, 0))
			require.InDelta(t, float64(5*time.Second), float64(r.Summary.Freezes[0].From), float64(50*ms))
		} else {
			require.Zero(t, freezes)
			require.Less(t, longest, 0.03)
		}
	}
}

// A result records the screen's ground truth: when each version appeared,
// and which version each frame shows, a refinement pass the version it
// refines. Against it a still screen is never frozen, however long the
// display pauses: a photo appears at 1 s on a slow link and the screen
// stays still after it.
func TestRunRecordsTheScreen(t *testing.T) {
	sc := &scenarios.Scenario{Name: "photo", Seed: 1, Duration: 4 * time.Second,
		Network:    both(scenarios.Phase{Delay: 20 * ms, Rate: 4_000_000}),
		Screen:     []scenarios.ScreenPhase{{Source: "still"}, {At: time.Second, Source: "photo"}},
		Controller: scenarios.Controller{Kind: "fixed", Bitrate: 3_000_000}}
	r := runScenario(t, sc)
	require.Equal(t, []time.Duration{0, time.Second}, r.ScreenChanges, "the desktop, then the photo")
	passes := map[uint64]int{}
	var image uint64 // the version of the last new image
	for _, f := range r.Frames {
		require.Positive(t, f.Version, "frame %d", f.Seq)
		require.LessOrEqual(t, r.ScreenChanges[f.Version-1], f.Captured, "frame %d shows what was on the screen when it was captured", f.Seq)
		if f.Pass == 0 {
			image = f.Version
			continue
		}
		require.Equal(t, image, f.Version, "pass %d of frame %d refines the last image", f.Pass, f.Seq)
		passes[f.Version]++
	}
	require.Positive(t, passes[1], "the desktop is refined")
	require.Positive(t, passes[2], "then the photo")
	require.Zero(t, measured(t, r, "freezes", 0, 0))
	// The photo is the only change: it waited from 1 s for its first frame.
	first := r.Frames[slices.IndexFunc(r.Frames, func(f result.FrameRecord) bool { return f.Version == 2 })]
	require.InDelta(t, (first.Displayed - time.Second).Seconds(), measured(t, r, "freeze.longest", 0, 0), 1e-9)
	// Without the screen's changes, as results were measured before, the
	// second after the last refinement pass is a freeze.
	old := *r
	old.ScreenChanges = nil
	require.Positive(t, measured(t, &old, "freezes", 0, 0))
	t.Logf("photo: %d frames, passes by version %v, first photo frame displayed at %v; freeze.longest %v, before %v",
		len(r.Frames), passes, first.Displayed, r.Summary.FreezeLongest, measured(t, &old, "freeze.longest", 0, 0))
}

// At 50 kbit/s a frame at every refresh would be 104 bytes: the encoder's
// rate control skips captures instead (frames.skipped.rate-control), the
// frames keep their smallest useful size and the video its target. The
// skipped images' changes go with the next frame, in both pipelines, so no
// keyframe follows a skip.
func TestRunLowBitrateSkipsFrames(t *testing.T) {
	for _, captureFirst := range []bool{false, true} {
		sc := &scenarios.Scenario{Name: "low", Seed: 1, Duration: 6 * time.Second, Network: both(lanPhase()),
			Controller: scenarios.Controller{Kind: "fixed", Bitrate: 50_000}, Agent: budget,
			Switches: scenarios.Switches{OldCaptureFirst: captureFirst}}
		r := runScenario(t, sc)
		skipped := measured(t, r, "frames.skipped.rate-control", 0, 0)
		fps := measured(t, r, "fps", 2*time.Second, 0)
		sent := measured(t, r, "bitrate.mean", 2*time.Second, 0)
		t.Logf("capture first %v: %v captures skipped by the rate control, %.1f fps, %.1f kbit/s", captureFirst, skipped, fps, sent/1000)
		require.Positive(t, skipped)
		require.InDelta(t, 50_000.0/(8*320), fps, 2)
		require.InDelta(t, 50_000, sent, 2500)
		for _, f := range r.Frames[1:] {
			require.False(t, f.Keyframe, "frame %d", f.Seq)
		}
	}
}

// N8's cap through a scenario: 10 Mbit/s of video on a 2 Mbit/s link skips
// captures instead of queueing them, and the series shows the link full.
func TestRunN8SendCapSkips(t *testing.T) {
	slow := scenarios.Phase{Delay: 10 * ms, Rate: 2_000_000}
	sc := &scenarios.Scenario{Name: "n8-cap", Findings: []string{"N8"}, Seed: 1, Duration: 10 * time.Second,
		Network: both(slow), Controller: scenarios.Controller{Kind: "fixed", Bitrate: 10_000_000}, Agent: budget}
	r := runScenario(t, sc)
	skipped := measured(t, r, "frames.skipped.send-cap", 0, 0)
	require.Positive(t, skipped)
	require.Equal(t, skipped, measured(t, r, "frames.skipped", 0, 0))
	u := measured(t, r, "utilisation", 2*time.Second, 0)
	require.Greater(t, u, 0.8)
	// Bytes queued before the window opened count as delivered in it:
	// 1.0104 in one run since the viewer asks for keyframes, whose bytes
	// fill the queue at every instant.
	require.LessOrEqual(t, u, 1.02)
	capTime := time.Duration(agent.DefaultSendCap * 8 * int64(time.Second) / 2_000_000)
	require.Less(t, measured(t, r, "latency.max", 5*time.Second, 0), 2*capTime.Seconds())

	// The link is full from the first second on; frames are few and large
	// (each spends the budget of the time the cap made it wait), so most
	// buckets display nothing.
	require.Len(t, r.Series, 40)
	var queued, displayed int
	var through float64
	for _, pt := range r.Series[4:] {
		require.Equal(t, 250*ms, pt.To-pt.From)
		require.True(t, pt.Down.Capped)
		require.Equal(t, 2e6, pt.Down.CapacityBps)
		require.LessOrEqual(t, pt.Down.ThroughputBps, 2.05e6, "at %v", pt.To)
		through += pt.Down.ThroughputBps / 36
		require.Equal(t, int64(10_000_000), pt.TargetBps)
		if pt.Down.QueueBytes > 0 {
			queued++
		}
		if pt.Displayed > 0 {
			displayed++
			require.Positive(t, pt.LatencyMedian)
		}
	}
	require.Greater(t, through, 1.9e6)
	require.Greater(t, queued, 30)
	require.Positive(t, displayed)
	t.Logf("N8 cap: skipped %v, utilisation %.3f, latency median %v p99 %v max %v, link %+v", skipped, u,
		r.Summary.Latency.Median, r.Summary.Latency.P99, r.Summary.Latency.Max, r.Links.Down)
}

// A trace from the module's testdata bounds the downlink.
func TestRunTraceBoundsTheDownlink(t *testing.T) {
	sc := &scenarios.Scenario{Name: "trace", Seed: 1, Duration: 5 * time.Second,
		Network: scenarios.Network{
			Up:   []scenarios.Phase{{Delay: 20 * ms}},
			Down: []scenarios.Phase{{Delay: 20 * ms, Trace: &scenarios.Trace{File: "testdata/traces/cellular-rough.down"}}},
		},
		Controller: scenarios.Controller{Bitrate: 8_000_000}}
	r := runScenario(t, sc)
	u := measured(t, r, "utilisation", time.Second, 0)
	require.Greater(t, u, 0.3)
	require.LessOrEqual(t, u, 1.0)
	var capBits, delivered float64
	for _, pt := range r.Series {
		capBits += pt.Down.CapacityBps * (pt.To - pt.From).Seconds()
		delivered += pt.Down.ThroughputBps * (pt.To - pt.From).Seconds()
	}
	require.LessOrEqual(t, delivered, capBits*1.01, "the link delivers no more than the trace offers")
	t.Logf("trace: utilisation %.3f, capacity %.2f Mbit/s, delivered %.2f Mbit/s, latency median %v",
		u, capBits/5e6, delivered/5e6, r.Summary.Latency.Median)
}

// A scenario replaying one of the real traces of ../shared runs when the
// folder is there and skips, saying where it looked, when it is not.
func TestRunSharedTrace(t *testing.T) {
	sc := &scenarios.Scenario{Name: "verizon", Seed: 1, Duration: 3 * time.Second,
		Network: scenarios.Network{
			Up:   []scenarios.Phase{{Delay: 20 * ms, Trace: &scenarios.Trace{File: "shared:Verizon-LTE-short.up"}}},
			Down: []scenarios.Phase{{Delay: 20 * ms, Trace: &scenarios.Trace{File: "shared:Verizon-LTE-short.down"}}},
		}}
	if _, err := plan.Convert(sc); errors.Is(err, ErrSharedAbsent) {
		needs.Missing(t, needs.Shared, "%v", err)
	}
	r := runScenario(t, sc)
	require.Positive(t, r.Summary.Displayed)
	t.Logf("Verizon LTE: median %v, utilisation %v", r.Summary.Latency.Median, *r.Summary.Utilisation)
}

// Expectations are evaluated with the measured value beside the bound.
func TestRunEvaluatesExpectations(t *testing.T) {
	sc := &scenarios.Scenario{Name: "lan", Seed: 1, Duration: 3 * time.Second, Network: both(lanPhase()),
		Expect: []scenarios.Expectation{
			{Measure: "latency.median", From: time.Second, Max: f64(0.020), Line: 7},
			{Measure: "fps", From: time.Second, Min: f64(59), Line: 8},
			{Measure: "latency.median", From: time.Second, Max: f64(0.010), Line: 9},
		}}
	r := runScenario(t, sc)
	require.Len(t, r.Checks, 3)
	median := measured(t, r, "latency.median", time.Second, 0)
	require.InDelta(t, 0.0133, median, 0.0005, "N3: the sum of the stages")
	require.Equal(t, median, r.Checks[0].Value)
	require.True(t, r.Checks[0].Pass)
	require.True(t, r.Checks[1].Pass, r.Checks[1].String())
	require.Equal(t, 60.0, r.Checks[1].Value)
	require.False(t, r.Checks[2].Pass)
	require.Equal(t, median, r.Checks[2].Value)
	require.Equal(t, 9, r.Checks[2].Line)
	require.False(t, r.Passed())
	for _, c := range r.Checks {
		t.Log(c)
	}
}

// A result written to JSON and read back is the same result and measures
// the same, so reports can work from the files.
func TestRunResultJSONRoundTrip(t *testing.T) {
	sc := &scenarios.Scenario{Name: "lossy", File: "library/lossy.yaml", Description: "d", Findings: []string{"N9"},
		Groups: []string{"lossy"}, Seed: 4, Duration: 3 * time.Second,
		Network:    both(scenarios.Phase{Delay: 25 * ms, Loss: 0.01, Rate: 5_000_000}, scenarios.Phase{At: 2 * time.Second, Delay: 30 * ms, Rate: 4_000_000}),
		Controller: scenarios.Controller{Bitrate: 3_000_000},
		Expect:     []scenarios.Expectation{{Measure: "latency.median", Max: f64(1)}}}
	r := runScenario(t, sc)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var back result.Run
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, r, &back)
	for _, m := range scenarios.Measurements {
		v1, err1 := measure.Of(r, m.Name, 500*ms, 0)
		v2, err2 := measure.Of(&back, m.Name, 500*ms, 0)
		require.Equal(t, err1, err2, m.Name)
		require.Equal(t, v1, v2, m.Name)
	}
	var top map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &top))
	require.JSONEq(t, `"latencylab.result/v1"`, string(top["schema"]))
	t.Logf("JSON: %d bytes for %d frames, %d points", len(b), len(r.Frames), len(r.Series))
}

// Cancelling the context ends the session early with what it measured.
func TestRunStopsWhenCancelled(t *testing.T) {
	sc := &scenarios.Scenario{Name: "long", Seed: 1, Duration: time.Hour, Network: both(lanPhase()), Agent: budget}
	cryptotest.SetGlobalRandom(t, sc.Seed)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), HandshakeLead+1500*ms)
		defer cancel()
		start := time.Now()
		r, err := Run(ctx, sc)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotNil(t, r)
		// Stopped at 1.5 s; closing QUIC then takes a few milliseconds.
		require.GreaterOrEqual(t, time.Since(start), HandshakeLead+1500*ms)
		require.Less(t, time.Since(start), HandshakeLead+1600*ms)
		require.Equal(t, 1500*ms, r.Ran)
		require.NotEmpty(t, r.Interrupted)
		require.InDelta(t, 90, r.Summary.Displayed, 2)
		require.Len(t, r.Series, 6)
	})
}

// quic-go in a bubble is not a function of the seed alone: when several of
// its goroutines are ready at the same virtual instant the runtime picks
// one, so packets, and with them the seeded losses, can fall differently.
// Two runs of the same scenario and seed must still agree closely on the
// summary. The scenario is the documented bad link with a bitrate it can
// carry. Over 15 runs of it the median was the same to the nanosecond,
// frames displayed 573-580 and the mean bitrate identical, but p95 ranged
// 49.6-77.6 ms: which frames a loss hits moves the tail. A bitrate beyond
// what NewReno gets through 1% loss (N9, N11) sits on the edge of the send
// cap, and there even the median moves (50-136 ms over 15 runs at 3
// Mbit/s), so this test does not use one.
func TestRunSameSeedAgrees(t *testing.T) {
	sc := func(seed uint64) *scenarios.Scenario {
		return &scenarios.Scenario{Name: "bad-link", Seed: seed, Duration: 10 * time.Second,
			Network:    both(scenarios.Phase{Delay: 25 * ms, Loss: 0.01, Rate: 5_000_000, Queue: scenarios.Queue{Packets: 1000}}),
			Controller: scenarios.Controller{Bitrate: 1_500_000}, Agent: budget}
	}
	a, b := runScenario(t, sc(7)), runScenario(t, sc(7))
	other := runScenario(t, sc(8))
	for _, x := range []struct {
		what string
		s    result.Summary
	}{{"seed 7, run 1", a.Summary}, {"seed 7, run 2", b.Summary}, {"seed 8", other.Summary}} {
		t.Logf("%s: median %v p95 %v p99 %v max %v displayed %d freezes %d bitrate %.0f", x.what,
			x.s.Latency.Median, x.s.Latency.P95, x.s.Latency.P99, x.s.Latency.Max, x.s.Displayed, len(x.s.Freezes), x.s.BitrateMean)
	}
	sa, sb := a.Summary, b.Summary
	rel := func(x, y time.Duration) float64 { return math.Abs(float64(x-y)) / float64(max(x, y)) }
	t.Logf("same seed: median differs by %v (%.2f%%), p95 by %v (%.1f%%), displayed by %d",
		(sa.Latency.Median - sb.Latency.Median).Abs(), 100*rel(sa.Latency.Median, sb.Latency.Median),
		(sa.Latency.P95 - sb.Latency.P95).Abs(), 100*rel(sa.Latency.P95, sb.Latency.P95), sa.Displayed-sb.Displayed)
	require.Less(t, rel(sa.Latency.Median, sb.Latency.Median), 0.02, "median")
	require.Less(t, rel(sa.Latency.P95, sb.Latency.P95), 0.5, "p95: the tail moves with the losses")
	// Since the viewer follows the reference chain, a frame a loss holds
	// back breaks it and the keyframe asked for costs frames, so which
	// frames a loss hits moves the count: 499-537 over 14 runs of seed 7
	// (2026-12-02). Judged by the bound rule: within a factor of sqrt 2.
	da, db := float64(sa.Displayed), float64(sb.Displayed)
	require.LessOrEqual(t, max(da, db), math.Sqrt2*min(da, db), "displayed")
	require.InDelta(t, sa.BitrateMean, sb.BitrateMean, sa.BitrateMean*0.01)
	// Freezes are a count of rare events, and native runs of a seed are
	// judged by the bound rule, not to the frame: within a factor of sqrt
	// 2, or one freeze apart.
	fa, fb := float64(len(sa.Freezes)), float64(len(sb.Freezes))
	require.LessOrEqual(t, math.Abs(fa-fb), max(1, (math.Sqrt2-1)*max(fa, fb)), "freezes")
	require.InDelta(t, sa.NetworkMedian, sb.NetworkMedian, float64(sa.NetworkMedian)*0.02)
}

// The result says how the software H.264 model sized the frames: the
// budget's rule or the preset's calibrated sizes; a real codec's frames are
// its bytes, and the field is left out.
func TestRunRecordsFrameSizes(t *testing.T) {
	for _, tc := range []struct {
		agent scenarios.Agent
		want  string
	}{
		{scenarios.Agent{}, "calibrated"},
		{budget, "budget"},
		{scenarios.Agent{Hardware: []string{"quicksync"}}, ""}, // the probe chose the hardware model
		{scenarios.Agent{Encoder: "lossless-tile"}, ""},
	} {
		sc := &scenarios.Scenario{Name: "sizes", Seed: 1, Duration: time.Second, Network: both(lanPhase()),
			Controller: scenarios.Controller{Kind: "fixed", Bitrate: 4_000_000}, Agent: tc.agent}
		r := runScenario(t, sc)
		require.Equal(t, tc.want, r.FrameSizes, "%+v", tc.agent)
	}
}
