package timerprobe

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const us = time.Microsecond

func TestOfTakesNearestRanks(t *testing.T) {
	var late []time.Duration
	for i := 100; i >= 1; i-- { // out of order: Of sorts a copy
		late = append(late, time.Duration(i)*us)
	}
	l := Of(time.Millisecond, late)
	require.Equal(t, Lateness{Timers: 100, Period: time.Millisecond, P50: 50 * us, P99: 99 * us, Max: 100 * us}, l)
	require.Equal(t, 100*us, late[0], "the caller's slice is left as it was")
	require.Equal(t, "p50 0.05 ms, p99 0.099 ms, max 0.1 ms late over 100 timers of 1ms", l.String())

	// Of 200, the 99th percentile is the 198th: two later ones are
	// allowed to be outliers.
	late = late[:0]
	for i := 1; i <= 200; i++ {
		late = append(late, time.Duration(i)*us)
	}
	require.Equal(t, 198*us, Of(time.Millisecond, late).P99)
	require.Equal(t, Lateness{Period: time.Millisecond}, Of(time.Millisecond, nil))
}

func TestTooLateJudgesTheP99(t *testing.T) {
	l := Lateness{Timers: 200, Period: time.Millisecond, P50: 120 * us, P99: 6730 * us, Max: 7700 * us}
	require.NoError(t, l.TooLate(6730*us), "at the tolerance is within it")
	err := l.TooLate(2 * time.Millisecond)
	require.EqualError(t, err, "the machine was too late to judge: timers p99 6.73 ms late, this test tolerates 2 ms "+
		"(p50 0.12 ms, p99 6.73 ms, max 7.7 ms late over 200 timers of 1ms)")
	var tl *TooLateError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, 2*time.Millisecond, tl.Tolerance)
	// A late maximum alone (one timer in 200) is not the machine.
	require.NoError(t, Lateness{Timers: 200, P99: 500 * us, Max: 50 * time.Millisecond}.TooLate(time.Millisecond))
	require.NoError(t, Lateness{}.TooLate(0), "no timers, nothing to judge by")
}

// fakeProbe returns given figures: measures in order, and one watch.
type fakeProbe struct {
	measures []Lateness
	watch    Lateness
	measured int
	watching bool
}

func (p *fakeProbe) Measure() Lateness {
	l := p.measures[p.measured]
	p.measured++
	return l
}

func (p *fakeProbe) Watch() func() Lateness {
	p.watching = true
	return func() Lateness { p.watching = false; return p.watch }
}

// fakeT records what Require says to a test.
type fakeT struct {
	testing.TB
	fatal, errors, logs []string
	cleanups            []func()
	failed              bool
}

func (t *fakeT) Helper() {}
func (t *fakeT) Fatalf(format string, args ...any) {
	t.fatal = append(t.fatal, fmt.Sprintf(format, args...))
	t.failed = true
}
func (t *fakeT) Errorf(format string, args ...any) {
	t.errors = append(t.errors, fmt.Sprintf(format, args...))
	t.failed = true
}
func (t *fakeT) Logf(format string, args ...any) {
	t.logs = append(t.logs, fmt.Sprintf(format, args...))
}
func (t *fakeT) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }
func (t *fakeT) Failed() bool     { return t.failed }

func (t *fakeT) end() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

var (
	onTime = Lateness{Timers: 200, Period: time.Millisecond, P50: 60 * us, P99: 400 * us, Max: 900 * us}
	late   = Lateness{Timers: 200, Period: time.Millisecond, P50: 900 * us, P99: 6730 * us, Max: 7700 * us}
)

func TestRequireFailsOnAMachineTooLate(t *testing.T) {
	ft, p := &fakeT{}, &fakeProbe{measures: []Lateness{late, late, late}}
	RequireWith(ft, 2*time.Millisecond, p)
	require.Len(t, ft.fatal, 1, "a failure, not a skip")
	require.True(t, strings.HasPrefix(ft.fatal[0], "the machine was too late to judge: timers p99 6.73 ms late, this test tolerates 2 ms"), ft.fatal[0])
	require.Contains(t, ft.fatal[0], "the lab was not run")
	require.True(t, strings.HasSuffix(ft.fatal[0], "the lab was not run (the 2 measures before: "+late.String()+"; "+late.String()+")"), ft.fatal[0])
	require.Equal(t, probeAttempts, p.measured, "too late in every measure")
	require.False(t, p.watching)
	require.Empty(t, ft.cleanups)
}

