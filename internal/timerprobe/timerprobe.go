// Package timerprobe measures how late this machine's timers fire, so that
// a real-time test can tell a busy machine from a fault of the lab.
//
// A real-time session waits on timers: a link's delay, an encode, a
// display refresh. On a machine whose timers fire milliseconds late (two
// cores shared with other work), those waits stretch, latencies grow and
// flows slow, and a test's bounds on them measure the machine instead of
// the lab. Require measures the timers before the test runs and fails it,
// loudly, when they are later than the test can tolerate in three
// measures in a row (one can catch a passing burst), saying so with the
// figures; it then watches them while the test runs, and when the test
// fails, says whether the timers were too late meanwhile, so that a failure
// caused by a burst of load is named as such.
package timerprobe

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Lateness is how late a set of timers fired past what they asked for.
type Lateness struct {
	// Timers is how many timers were measured; Period is what each asked
	// for (the watch's period, during a test).
	Timers int
	Period time.Duration
	// P50, P99 and Max are the lateness's median, 99th percentile
	// (nearest rank) and maximum.
	P50, P99, Max time.Duration
}

// Of summarises the lateness of timers that each asked for period.
func Of(period time.Duration, late []time.Duration) Lateness {
	l := Lateness{Timers: len(late), Period: period}
	if len(late) == 0 {
		return l
	}
	s := slices.Clone(late)
	slices.Sort(s)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	l.P50, l.P99, l.Max = rank(0.50), rank(0.99), s[len(s)-1]
	return l
}

// String reads "p50 0.12 ms, p99 6.73 ms, max 7.7 ms late over 200 timers
// of 1ms".
func (l Lateness) String() string {
	return fmt.Sprintf("p50 %s, p99 %s, max %s late over %d timers of %v", ms(l.P50), ms(l.P99), ms(l.Max), l.Timers, l.Period)
}

// TooLate says whether l is past what a test tolerates: its p99 later
// than tolerance. It returns nil when the timers are on time enough, or
// when there were none to judge by.
func (l Lateness) TooLate(tolerance time.Duration) error {
	if l.Timers == 0 || l.P99 <= tolerance {
		return nil
	}
	return &TooLateError{Lateness: l, Tolerance: tolerance}
}

// TooLateError is a machine whose timers fire later than a test tolerates.
type TooLateError struct {
	Lateness
	Tolerance time.Duration
}

// Error names the figure and the tolerance:
// "the machine was too late to judge: timers p99 6.73 ms late, this test
// tolerates 2 ms (p50 ..., over 200 timers of 1ms)".
func (e *TooLateError) Error() string {
	return fmt.Sprintf("the machine was too late to judge: timers p99 %s late, this test tolerates %s (%v)",
		ms(e.P99), ms(e.Tolerance), e.Lateness)
}

// ms writes a duration in milliseconds, three significant digits.
func ms(d time.Duration) string { return fmt.Sprintf("%.3g ms", float64(d)/1e6) }

// Probe is how Require measures: before the test, and during it.
type Probe interface {
	// Measure fires timers one after another and returns their lateness.
	Measure() Lateness
	// Watch starts measuring timers in the background; stop ends it and
	// returns what it measured.
	Watch() (stop func() Lateness)
}

// The real probe's figures: 200 timers of 1 ms before a test (about a
// quarter of a second on a quiet machine), and one timer every 10 ms
// while it runs (a hundred wake-ups a second, no load to speak of).
const (
	probeTimers = 200
	probePeriod = time.Millisecond
	// probeAttempts is how many measures in a row must be too late for
	// Require to fail a test before it runs.
	probeAttempts = 3
	watchPeriod   = 10 * time.Millisecond
	// watchCap bounds what a watch keeps: 30 minutes of a test.
	watchCap = 180_000
)

// Timers is the real probe: the machine's own timers, on the wall clock.
var Timers Probe = timers{}

type timers struct{}

func (timers) Measure() Lateness { return measure(time.Now, time.Sleep) }

// measure sleeps probeTimers times for probePeriod on the clock given.
func measure(now func() time.Time, sleep func(time.Duration)) Lateness {
	late := make([]time.Duration, 0, probeTimers)
	for range probeTimers {
		start := now()
		sleep(probePeriod)
		late = append(late, now().Sub(start)-probePeriod)
	}
	return Of(probePeriod, late)
}

func (timers) Watch() func() Lateness {
	done := make(chan struct{})
	var late []time.Duration
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(watchPeriod)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if len(late) < watchCap {
					late = append(late, now.Sub(start)-watchPeriod)
				}
				start = time.Now()
				t.Reset(watchPeriod)
			}
		}
	})
	return func() Lateness {
		close(done)
		wg.Wait()
		return Of(watchPeriod, late)
	}
}

// Require judges whether this machine's timers are on time enough for the
// test, which tolerates a timer lateness (p99) of tolerance. A real-time
// test calls it first, after its own skips. On a machine too late (three
// measures in a row), it fails the test (not a skip: CI must fail loudly)
// with "the machine was too late to judge: timers p99 X ms late, this test
// tolerates Y ms".
// Otherwise it watches the timers while the test runs, and when the test
// fails, says after the failure whether they were too late meanwhile (then
// the failure may be the machine's load) or on time (then it is not).
func Require(t testing.TB, tolerance time.Duration) {
	t.Helper()
	RequireWith(t, tolerance, Timers)
}

// RequireWith is Require with the probe given: its tests pass one of
// their own, so that the decision is tested without the wall clock.
func RequireWith(t testing.TB, tolerance time.Duration, p Probe) {
	t.Helper()
	// One measure is a quarter of a second: a single burst of load (another
	// process's start, a page-cache flush) can put two of its 200 timers
	// past the tolerance on a machine that is otherwise on time, and it then
	// failed a test that would have measured well (a 2.03 ms p99 against a
	// test's 2 ms, on a quiet machine). A machine too late is one that is
	// too late in each of probeAttempts measures in a row; the watch below
	// still names a burst during the test.
	var before Lateness
	var earlier []string // the measures too late before this one
	for attempt := 1; ; attempt++ {
		before = p.Measure()
		err := before.TooLate(tolerance)
		if err == nil {
			break
		}
		if attempt == probeAttempts {
			t.Fatalf("%v; the lab was not run (the %d measures before: %s)", err, len(earlier), strings.Join(earlier, "; "))
			return
		}
		earlier = append(earlier, before.String())
	}
	if len(earlier) > 0 {
		t.Logf("timers too late in %d measure(s) before this one, a burst of load: %s", len(earlier), strings.Join(earlier, "; "))
	}
	t.Logf("timers before the test: %v (this test tolerates a p99 of %s)", before, ms(tolerance))
	stop := p.Watch()
	t.Cleanup(func() {
		during := stop()
		if !t.Failed() {
			return
		}
		// The failure's own moment is past: the watch says how late the
		// timers were while the test measured, a fresh measure how late
		// they are now.
		after := p.Measure()
		for _, m := range []struct {
			when string
			l    Lateness
		}{{"while the test ran", during}, {"just after it", after}} {
			if err := m.l.TooLate(tolerance); err != nil {
				t.Errorf("%v, %s: the failure above may be the machine's load, not the lab's", err, m.when)
				return
			}
		}
		t.Logf("timers were on time enough for this test (%s) while it ran (%v) and after it (%v): the failure above is not the machine's lateness",
			ms(tolerance), during, after)
	})
}
