package gcc

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The draft's rules one at a time, on the pieces that apply them. Every
// figure is exact: these are pure functions of their inputs.

var at0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// Section 6: above 10% loss As_hat x (1 - 0.5 p), below 2% x 1.05, from 2%
// to 10% (both included) kept; every rule starts from As_hat bounded by
// A_hat, and an increase that reaches A_hat pins As_hat to it.
func TestLossRule(t *testing.T) {
	for _, c := range []struct {
		name      string
		as, a, p  float64
		want      float64
		pinned    bool
		rule      string
		rationale string
	}{
		{"above 10%", 1e6, 2e6, 0.20, 900_000, false, RuleLossDecrease, "1e6 x (1 - 0.5 x 0.2)"},
		{"all lost", 1e6, 2e6, 1, 500_000, false, RuleLossDecrease, "halved at most"},
		{"just above 10%", 1e6, 2e6, 0.1001, 949_950, false, RuleLossDecrease, "1e6 x (1 - 0.05005)"},
		{"10% is held", 1e6, 2e6, 0.10, 1e6, false, "", "more than 10% decreases"},
		{"5% is held", 1e6, 2e6, 0.05, 1e6, false, "", ""},
		{"2% is held", 1e6, 2e6, 0.02, 1e6, false, "", "less than 2% increases"},
		{"below 2%", 1e6, 2e6, 0.019, 1_050_000, false, RuleLossIncrease, "1e6 x 1.05"},
		{"no loss", 1e6, 2e6, 0, 1_050_000, false, RuleLossIncrease, ""},
		{"increase reaching A_hat pins", 1.95e6, 2e6, 0, 2e6, true, RuleLossIncrease, "2.0475e6 capped at A_hat"},
		{"increase just under A_hat", 1.9e6, 2e6, 0, 1_995_000, false, RuleLossIncrease, ""},
		{"decrease from the rate in force", 3e6, 2e6, 0.20, 1_800_000, false, RuleLossDecrease, "min(As_hat, A_hat) x 0.9"},
		{"hold at the rate in force", 3e6, 2e6, 0.05, 2e6, false, "", "As_hat above A_hat is held at A_hat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, pinned, rule := lossRule(c.as, c.a, c.p)
			assert.InDelta(t, c.want, got, 1e-6, c.rationale)
			assert.Equal(t, c.pinned, pinned)
			assert.Equal(t, c.rule, rule)
		})
	}
}

// Section 5.4: over-use needs m(i) above del_var_th for overuse_time_th
// (10 ms) and m(i) >= m(i-1); under-use is m(i) below -del_var_th.
func TestDetectorSignals(t *testing.T) {
	d := newDetector()
	const dt = 20.0 // ms between groups
	at := func(ms float64) time.Time { return at0.Add(time.Duration(ms * float64(time.Millisecond))) }

	assert.Equal(t, SignalNormal, d.detect(12.5, at(0), dt), "at the threshold is not above it")
	assert.Equal(t, SignalNormal, d.detect(13, at(20), dt), "above, but for 0 ms")
	assert.Equal(t, SignalNormal, d.detect(14, at(29.999), dt), "above for 9.999 ms")
	assert.Equal(t, SignalOveruse, d.detect(15, at(30), dt), "above for 10 ms, rising")
	assert.Equal(t, SignalOveruse, d.detect(15, at(40), dt), "level counts as m(i) >= m(i-1)")
	assert.Equal(t, SignalNormal, d.detect(14.5, at(50), dt), "still above, but falling: no over-use")
	assert.Equal(t, SignalOveruse, d.detect(14.6, at(60), dt), "the 10 ms run was not broken")
	assert.Equal(t, SignalNormal, d.detect(0, at(70), dt), "inside the band")
	assert.Equal(t, SignalNormal, d.detect(16, at(80), dt), "above again: the 10 ms start over")
	assert.Equal(t, SignalUnderuse, d.detect(-d.threshold-0.001, at(90), dt))
	assert.Equal(t, SignalNormal, d.detect(-d.threshold, at(100), dt), "at -del_var_th is not below it")
}

