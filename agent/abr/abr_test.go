package abr_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/internal/wire"
)

func mustNew(t *testing.T, c abr.Config) *abr.ABR {
	t.Helper()
	a, err := abr.New(c)
	require.NoError(t, err)
	return a
}

func TestDefaultsAreN10s(t *testing.T) {
	c := abr.Config{}.WithDefaults()
	assert.Equal(t, abr.Config{
		Initial: 4_000_000, Min: 500_000, Max: 20_000_000,
		Window: time.Second, Baseline: 10 * time.Second, Threshold: 60 * time.Millisecond,
		Sustain: time.Second, Close: 20 * time.Millisecond, Hold: 1500 * time.Millisecond,
		Decrease: 0.2, Increase: 0.15, Guard: 0.5, Backlog: 60 * time.Millisecond,
	}, c)
	a := mustNew(t, abr.Config{Threshold: 80 * time.Millisecond})
	assert.Equal(t, 80*time.Millisecond, a.Config().Threshold, "a set field is kept")
	assert.Equal(t, time.Second, a.Config().Sustain, "an unset one is the default")
}

func TestNewRefusesBadConfigs(t *testing.T) {
	for name, c := range map[string]abr.Config{
		"negative min":        {Min: -1},
		"negative hold":       {Hold: -time.Second},
		"min above max":       {Min: 5e6, Max: 4e6},
		"min above default":   {Max: 400_000},
		"decrease to zero":    {Decrease: 1},
		"guard above one":     {Guard: 1.01},
		"negative increase":   {Increase: -0.1},
		"negative threshold":  {Threshold: -1},
		"negative initial":    {Initial: -4e6},
		"negative window":     {Window: -1},
		"negative guard":      {Guard: -0.5},
		"negative sustain":    {Sustain: -1},
		"negative close":      {Close: -1},
		"negative baseline":   {Baseline: -1},
		"negative max":        {Max: -1},
		"negative decrease":   {Decrease: -0.2},
		"decrease above one":  {Decrease: 1.5},
		"guard far above one": {Guard: 2},
	} {
		_, err := abr.New(c)
		assert.ErrorIs(t, err, abr.ErrConfig, name)
	}
	_, err := abr.New(abr.Config{Backlog: -1})
	assert.NoError(t, err, "a negative Backlog turns the exception off")
}

// N10: "exceeds the minimum of the last ten seconds by 60 ms": strictly
// more than the threshold, judged on the median of the last second.
func TestThresholdIsStrict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		excess time.Duration
		want   int
	}{
		{"well under", ms(40), 0},
		{"just under 60 ms", ms(60) - time.Nanosecond, 0},
		{"exactly 60 ms", ms(60), 0},
		{"just over 60 ms", ms(60) + time.Nanosecond, 1},
		{"well over", ms(200), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Max = Initial: the increase rule cannot change anything.
			a := mustNew(t, abr.Config{Max: abr.DefaultInitial})
			r := newRun(a, 1)
			r.step(12, net(ms(30), ms(30)))
			high := ms(30) + tc.excess
			r.step(8, net(high, high))
			ds := a.Decisions()
			require.Len(t, ds, tc.want)
			if tc.want == 1 {
				d := ds[0]
				assert.Equal(t, abr.RuleDecrease, d.Rule)
				assert.Equal(t, int64(4_000_000), d.Old)
				assert.Equal(t, int64(3_200_000), d.New)
				assert.Equal(t, high, d.Median)
				assert.Equal(t, ms(30), d.Baseline)
				assert.True(t, d.Network)
				assert.InDelta(t, 1.0, d.Utilisation, 1e-9)
				if tc.excess < ms(120) {
					// The median of four 250 ms reports is over from the
					// third elevated report (with two of four it is halfway,
					// 30 + excess/2), and five evaluations in excess make
					// the second: the seventh.
					assert.Equal(t, (12+7)*period, d.At.Sub(t0))
				}
			}
		})
	}
}

