package gcc_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/gcc"
	"github.com/nuvirahub/latencylab/internal/wire"
)

func mustNew(t *testing.T, c gcc.Config) *gcc.GCC {
	t.Helper()
	g, err := gcc.New(c)
	require.NoError(t, err)
	return g
}

func TestConfig(t *testing.T) {
	assert.Equal(t, gcc.Config{Initial: 4e6, Min: 5e5, Max: 2e7}, gcc.Config{}.WithDefaults())
	for _, c := range []gcc.Config{{Min: -1}, {Initial: -1}, {Max: -1}, {Min: 3e6, Max: 2e6}, {Max: 1e5}} {
		_, err := gcc.New(c)
		assert.ErrorIs(t, err, gcc.ErrConfig, "%+v", c)
	}
}

// With a constant delay the arrival spacing equals the send spacing, the
// filter sees no trend and the rate controller stays in Increase,
// multiplying by 1.08 per second (5.5).
func TestConstantDelayIncreasesEightPercentASecond(t *testing.T) {
	g := mustNew(t, gcc.Config{})
	s := newSim(g, path{capacity: unlimited, prop: ms(40)})
	s.run(10 * time.Second)
	for sec := 2; sec < 10; sec++ {
		ratio := float64(s.bitrateAt(time.Duration(sec+1)*time.Second)) / float64(s.bitrateAt(time.Duration(sec)*time.Second))
		assert.InDelta(t, 1.08, ratio, 0.002, "second %d", sec)
	}
	e := g.Estimate()
	assert.Equal(t, gcc.StateIncrease, e.State)
	assert.Equal(t, gcc.SignalNormal, e.Signal)
	assert.False(t, e.Additive, "no decrease yet: far from convergence, multiplicative")
	// Never left Increase: one run of one rule is one decision, from the
	// start to where the ramp stands.
	ds := g.Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, gcc.RuleDelayIncrease, ds[0].Rule)
	assert.Equal(t, int64(4e6), ds[0].Old)
	assert.Equal(t, g.Bitrate(s.now), ds[0].New)
	t.Logf("constant delay: %.2f -> %.2f Mbit/s in 8 s (1.08^8 = %.3f)",
		float64(s.bitrateAt(2*time.Second))/1e6, float64(s.bitrateAt(10*time.Second))/1e6, math.Pow(1.08, 8))
}

// A capacity drop below the sending rate makes the arrival spacing exceed
// the send spacing: the queue grows, the filter's trend crosses the
// threshold, over-use is signalled and the estimate falls to 0.85 of the
// incoming rate, which the bottleneck now sets.
func TestGrowingQueueDecreasesToBetaTimesReceived(t *testing.T) {
	drop := 3 * time.Second
	const capacity = 3e6
	g := mustNew(t, gcc.Config{})
	s := newSim(g, path{prop: ms(30), capacity: func(t time.Duration) float64 {
		if t < drop {
			return 0
		}
		return capacity
	}})
	s.run(drop)
	before := g.Bitrate(s.now)
	require.Greater(t, before, int64(capacity*1.5), "sending well above what the link will carry")
	s.run(3 * time.Second)

	ds := g.Decisions()
	require.Greater(t, len(ds), 1)
	assert.Equal(t, gcc.RuleDelayIncrease, ds[0].Rule, "the ramp before the drop")
	first := ds[1]
	assert.Equal(t, gcc.RuleDelayDecrease, first.Rule)
	assert.Equal(t, gcc.SignalOveruse, first.Signal)
	assert.Greater(t, first.Trend, first.Threshold)
	detect := first.At.Sub(t0) - drop
	assert.Less(t, detect, 500*time.Millisecond, "over-use detected soon after the drop")

	// Every decrease is to beta x R_hat (5.5): a decision is one episode in
	// Decrease, its inputs those of the step that set New. R_hat is the
	// incoming rate of the last 500 ms: right after the drop it still holds
	// arrivals from before it (faster) and the idle link just before the
	// queue formed (slower), so the first episode ends within a few percent
	// of 0.85 x capacity rather than exactly on it.
	for _, d := range ds {
		assert.NotEqual(t, d.Old, d.New, "a decision changes the target")
		if d.Rule != gcc.RuleDelayDecrease {
			continue
		}
		assert.Less(t, d.New, d.Old)
		require.NotZero(t, d.Received)
		assert.InDelta(t, 0.85*float64(d.Received), float64(d.New), 1, "A_hat = beta x R_hat (5.5)")
	}
	lowest := first.New
	assert.InEpsilon(t, 0.85*capacity, float64(lowest), 0.05, "the first episode ends near 0.85 x the link's rate")
	t.Logf("capacity %.1f -> detected after %v, first decrease %.2f -> %.2f Mbit/s (received %.2f), lowest %.2f",
		capacity/1e6, detect, float64(first.Old)/1e6, float64(first.New)/1e6, float64(first.Received)/1e6, float64(lowest)/1e6)

	// Then the controller settles around the capacity instead of piling
	// up a queue.
	var sum float64
	n := 0
	for _, p := range s.trace {
		if p.at >= drop+time.Second {
			sum += float64(p.bitrate)
			n++
		}
	}
	assert.InEpsilon(t, capacity, sum/float64(n), 0.2)
}