// Section 5.4: del_var_th(i) = del_var_th(i-1) + (t(i)-t(i-1)) K (|m(i)| -
// del_var_th(i-1)), K_u = 0.01 outside the band, K_d = 0.00018 inside, no
// update more than 15 ms outside, clamped to [6, 600] ms; the gain is
// capped at 1 (see the package comment).
func TestDetectorAdaptiveThreshold(t *testing.T) {
	for _, c := range []struct {
		name        string
		from, trend float64
		dt          float64
		want        float64
	}{
		{"K_u above", 12.5, 20, 30, 12.5 + 0.01*30*7.5},
		{"K_u below the band", 12.5, -20, 30, 12.5 + 0.01*30*7.5},
		{"K_u just above", 12.5, 13.5, 30, 12.5 + 0.01*30*1},
		{"K_u just below the band", 12.5, -13.5, 30, 12.5 + 0.01*30*1},
		{"K_d inside", 12.5, 2, 30, 12.5 + 0.00018*30*(2-12.5)},
		{"K_d at zero", 100, 0, 50, 100 - 0.00018*50*100},
		{"15 ms beyond: no update", 12.5, 27.5001, 30, 12.5},
		{"exactly 15 ms beyond: updated", 12.5, 27.5, 30, 12.5 + 0.01*30*15},
		{"gain capped at 1", 12.5, 20, 200, 20},
		{"floor 6 ms", 6.01, 0, 1000, 6},
		{"ceiling 600 ms", 599, 610, 100, 600},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDetector()
			d.threshold = c.from
			d.detect(c.trend, at0, c.dt)
			assert.InDelta(t, c.want, d.threshold, 1e-9)
			assert.Equal(t, c.from, d.compared, "m(i) is judged against del_var_th(i-1)")
		})
	}
}

// Section 5.3: the noise variance is floored at 1 and fed innovations
// clipped at 3 standard deviations; the gain is (e + q) / (var_v + e + q).
func TestFilterStep(t *testing.T) {
	f := newFilter()
	m, meanDT := f.update(10, 30)
	alpha := math.Pow(0.99, 30*30.0/1000)
	varV := alpha*1 + (1-alpha)*9 // z = 10 clipped to 3 x sqrt(1)
	k := 0.101 / (varV + 0.101)
	assert.InDelta(t, 10*k, m, 1e-12, "the estimate moves by the whole, unclipped innovation")
	assert.InDelta(t, varV, f.varV, 1e-12)
	assert.InDelta(t, (1-k)*0.101, f.e, 1e-12)
	assert.Equal(t, 30.0, meanDT)

	f = newFilter()
	f.update(0, 30)
	assert.Equal(t, 1.0, f.varV, "no innovation: the variance stays at its floor")
}

// Section 5.5's table: blank fields keep the state.
func TestStateTable(t *testing.T) {
	want := map[string]map[string]string{
		StateHold:     {SignalOveruse: StateDecrease, SignalNormal: StateIncrease, SignalUnderuse: StateHold},
		StateIncrease: {SignalOveruse: StateDecrease, SignalNormal: StateIncrease, SignalUnderuse: StateHold},
		StateDecrease: {SignalOveruse: StateDecrease, SignalNormal: StateHold, SignalUnderuse: StateHold},
	}
	for state, row := range want {
		for sig, next_ := range row {
			assert.Equal(t, next_, next(state, sig), "%s on %s", state, sig)
		}
	}
}

// Section 5.5: eta = 1.08^min(time since the last update, 1 s).
func TestMultiplicativeIncrease(t *testing.T) {
	assert.InDelta(t, 1e6*math.Pow(1.08, 0.25), multiplicative(1e6, 0.25), 1e-6)
	assert.InDelta(t, 1.08e6, multiplicative(1e6, 1), 1e-6)
	assert.InDelta(t, 1.08e6, multiplicative(1e6, 5), 1e-6, "at most a second's worth")
	assert.Equal(t, 1e6, multiplicative(1e6, 0))
}