// "Sustained for 1 s" (N10, N14): excess at every evaluation from the first
// one in excess to the current one, and the current one at least Sustain
// after the first. Baseline reports carry one frame and elevated ones a
// hundred, so the frame-weighted median is over from the first elevated
// report and the run's start is known exactly.
func TestSustain(t *testing.T) {
	base := lat{frames: 1, netMed: ms(30), netMin: ms(30), totalMed: ms(40), totalMin: ms(40)}
	high := lat{frames: 100, netMed: ms(200), netMin: ms(30), totalMed: ms(210), totalMin: ms(40)}
	// A normal report heavy enough to pull the window's median back.
	calm := lat{frames: 1000, netMed: ms(30), netMin: ms(30), totalMed: ms(40), totalMin: ms(40)}
	type at struct {
		off time.Duration // from the first elevated report's End
		l   lat
	}
	every := func(from, to time.Duration, l lat) []at {
		var s []at
		for off := from; off <= to; off += period {
			s = append(s, at{off, l})
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		sustain time.Duration
		reports []at
		want    int
	}{
		{"0.75 s: four reports in excess", 0, every(0, ms(750), high), 0},
		{"0.99 s: the fifth 0.99 s after the first", 0,
			append(every(0, ms(750), high), at{ms(990), high}), 0},
		{"1 s: five reports, the last 1 s after the first", 0, every(0, ms(1000), high), 1},
		{"1.01 s irregular reports", 0,
			[]at{{0, high}, {ms(400), high}, {ms(800), high}, {ms(1010), high}}, 1},
		{"a calm report breaks the run: 2.25 s of excess around it is not enough", 0,
			append(append(every(0, ms(250), high), at{ms(500), calm}), every(ms(750), ms(2250), high)...), 0},
		{"the run restarts once the calm report leaves the window", 0,
			append(append(every(0, ms(250), high), at{ms(500), calm}), every(ms(750), ms(2500), high)...), 1},
		{"Sustain 2 s: 1.75 s is not enough", 2 * time.Second, every(0, ms(1750), high), 0},
		{"Sustain 2 s: 2 s is", 2 * time.Second, every(0, ms(2000), high), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, abr.Config{Max: abr.DefaultInitial, Sustain: tc.sustain})
			r := newRun(a, 1)
			r.step(12, base)
			first := r.now.Add(period)
			prev := -period
			for _, rep := range tc.reports {
				r.after(rep.off-prev, rep.l)
				prev = rep.off
			}
			ds := a.Decisions()
			require.Len(t, ds, tc.want)
			if tc.want == 1 {
				assert.Equal(t, first.Add(prev), ds[0].At, "the decision is taken at the report that completes the run")
			}
		})
	}
}

// A report without frames carries no latency; a window without any frame
// breaks the runs, since there is no evidence either way.
func TestReportsWithoutFrames(t *testing.T) {
	// As in TestSustain, the median is over from the first elevated report.
	base := lat{frames: 1, netMed: ms(30), netMin: ms(30)}
	high := lat{frames: 100, netMed: ms(200), netMin: ms(30)}
	empty := lat{noFrameSent: true}

	a := mustNew(t, abr.Config{Max: abr.DefaultInitial})
	r := newRun(a, 1)
	r.step(12, base)
	r.step(3, high)  // 0, 0.25, 0.5 s
	r.step(1, empty) // 0.75 s: the window still holds frames in excess
	require.Empty(t, a.Decisions())
	r.step(1, high) // 1 s
	require.Len(t, a.Decisions(), 1, "an empty report inside the window neither breaks nor feeds the run")

	a = mustNew(t, abr.Config{Max: abr.DefaultInitial})
	r = newRun(a, 1)
	r.step(12, base)
	r.step(1, high)  // 0 s
	r.step(3, empty) // 0.25-0.75 s: the window still holds the report at 0
	r.step(1, empty) // 1 s: a whole second without frames, no evidence
	r.step(4, high)  // 1.25-2 s: a new run, 0.75 s long
	assert.Empty(t, a.Decisions(), "a window without frames breaks the run")
	r.step(1, high) // 2.25 s
	assert.Len(t, a.Decisions(), 1)
}

// Reports are judged on their End, on the viewer's clock; a duplicate or an
// older one is ignored.
func TestOutOfOrderReportsAreIgnored(t *testing.T) {
	a := mustNew(t, abr.Config{Max: abr.DefaultInitial})
	r := newRun(a, 1)
	r.step(12, lat{frames: 1, netMed: ms(30), netMin: ms(30)})
	high := lat{frames: 100, netMed: ms(200), netMin: ms(30)}
	r.step(4, high)
	require.Empty(t, a.Decisions())
	// The same period again, and an older one, with figures that would
	// break the run and the baseline.
	a.Report(r.now.Add(period), wire.Report{End: r.end, Frames: 10000, NetworkMedian: ms(1), NetworkMin: ms(1)})
	a.Report(r.now.Add(period), wire.Report{End: r.end.Add(-period), Frames: 10000, NetworkMedian: ms(1), NetworkMin: ms(1)})
	r.step(1, high)
	ds := a.Decisions()
	require.Len(t, ds, 1, "the run went on as if they never came")
	assert.Equal(t, ms(30), ds[0].Baseline)
}