// A burst of load in one measure is not a machine too late: the next
// measure judges, and the test runs, saying what the first found.
func TestRequireMeasuresAgainAfterABurst(t *testing.T) {
	for _, measures := range [][]Lateness{{late, onTime}, {late, late, onTime}} {
		ft, p := &fakeT{}, &fakeProbe{measures: measures, watch: onTime}
		RequireWith(ft, 2*time.Millisecond, p)
		require.Empty(t, ft.fatal)
		require.Equal(t, len(measures), p.measured, "measured until on time")
		require.True(t, p.watching)
		want := fmt.Sprintf("timers too late in %d measure(s) before this one, a burst of load: %s", len(measures)-1, late)
		require.True(t, strings.HasPrefix(ft.logs[0], want), "%q\nwant it to begin %q", ft.logs[0], want)
		require.Contains(t, ft.logs[1], "timers before the test: p50 0.06 ms, p99 0.4 ms", "the measure that passed is the one logged")
		ft.end()
	}
}

func TestRequirePassesAMachineOnTime(t *testing.T) {
	ft, p := &fakeT{}, &fakeProbe{measures: []Lateness{onTime}, watch: late}
	RequireWith(ft, 2*time.Millisecond, p)
	require.Empty(t, ft.fatal)
	require.True(t, p.watching, "the timers are watched while the test runs")
	require.Contains(t, ft.logs[0], "p99 0.4 ms")
	ft.end()
	require.False(t, p.watching)
	require.Empty(t, ft.errors, "a test that passed is not second-guessed, late timers or not")
	require.Equal(t, 1, p.measured, "nor measured again")
}

func TestRequireNamesTheMachineAfterAFailure(t *testing.T) {
	for _, tc := range []struct {
		name          string
		during, after Lateness
		want          string // the error added; empty: none
	}{
		{"late while it ran", late, onTime,
			"the machine was too late to judge: timers p99 6.73 ms late, this test tolerates 2 ms (p50 0.9 ms, p99 6.73 ms, max 7.7 ms late over 200 timers of 1ms), while the test ran: the failure above may be the machine's load, not the lab's"},
		{"late after it", onTime, late, "the machine was too late to judge: timers p99 6.73 ms late, this test tolerates 2 ms (p50 0.9 ms, p99 6.73 ms, max 7.7 ms late over 200 timers of 1ms), just after it: the failure above may be the machine's load, not the lab's"},
		{"on time throughout", onTime, onTime, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft, p := &fakeT{}, &fakeProbe{measures: []Lateness{onTime, tc.after}, watch: tc.during}
			RequireWith(ft, 2*time.Millisecond, p)
			ft.Errorf("latency median 80 ms, want <= 50 ms") // the test's own failure
			ft.end()
			require.Equal(t, 2, p.measured, "measured again after the failure")
			if tc.want == "" {
				require.Len(t, ft.errors, 1, "only the test's own failure")
				require.Contains(t, ft.logs[len(ft.logs)-1], "the failure above is not the machine's lateness")
				return
			}
			require.Equal(t, []string{"latency median 80 ms, want <= 50 ms", tc.want}, ft.errors)
		})
	}
}

// The real probe measures what it says: its timers, of its period, and a
// sleep never returns early. (How late is the machine's, not asserted.)
func TestTimersMeasure(t *testing.T) {
	l := Timers.Measure()
	require.Equal(t, probeTimers, l.Timers)
	require.Equal(t, probePeriod, l.Period)
	require.GreaterOrEqual(t, l.P50, time.Duration(0), "a sleep never returns early")
	require.LessOrEqual(t, l.P50, l.P99)
	require.LessOrEqual(t, l.P99, l.Max)
	w := Timers.Watch()()
	require.Equal(t, watchPeriod, w.Period)
}

// measure takes each sleep's lateness past its period: on a clock whose
// k-th sleep of the probe's 200 ends k µs late, the median is 100 µs late.
func TestMeasureTakesTheLatenessPastThePeriod(t *testing.T) {
	clock := time.Unix(0, 0)
	k := 0
	l := measure(func() time.Time { return clock }, func(d time.Duration) {
		k++
		clock = clock.Add(d + time.Duration(k)*us)
	})
	require.Equal(t, Lateness{Timers: 200, Period: time.Millisecond, P50: 100 * us, P99: 198 * us, Max: 200 * us}, l)
}