// The threshold falls slowly (K_d) while the trend stays inside it and
// rises fast (K_u) when jitter pushes the trend outside (5.4).
func TestAdaptiveThresholdMoves(t *testing.T) {
	g := mustNew(t, gcc.Config{})
	s := newSim(g, path{capacity: unlimited, prop: ms(40)})
	assert.Equal(t, ms(12.5), g.Estimate().Threshold)
	s.run(time.Second + 20*time.Millisecond)
	th := g.Estimate().Threshold
	// 29 groups processed 33.3 ms apart: 12.5 x (1 - 0.00018 x 33.3)^29.
	assert.InDelta(t, 12.5*math.Pow(1-0.00018*1000/30, float64(g.Estimate().Groups)), float64(th)/1e6, 0.05)
	assert.Less(t, th, ms(12.5))
	s.run(9 * time.Second)
	assert.Equal(t, ms(6), g.Estimate().Threshold, "clamped at 6 ms")

	// Cross traffic comes and goes: the path's delay swells and shrinks by
	// 120 ms every 2 s. The trend leaves the 6 ms band and the threshold
	// follows it up (K_u); once it has, the waves no longer read as
	// over-use: the starvation the draft's adaptive threshold prevents.
	// (The filter, q = 10^-3, smooths a 2 s wave heavily: the trend peaks
	// around 14 ms.)
	s.p.extra = func(i int) time.Duration { return ms(60 * (1 - math.Cos(2*math.Pi*float64(i)/60))) }
	var highest time.Duration
	for range 60 {
		s.run(100 * time.Millisecond)
		highest = max(highest, g.Estimate().Threshold)
	}
	assert.Greater(t, highest, ms(12.5), "the waves push the threshold up, above where it started")
	decreases := func() int {
		n := 0
		for _, d := range g.Decisions() {
			if d.Rule == gcc.RuleDelayDecrease {
				n++
			}
		}
		return n
	}
	waves := decreases()
	assert.NotZero(t, waves, "the first wave, against a 6 ms threshold, reads as over-use")
	s.run(4 * time.Second)
	assert.Equal(t, waves, decreases(), "two more waves, no more decreases")
	t.Logf("threshold: 12.5 ms -> %v after 1 s steady -> 6 ms -> up to %v under 120 ms delay waves (%d decreases in the first 6 s, none in the next 4 s)",
		th, highest, waves)
}

func TestClamps(t *testing.T) {
	// Increases stop at Max: one decision, the ramp, which ends there.
	g := mustNew(t, gcc.Config{Initial: 15e6})
	s := newSim(g, path{capacity: unlimited, prop: ms(40)})
	s.run(10 * time.Second)
	assert.Equal(t, int64(20e6), g.Bitrate(s.now))
	ds := g.Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, gcc.RuleDelayIncrease, ds[0].Rule)
	assert.Equal(t, int64(15e6), ds[0].Old)
	assert.Equal(t, int64(20e6), ds[0].New)

	// Decreases stop at Min: a 300 kbit/s link under a 500 kbit/s floor.
	g = mustNew(t, gcc.Config{})
	s = newSim(g, path{prop: ms(30), capacity: func(time.Duration) float64 { return 300e3 }})
	s.run(20 * time.Second)
	assert.Equal(t, int64(500e3), g.Bitrate(s.now))
	for _, d := range g.Decisions() {
		assert.GreaterOrEqual(t, d.New, int64(500e3))
	}

	// An initial bitrate outside the bounds is clamped at the first call.
	g = mustNew(t, gcc.Config{Initial: 100e6})
	assert.Equal(t, int64(20e6), g.Bitrate(t0))
	ds = g.Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, gcc.Decision{At: t0, Old: 100e6, New: 20e6, Rule: gcc.RuleClamp,
		Signal: gcc.SignalNormal, Threshold: ms(12.5)}, ds[0])
}