// N13's guard: a change needs utilisation >= Guard; exactly at the guard
// passes, just under does not, for decreases and increases alike (a still
// screen must not walk the bitrate up either).
func TestUtilisationGuard(t *testing.T) {
	// At 4 Mbit/s and one frame per 250 ms, the guard of 0.5 is 62,500 bytes
	// a frame: 4 x 62,500 x 8 = 2 Mbit in the last second.
	for _, tc := range []struct {
		name  string
		up    bool
		bytes int
		old   bool
		want  int
		util  float64
	}{
		{"decrease at the guard", false, 62_500, false, 1, 0.5},
		{"decrease just under the guard", false, 62_499, false, 0, 0},
		{"decrease far under, old (N13)", false, 100, true, 1, 100.0 * 4 * 8 / 4e6},
		{"increase at the guard", true, 62_500, false, 1, 0.5},
		{"increase just under the guard", true, 62_499, false, 0, 0},
		{"increase far under, old (N13)", true, 100, true, 1, 100.0 * 4 * 8 / 4e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := abr.Config{OldIgnoresUtilisation: tc.old}
			if !tc.up {
				c.Max = abr.DefaultInitial
			}
			a := mustNew(t, c)
			r := newRun(a, 0)
			r.bytes = tc.bytes
			if tc.up {
				r.step(6, net(ms(30), ms(30))) // close from the first report: +15% at the fifth
			} else {
				r.step(12, net(ms(30), ms(30)))
				r.step(7, net(ms(200), ms(200)))
			}
			ds := a.Decisions()
			require.Len(t, ds, tc.want)
			if tc.want == 1 {
				assert.Equal(t, tc.util, ds[0].Utilisation)
				if tc.up {
					assert.Equal(t, abr.RuleIncrease, ds[0].Rule)
					assert.Equal(t, int64(4_600_000), ds[0].New)
				} else {
					assert.Equal(t, abr.RuleDecrease, ds[0].Rule)
				}
			}
		})
	}
}

// A network-limited sender (N8's send cap skips frames) sends less than
// the guard, yet its queue is real: a backlog of unacknowledged bytes worth
// Backlog of the target lets a decrease through.
func TestBacklogLetsADecreaseThrough(t *testing.T) {
	// 12,500 bytes every 250 ms is 0.1 of 4 Mbit/s: under the guard. 60 ms
	// of 4 Mbit/s is 30,000 bytes.
	for _, tc := range []struct {
		name    string
		acks    bool
		backlog time.Duration
		stuck   int
		want    int
	}{
		{"backlog at 60 ms of the target", true, 0, 30_000, 1},
		{"backlog just under", true, 0, 29_999, 0},
		{"no acknowledgement ever: no backlog known", false, 0, 30_000, 0},
		{"exception off", true, -1, 1_000_000, 0},
		{"Backlog 100 ms: 50,000 bytes", true, 100 * time.Millisecond, 50_000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, abr.Config{Max: abr.DefaultInitial, Backlog: tc.backlog})
			r := newRun(a, 0)
			r.bytes = 12_500
			r.ack = tc.acks
			a.FrameSent(t0, 1<<40, tc.stuck) // never acknowledged
			r.step(12, net(ms(30), ms(30)))
			r.step(7, net(ms(200), ms(200)))
			ds := a.Decisions()
			require.Len(t, ds, tc.want)
			if tc.want == 1 {
				assert.Equal(t, int64(tc.stuck), ds[0].InFlight)
				assert.InDelta(t, 0.1, ds[0].Utilisation, 1e-9)
			}
		})
	}
	// The backlog never lets an increase through: a still screen with a
	// stuck frame must not walk the bitrate up.
	a := mustNew(t, abr.Config{})
	r := newRun(a, 0)
	r.bytes, r.ack = 100, true
	a.FrameSent(t0, 1<<40, 1_000_000)
	r.step(12, net(ms(30), ms(30)))
	assert.Empty(t, a.Decisions())
}