// Section 5.5: half an expected packet per response time (RTT + 100 ms),
// the packet's size from the rate at 30 frames a second in packets of at
// most 1200 bytes, at least 1000 bits (per response time here).
func TestAdditiveIncrease(t *testing.T) {
	// 600 kbit/s: 20000 bits a frame, 3 packets of 6666.7 bits; a 33.3 ms
	// step of a 200 ms response time is a sixth of half a packet.
	assert.InDelta(t, 600e3+(1.0/30*1000/200)*0.5*20000/3, additive(600e3, 1.0/30, 100), 1e-6)
	// A whole response time or more: half a packet.
	assert.InDelta(t, 600e3+0.5*20000/3, additive(600e3, 0.2, 100), 1e-6)
	assert.InDelta(t, 600e3+0.5*20000/3, additive(600e3, 3, 100), 1e-6)
	// 30 kbit/s: one 1000-bit packet a frame, half of it under the floor.
	assert.InDelta(t, 30e3+1000, additive(30e3, 1, 50), 1e-9)
	assert.InDelta(t, 30e3+1000*0.1, additive(30e3, 0.015, 50), 1e-9, "the floor per response time")
	// Per frame at 60 fps for a second: about half a packet per 200 ms,
	// 5 x 3333 bits (a little more, as the packet grows with the rate),
	// not the 60 x 1000 bits of a floor taken per update.
	rate := 600e3
	for range 60 {
		rate = additive(rate, 1.0/60, 100)
	}
	assert.InEpsilon(t, 600e3+5*0.5*20000/3, rate, 0.001)
}

// Section 5.5: additive near convergence, the incoming rate within three
// standard deviations of its average at decreases (smoothing 0.95);
// multiplicative without two decreases' statistics; a rate above the range
// starts them over.
func TestConvergence(t *testing.T) {
	var c convergence
	assert.False(t, c.near(500e3), "no statistics")
	c.decreased(500e3)
	assert.False(t, c.near(500e3), "one decrease is not statistics")
	c.decreased(520e3)
	assert.InDelta(t, 501e3, c.avg, 1e-6)
	assert.InDelta(t, 0.05*20e3*20e3, c.vari, 1e-3)
	std3 := 3 * math.Sqrt(0.05*20e3*20e3) // 13416 bit/s
	assert.True(t, c.near(501e3+std3-1))
	assert.True(t, c.near(501e3-std3+1))
	assert.False(t, c.near(501e3-std3-1), "below the range: far, kept")
	assert.Equal(t, 2, c.n)
	assert.False(t, c.near(501e3+std3+1), "above the range: the congestion level changed")
	assert.Equal(t, 0, c.n)
	assert.False(t, c.near(501e3), "and the statistics start over")
}

// received400k gives g an incoming rate of exactly 400 kbit/s: 2500-byte
// frames every 50 ms for 550 ms (the window's bytes after its first
// arrival over the time since it).
func received400k(t *testing.T, g *GCC) {
	t.Helper()
	v := at0.Add(time.Hour) // the viewer's clock
	for i := range 12 {
		g.addArrival(v.Add(time.Duration(i)*50*time.Millisecond), 2500)
	}
	r, ok := g.received()
	require.True(t, ok)
	require.InDelta(t, 400e3, r, 1e-6)
}