// Frames handed to QUIC within 5 ms of a group's first are one group
// (refinement passes, N15); frames out of order are ignored.
func TestGroupsAndOrder(t *testing.T) {
	g := mustNew(t, gcc.Config{})
	v := t0.Add(viewerSkew)
	seq := uint64(0)
	ackAt := func(sent time.Duration, arrived time.Duration) {
		seq++
		g.FrameAcked(t0.Add(arrived+ms(20)), seq, 1000, t0.Add(sent), v.Add(arrived))
	}
	// Three frames 33 ms apart, each followed 2 ms later by a second pass:
	// two complete groups (the third still open).
	for i := range 3 {
		at := time.Duration(i) * ms(33)
		ackAt(at, at+ms(40))
		ackAt(at+ms(2), at+ms(42))
	}
	assert.Equal(t, 1, g.Estimate().Groups, "one pair of groups compared")
	// A frame sent before the open group's last is ignored.
	ackAt(ms(60), ms(200))
	ackAt(ms(99), ms(139))
	assert.Equal(t, 2, g.Estimate().Groups)
}

// Over-use before 500 ms of arrivals are known (a link already too slow at
// start-up): no incoming rate yet, so the estimate falls once to
// 0.85 x A_hat, not once per frame.
func TestStartupOveruseWithoutIncomingRate(t *testing.T) {
	g := mustNew(t, gcc.Config{})
	s := newSim(g, path{prop: ms(30), capacity: func(time.Duration) float64 { return 2e6 }})
	s.run(600 * time.Millisecond)
	blind := 0
	for _, d := range g.Decisions() {
		if d.Rule == gcc.RuleDelayDecrease && d.Received == 0 {
			blind++
			assert.Equal(t, int64(3_400_000), d.New)
		}
	}
	assert.Equal(t, 1, blind)
	// Then the incoming rate takes over, and on a steady link the estimate
	// saws around the capacity.
	s.run(40 * time.Second)
	var sum float64
	n := 0
	for _, p := range s.trace {
		if p.at >= 10*time.Second {
			sum += float64(p.bitrate)
			n++
		}
	}
	assert.InEpsilon(t, 2e6, sum/float64(n), 0.15)
}

// Report is not needed: the delay-based controller reads acknowledgements.
func TestReportIsIgnored(t *testing.T) {
	g := mustNew(t, gcc.Config{})
	g.Report(t0, wire.Report{End: t0, Frames: 100, Median: time.Second, NetworkMedian: time.Second})
	assert.Equal(t, int64(4e6), g.Bitrate(t0))
	assert.Empty(t, g.Decisions())
}

// The loss-based controller (6) on the counts the agent hands over at each
// viewer report: a ratio over the packets since the last report judged,
// at least 20 of them.
func TestLossBasedControl(t *testing.T) {
	g := mustNew(t, gcc.Config{Initial: 2e6, Min: 1e5})
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 250 * time.Millisecond) }
	g.Loss(at(0), 1000, 7) // the connection's totals so far: a starting point
	assert.Equal(t, int64(2e6), g.Bitrate(at(0)))
	assert.Zero(t, g.Estimate().Reports)

	g.Loss(at(1), 1100, 27) // 20 of 100: x (1 - 0.1)
	assert.Equal(t, int64(1_800_000), g.Bitrate(at(1)))
	g.Loss(at(2), 1200, 32) // 5%: kept
	assert.Equal(t, int64(1_800_000), g.Bitrate(at(2)))
	g.Loss(at(3), 1300, 33) // 1%: x 1.05
	assert.Equal(t, int64(1_890_000), g.Bitrate(at(3)))
	g.Loss(at(4), 1400, 33)
	assert.Equal(t, int64(1_984_500), g.Bitrate(at(4)))
	g.Loss(at(5), 1500, 33) // 2083725, above A_hat: pinned to it
	assert.Equal(t, int64(2e6), g.Bitrate(at(5)))
	e := g.Estimate()
	assert.Equal(t, e.DelayBased, e.LossBased)
	assert.Equal(t, 5, e.Reports)

	g.Loss(at(6), 1510, 38) // 10 packets: too few, kept for the next
	assert.Equal(t, int64(2e6), g.Bitrate(at(6)))
	g.Loss(at(7), 1520, 38) // 5 of 20: x 0.875
	assert.Equal(t, int64(1_750_000), g.Bitrate(at(7)))
	g.Loss(at(8), 1520, 38) // nothing sent: nothing judged
	g.Loss(at(9), 40, 0)    // counts from a new connection: a new starting point
	assert.Equal(t, int64(1_750_000), g.Bitrate(at(9)))
	assert.Equal(t, 6, g.Estimate().Reports)

	ds := g.Decisions()
	require.Len(t, ds, 3)
	assert.Equal(t, gcc.Decision{At: at(1), Old: 2e6, New: 1_800_000, Rule: gcc.RuleLossDecrease,
		Signal: gcc.SignalNormal, Threshold: ms(12.5), Loss: 0.2}, ds[0])
	assert.Equal(t, gcc.Decision{At: at(3), Old: 1_800_000, New: 2e6, Rule: gcc.RuleLossIncrease,
		Signal: gcc.SignalNormal, Threshold: ms(12.5)}, ds[1], "three increases, one decision, its inputs the last's")
	assert.Equal(t, gcc.Decision{At: at(7), Old: 2e6, New: 1_750_000, Rule: gcc.RuleLossDecrease,
		Signal: gcc.SignalNormal, Threshold: ms(12.5), Loss: 0.25}, ds[2])

	// Decreases stop at Min.
	g = mustNew(t, gcc.Config{Initial: 2e6, Min: 1e6})
	g.Loss(at(0), 0, 0)
	for i := 1; i <= 5; i++ {
		g.Loss(at(i), uint64(100*i), uint64(50*i))
	}
	assert.Equal(t, int64(1e6), g.Bitrate(at(5)))
}