// The pause after each change (N10): nothing at Hold-1ns, a change at Hold.
func TestHold(t *testing.T) {
	base := lat{frames: 1, netMed: ms(30), netMin: ms(30)}
	high := lat{frames: 100, netMed: ms(200), netMin: ms(30)}
	for _, tc := range []struct {
		name  string
		hold  time.Duration
		after time.Duration // the last report, after the first decrease
		want  int
	}{
		{"default hold - 1 ns", 0, abr.DefaultHold - time.Nanosecond, 1},
		{"default hold", 0, abr.DefaultHold, 2},
		{"3 s - 1 ns", 3 * time.Second, 3*time.Second - time.Nanosecond, 1},
		{"3 s", 3 * time.Second, 3 * time.Second, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, abr.Config{Max: abr.DefaultInitial, Hold: tc.hold})
			r := newRun(a, 1)
			r.step(12, base)
			r.step(5, high)
			require.Len(t, a.Decisions(), 1)
			first := a.Decisions()[0].At
			require.Equal(t, first, r.now)
			for r.now.Add(period).Before(first.Add(tc.after)) {
				r.step(1, high)
			}
			require.Len(t, a.Decisions(), 1, "within the hold")
			r.after(first.Add(tc.after).Sub(r.now), high)
			ds := a.Decisions()
			require.Len(t, ds, tc.want)
			if tc.want == 2 {
				assert.Equal(t, first.Add(tc.after), ds[1].At)
				assert.Equal(t, int64(2_560_000), ds[1].New)
			}
		})
	}
	// The hold follows increases as well.
	a := mustNew(t, abr.Config{})
	r := newRun(a, 1)
	r.step(17, net(ms(30), ms(30)))
	ds := a.Decisions()
	require.Len(t, ds, 3, "at 1.25 s, 2.75 s and 4.25 s")
	assert.Equal(t, 1250*time.Millisecond, ds[0].At.Sub(t0))
	assert.Equal(t, 2750*time.Millisecond, ds[1].At.Sub(t0))
	assert.Equal(t, 4250*time.Millisecond, ds[2].At.Sub(t0))
}

func TestClamps(t *testing.T) {
	// A decrease below Min stops at Min; at Min nothing more happens and
	// nothing is recorded.
	a := mustNew(t, abr.Config{Initial: 600_000, Max: 600_000})
	r := newRun(a, 1)
	r.step(12, net(ms(30), ms(30)))
	r.step(40, net(ms(200), ms(200)))
	ds := a.Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, abr.Decision{At: ds[0].At, Old: 600_000, New: 500_000, Rule: abr.RuleDecrease,
		Median: ms(200), Baseline: ms(30), Utilisation: ds[0].Utilisation, Network: true}, ds[0])
	assert.Equal(t, int64(500_000), a.Bitrate(r.now))

	// An increase above Max stops at Max.
	a = mustNew(t, abr.Config{Initial: 19_000_000})
	r = newRun(a, 1)
	r.step(40, net(ms(30), ms(30)))
	ds = a.Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, abr.RuleIncrease, ds[0].Rule)
	assert.Equal(t, int64(20_000_000), ds[0].New)

	// An initial bitrate outside the bounds is clamped, and that is
	// recorded at the first call.
	a = mustNew(t, abr.Config{Initial: 30_000_000})
	assert.Equal(t, int64(20_000_000), a.Bitrate(t0.Add(time.Second)))
	ds = a.Decisions()
	require.Len(t, ds, 1)
	assert.Equal(t, abr.Decision{At: t0.Add(time.Second), Old: 30_000_000, New: 20_000_000,
		Rule: abr.RuleClamp, Network: true}, ds[0])
	a = mustNew(t, abr.Config{Initial: 100_000})
	assert.Equal(t, int64(500_000), a.Bitrate(t0))
}

// Report and Bitrate come from different goroutines (the agent's control
// stream and its pipeline); go test -race checks this one.
func TestConcurrentUse(t *testing.T) {
	a := mustNew(t, abr.Config{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = a.Bitrate(time.Now())
				_ = a.Decisions()
			}
		}
	}()
	r := newRun(a, 1)
	r.step(40, net(ms(30), ms(30)))
	close(stop)
	wg.Wait()
	assert.NotEmpty(t, a.Decisions())
}