// Section 5.5 through the rate controller: over-use decreases to
// beta x R_hat (0.85), the following normal signal holds (no decision: the
// target did not move), the next increases multiplicatively by 1.08^elapsed;
// after two decreases at the same incoming rate the increase is additive.
func TestRateControlStates(t *testing.T) {
	g, err := New(Config{Initial: 4e6, Min: 1e5})
	require.NoError(t, err)
	received400k(t, g)

	g.control(at0, SignalOveruse)
	assert.Equal(t, StateDecrease, g.state)
	assert.Equal(t, int64(340_000), g.target(), "0.85 x 400 kbit/s")
	require.Len(t, g.decisions, 1)
	assert.Equal(t, Decision{At: at0, Old: 4e6, New: 340_000, Rule: RuleDelayDecrease, Signal: SignalOveruse,
		Threshold: 12500 * time.Microsecond, Received: 400_000}, g.decisions[0])

	g.control(at0.Add(100*time.Millisecond), SignalOveruse)
	assert.Equal(t, int64(340_000), g.target(), "still 0.85 x R_hat: no lower")
	g.control(at0.Add(200*time.Millisecond), SignalNormal)
	assert.Equal(t, StateHold, g.state)
	assert.Equal(t, int64(340_000), g.target())
	assert.Len(t, g.decisions, 1, "neither step moved the target: no decision")

	g.control(at0.Add(700*time.Millisecond), SignalNormal)
	assert.Equal(t, StateIncrease, g.state)
	assert.False(t, g.additive, "one decrease: far from convergence")
	assert.Equal(t, int64(math.Round(340e3*math.Pow(1.08, 0.5))), g.target(), "1.08^0.5 s")
	require.Len(t, g.decisions, 2)
	assert.Equal(t, RuleDelayIncrease, g.decisions[1].Rule)

	g.control(at0.Add(800*time.Millisecond), SignalUnderuse)
	assert.Equal(t, StateHold, g.state)
	g.control(at0.Add(900*time.Millisecond), SignalOveruse)
	assert.Equal(t, StateDecrease, g.state)
	assert.Equal(t, int64(340_000), g.target())
	g.control(at0.Add(time.Second), SignalNormal) // hold
	g.control(at0.Add(1100*time.Millisecond), SignalNormal)
	assert.True(t, g.additive, "two decreases at 400 kbit/s: R_hat is at convergence")
	assert.InDelta(t, additive(340e3, 0.1, 0), g.rate, 1e-6, "no round trip measured: response time 100 ms")
	assert.Equal(t, []string{RuleDelayDecrease, RuleDelayIncrease, RuleDelayDecrease, RuleDelayAdditive}, rules(g.decisions))

	// A decrease never raises the estimate: 0.85 x R_hat above it leaves
	// it, and that is no decision.
	g, err = New(Config{Initial: 300e3, Min: 1e5})
	require.NoError(t, err)
	received400k(t, g)
	g.control(at0, SignalOveruse)
	assert.Equal(t, StateDecrease, g.state)
	assert.Equal(t, int64(300e3), g.target())
	assert.Empty(t, g.decisions)
}

func rules(ds []Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Rule)
	}
	return out
}

// A run of one rule is one decision, grown step by step; another rule
// moving the target, or its own half applying another rule, ends it.
func TestDecisionRuns(t *testing.T) {
	g, err := New(Config{Initial: 1e6, Min: 1e5})
	require.NoError(t, err)
	for i := range 5 {
		g.control(at0.Add(time.Duration(i)*100*time.Millisecond), SignalNormal)
	}
	require.Len(t, g.decisions, 1, "one ramp")
	assert.Equal(t, at0.Add(100*time.Millisecond), g.decisions[0].At, "the first step that moved it")
	assert.Equal(t, int64(1e6), g.decisions[0].Old)
	assert.Equal(t, int64(math.Round(1e6*math.Pow(1.08, 0.4))), g.decisions[0].New)

	g.Loss(at0, 1000, 0)
	g.Loss(at0.Add(500*time.Millisecond), 1100, 50) // 50%: x 0.75
	require.Len(t, g.decisions, 2)
	assert.Equal(t, RuleLossDecrease, g.decisions[1].Rule)
	assert.Equal(t, 0.5, g.decisions[1].Loss)
	g.control(at0.Add(600*time.Millisecond), SignalNormal)
	assert.Len(t, g.decisions, 2, "A_hat grows, the loss-based estimate limits: the target stays")
	g.Loss(at0.Add(750*time.Millisecond), 1200, 50)
	g.Loss(at0.Add(time.Second), 1300, 50)
	require.Len(t, g.decisions, 3, "two increases, one run")
	assert.InDelta(t, float64(g.decisions[1].New)*1.05*1.05, float64(g.decisions[2].New), 1)
	g.Loss(at0.Add(1250*time.Millisecond), 1400, 55) // 5%: hold, ends the run
	g.Loss(at0.Add(1500*time.Millisecond), 1500, 55)
	require.Len(t, g.decisions, 4)
	for _, d := range g.decisions {
		assert.NotEqual(t, d.Old, d.New)
	}
}
