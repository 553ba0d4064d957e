package viewer_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/viewer"
)

func TestOffsetEstimatorNeedsASample(t *testing.T) {
	var e viewer.OffsetEstimator
	_, ok := e.OffsetAt(time.Now())
	require.False(t, ok)
	_, ok = e.ToViewer(time.Now())
	require.False(t, ok)
}

// One exchange over a symmetric path gives the offset exactly, and the
// conversion is its inverse.
func TestOffsetEstimatorOneExchange(t *testing.T) {
	v0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	const offset = 3 * time.Second
	t1 := v0
	t2 := v0.Add(offset + 10*time.Millisecond)
	t3 := t2.Add(time.Millisecond) // the agent took 1 ms to answer
	t4 := v0.Add(21 * time.Millisecond)
	s := viewer.NewClockSample(t1, t2, t3, t4)
	require.Equal(t, offset, s.Offset)
	require.Equal(t, 20*time.Millisecond, s.RTT)
	require.Equal(t, v0.Add(10500*time.Microsecond), s.At)

	var e viewer.OffsetEstimator
	e.Add(s)
	got, ok := e.OffsetAt(v0.Add(time.Hour))
	require.True(t, ok)
	require.Equal(t, offset, got, "no drift from one sample")
	local, ok := e.ToViewer(v0.Add(offset + time.Minute))
	require.True(t, ok)
	require.Equal(t, v0.Add(time.Minute), local)
}

// Exchanges over a path that queues at random, the replies (which share the
// direction with the video) most of the time and up to 20 ms, the probes
// now and then and up to 5 ms: min-RTT filtering and the weighted fit keep
// the offset within 100 us of the truth and the drift within 1 ppm, where
// the plain average of the samples is milliseconds off.
func TestOffsetEstimatorFiltersQueueingAndFollowsDrift(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	const drift = 50e-6
	truth := func(v time.Time) time.Duration { // agent minus viewer at viewer instant v
		return 3*time.Second + time.Duration(drift*float64(v.Sub(v0)))
	}
	queue := func(p float64, upTo time.Duration) time.Duration {
		if rng.Float64() < p {
			return time.Duration(rng.Int64N(int64(upTo)))
		}
		return 0
	}
	var e viewer.OffsetEstimator
	var errSum time.Duration
	v := v0
	for i := range 120 {
		v = v.Add(500*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
		t1 := v
		out := 10*time.Millisecond + queue(0.2, 5*time.Millisecond)
		t2 := t1.Add(out).Add(truth(t1.Add(out)))
		t3 := t2.Add(200 * time.Microsecond)
		back := 10*time.Millisecond + queue(0.8, 20*time.Millisecond)
		t4 := t1.Add(out + 200*time.Microsecond + back)
		s := viewer.NewClockSample(t1, t2, t3, t4)
		e.Add(s)
		if i >= 56 { // the last 64 samples, as the estimator keeps
			errSum += s.Offset - truth(s.At)
		}
	}
	got, ok := e.OffsetAt(v)
	require.True(t, ok)
	t.Logf("after %v: error %v (mean sample error %v), drift %.3f ppm",
		v.Sub(v0).Round(time.Second), got-truth(v), errSum/64, e.Drift())
	require.InDelta(t, 0, float64(got-truth(v)), float64(100*time.Microsecond))
	require.InDelta(t, 50, e.Drift(), 1)
	require.Greater(t, (errSum / 64).Abs(), time.Millisecond, "the samples themselves are milliseconds off")
	require.Len(t, e.Samples(), 64)
}

// A fitted drift far beyond what quartz does is noise, and is clamped.
func TestOffsetEstimatorClampsDrift(t *testing.T) {
	v0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var e viewer.OffsetEstimator
	for i := range 10 {
		at := v0.Add(time.Duration(i) * time.Second)
		e.Add(viewer.ClockSample{At: at, Offset: time.Duration(i) * time.Millisecond, RTT: 20 * time.Millisecond})
	}
	require.Equal(t, 500.0, e.Drift())
}
