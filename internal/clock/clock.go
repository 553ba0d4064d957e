// Package clock models a host's own clock. The lab keeps true time (the
// time package: virtual inside a synctest bubble); each PC of a session reads
// a Clock that runs off true time by an offset and a drift, as two real PCs'
// clocks do. The viewer must estimate the offset to turn the capture time a
// frame carries into its own clock's terms (finding N1), and the lab compares
// its estimate with the truth.
package clock

import (
	"context"
	"time"
)

// Clock is one host's clock: true time plus Offset, plus Drift parts per
// million of the true time elapsed since the epoch. The zero value is a
// perfect clock.
type Clock struct {
	// Offset is how far ahead of true time the clock was at the epoch.
	Offset time.Duration
	// DriftPPM is how fast the clock runs: +50 gains 50 us per second.
	DriftPPM float64
	// Epoch is the true instant from which drift accumulates (the session's
	// start).
	Epoch time.Time
}

// New returns a clock with the given offset and drift from epoch on.
func New(offset time.Duration, driftPPM float64, epoch time.Time) *Clock {
	return &Clock{Offset: offset, DriftPPM: driftPPM, Epoch: epoch}
}

// Now reads the clock.
func (c *Clock) Now() time.Time { return c.At(time.Now()) }

// At is what the clock shows at the true instant t.
func (c *Clock) At(t time.Time) time.Time {
	if c == nil {
		return t
	}
	drift := time.Duration(float64(t.Sub(c.Epoch)) * c.DriftPPM / 1e6)
	return t.Add(c.Offset + drift)
}

// True is the true instant at which the clock shows r (the inverse of At).
func (c *Clock) True(r time.Time) time.Time {
	if c == nil {
		return r
	}
	// r = t + Offset + (t-Epoch)*k  =>  t - Epoch = (r - Epoch - Offset)/(1+k)
	k := c.DriftPPM / 1e6
	return c.Epoch.Add(time.Duration(float64(r.Sub(c.Epoch)-c.Offset) / (1 + k)))
}

// SleepUntil waits until the true instant t (at once if it has passed); it
// reports false if ctx ended first. Timers only: exact in a synctest bubble.
func SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
