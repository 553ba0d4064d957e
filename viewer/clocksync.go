package viewer

import (
	"slices"
	"sync"
	"time"
)

// ClockSample is one NTP-style exchange, in the viewer's terms.
type ClockSample struct {
	// At is the middle of the exchange on the viewer's clock: the instant
	// the offset below is the best guess for.
	At time.Time
	// Offset is the agent's clock minus the viewer's, as this exchange
	// saw it: ((T2-T1)+(T3-T4))/2.
	Offset time.Duration
	// RTT is the round trip without the agent's time between T2 and T3.
	// Its excess over the path's minimum bounds the sample's error: an
	// offset is wrong by half the asymmetry of the two one-way delays, and
	// only queueing (which shows as extra RTT) makes them differ much.
	RTT time.Duration
}

// NewClockSample computes a sample from the four instants of an exchange:
// t1 the probe left the viewer and t4 the reply arrived (viewer's clock), t2
// the probe arrived at the agent and t3 the reply left (agent's clock).
func NewClockSample(t1, t2, t3, t4 time.Time) ClockSample {
	return ClockSample{
		At:     t1.Add(t4.Sub(t1) / 2),
		Offset: (t2.Sub(t1) + t3.Sub(t4)) / 2,
		RTT:    t4.Sub(t1) - t3.Sub(t2),
	}
}

// The estimator's tunables. They are constants, not configuration, because
// they describe clocks and exchanges, not the scenario.
const (
	// estimatorWindow is how many recent samples the estimate draws on:
	// about a minute at the default probe period, long enough to see a
	// drift of a few ppm, short enough to follow a clock that changes its
	// mind (an NTP step on either PC).
	estimatorWindow = 64
	// rttTolerance admits samples whose RTT is within this of the
	// window's minimum: each admitted sample is then wrong by at most
	// about half of it more than the best one.
	rttTolerance = time.Millisecond
	// minGood is how many samples the fit uses at least, taking the lowest
	// RTTs, when fewer are within rttTolerance (a jittery path).
	minGood = 4
	// minDriftSpan is the time the admitted samples must span before the
	// drift is fitted: over a short span a few microseconds of noise would
	// read as a drift of hundreds of ppm.
	minDriftSpan = 2 * time.Second
	// sampleFloor is the error even the best sample may carry (an
	// asymmetry of the path no RTT shows); it keeps the weights finite.
	sampleFloor = 50 * time.Microsecond
	// maxDrift bounds the fitted drift: real quartz clocks stay within
	// about 100 ppm, so anything far beyond is noise.
	maxDrift = 500e-6
)

// OffsetEstimator estimates the agent's clock minus the viewer's clock as a
// function of the viewer's clock (N1). It keeps the last 64 samples, admits
// those whose round trip is within 1 ms of the window's minimum (min-RTT
// filtering: a reply that queued behind video is asymmetric and misleading;
// at least the 4 best are admitted), and fits a line through them by least
// squares weighted by the inverse square of each sample's error bound, so
// that a drift between the two clocks is followed rather than lagged. Until
// the admitted samples span 2 s it uses the best sample alone (no drift).
// It is safe for concurrent use.
type OffsetEstimator struct {
	mu      sync.Mutex
	samples []ClockSample // oldest first, at most estimatorWindow
	ok      bool
	ref     time.Time // the fit's origin on the viewer's clock
	offset  float64   // offset at ref, in nanoseconds
	drift   float64   // d(offset)/d(viewer time), dimensionless
}

// Add takes a sample into the estimate.
func (e *OffsetEstimator) Add(s ClockSample) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.samples = append(e.samples, s)
	if len(e.samples) > estimatorWindow {
		e.samples = slices.Delete(e.samples, 0, len(e.samples)-estimatorWindow)
	}
	e.refit()
}

// refit recomputes the line from the admitted samples.
func (e *OffsetEstimator) refit() {
	// Lowest RTT first; among equals the newest, which has drifted least
	// from now.
	good := slices.Clone(e.samples)
	slices.Reverse(good)
	slices.SortStableFunc(good, func(a, b ClockSample) int { return cmpDuration(a.RTT, b.RTT) })
	n := 0
	for n < len(good) && (n < minGood || good[n].RTT <= good[0].RTT+rttTolerance) {
		n++
	}
	good = good[:n]

	first, last := good[0].At, good[0].At
	for _, s := range good {
		if s.At.Before(first) {
			first = s.At
		}
		if s.At.After(last) {
			last = s.At
		}
	}
	e.ok = true
	if last.Sub(first) < minDriftSpan {
		// Too short to see a drift: the best sample alone is the estimate,
		// behind the truth by the drift since it was taken.
		e.ref, e.offset, e.drift = good[0].At, float64(good[0].Offset), 0
		return
	}
	// Weighted least squares, x in nanoseconds from first (float64 then
	// keeps sub-nanosecond precision over hours), centred on the weighted
	// mean. A sample's error is at most half its RTT's excess over the
	// best, so it weighs as the inverse square of that bound.
	var sw, mx, my float64
	w := make([]float64, len(good))
	for i, s := range good {
		u := float64(s.RTT-good[0].RTT)/2 + float64(sampleFloor)
		w[i] = 1 / (u * u)
		sw += w[i]
		mx += w[i] * float64(s.At.Sub(first))
		my += w[i] * float64(s.Offset)
	}
	mx /= sw
	my /= sw
	var sxy, sxx float64
	for i, s := range good {
		dx := float64(s.At.Sub(first)) - mx
		sxy += w[i] * dx * (float64(s.Offset) - my)
		sxx += w[i] * dx * dx
	}
	drift := sxy / sxx
	drift = min(max(drift, -maxDrift), maxDrift)
	e.ref = first.Add(time.Duration(mx))
	e.offset = my
	e.drift = drift
}

func cmpDuration(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// OffsetAt is the estimated agent-minus-viewer offset at the viewer's
// instant at; false until the first sample.
func (e *OffsetEstimator) OffsetAt(at time.Time) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ok {
		return 0, false
	}
	return time.Duration(e.offset + e.drift*float64(at.Sub(e.ref))), true
}

// Drift is the estimated rate at which the agent's clock gains on the
// viewer's, in parts per million; 0 until enough samples span enough time.
func (e *OffsetEstimator) Drift() float64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.drift * 1e6
}

// ToViewer converts an instant on the agent's clock to the viewer's clock;
// false until the first sample.
func (e *OffsetEstimator) ToViewer(agent time.Time) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.ok {
		return time.Time{}, false
	}
	// The offset is a function of the viewer's instant v we are looking
	// for: v = a - (offset + drift*(v-ref)), solved for v.
	x := (float64(agent.Sub(e.ref)) - e.offset) / (1 + e.drift)
	return e.ref.Add(time.Duration(x)), true
}

// Samples returns a copy of the samples the estimate draws on, oldest
// first.
func (e *OffsetEstimator) Samples() []ClockSample {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.samples)
}