// The two halves together (2, 6): the target is the smaller estimate. While
// loss stays under 2% the loss-based estimate is pinned to the delay-based
// one, which ramps at its own pace between reports; a loss above 10% cuts
// the rate in force, between 2% and 10% it is kept while A_hat grows, and
// below 2% again it climbs 5% a report until it meets A_hat.
func TestLossAndDelayCombined(t *testing.T) {
	g := mustNew(t, gcc.Config{Initial: 2e6, Min: 1e5})
	s := newSim(g, path{capacity: unlimited, prop: ms(40)})
	var sent, lost uint64
	report := func(packets, lostNow uint64) {
		t.Helper()
		s.run(250 * time.Millisecond)
		sent, lost = sent+packets, lost+lostNow
		g.Loss(s.now, sent, lost)
	}
	g.Loss(s.now, 0, 0)
	for range 8 {
		report(100, 0)
		e := g.Estimate()
		require.Equal(t, e.DelayBased, e.Target, "no loss: the delay-based estimate is in force")
		require.Equal(t, e.DelayBased, e.LossBased, "pinned")
	}
	ramp := g.Bitrate(s.now)
	assert.Greater(t, ramp, int64(2.1e6), "the delay-based ramp, between reports too")

	s.run(250 * time.Millisecond)
	before := g.Estimate().DelayBased
	sent, lost = sent+100, lost+30
	g.Loss(s.now, sent, lost) // 30%: x 0.85
	cut := g.Bitrate(s.now)
	assert.InDelta(t, 0.85*float64(before), float64(cut), 1)

	for range 8 {
		report(100, 5) // 5%: kept, whatever A_hat does
		require.Equal(t, cut, g.Bitrate(s.now))
	}
	e := g.Estimate()
	assert.Greater(t, float64(e.DelayBased), 1.1*float64(cut), "A_hat kept ramping")
	assert.Equal(t, gcc.StateIncrease, e.State)

	want := float64(cut)
	steps := 0
	for e.LossBased != e.DelayBased {
		require.Less(t, steps, 20, "the loss-based estimate meets A_hat")
		report(100, 0) // under 2%: 5% a report, up to A_hat
		e = g.Estimate()
		want = min(want*1.05, float64(e.DelayBased))
		require.InDelta(t, want, float64(e.Target), 2)
		steps++
	}
	assert.Greater(t, steps, 2)
	// Pinned: the ramp is the delay-based one again, between reports too.
	s.run(time.Second)
	e = g.Estimate()
	assert.Equal(t, e.DelayBased, e.Target)
	assert.Greater(t, e.Target, int64(want))

	var rules []string
	for _, d := range g.Decisions() {
		rules = append(rules, d.Rule)
		assert.NotEqual(t, d.Old, d.New)
	}
	assert.Equal(t, []string{gcc.RuleDelayIncrease, gcc.RuleLossDecrease, gcc.RuleLossIncrease, gcc.RuleDelayIncrease}, rules)
}
