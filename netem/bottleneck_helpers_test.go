package netem

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bnDriver feeds packets straight into one bottleneck impairment, without a
// pipeline, so tests see every Verdict (Queued included) and can do hundreds
// of thousands of packets quickly. Instants count from t0, the epoch.
type bnDriver struct {
	imp Impairment
	env Env
}

func newBNDriver(t testing.TB, imp Impairment) *bnDriver {
	t.Helper()
	if v, ok := imp.(Validator); ok {
		require.NoError(t, v.Validate())
	}
	return &bnDriver{imp: imp, env: Env{Epoch: t0}}
}

// send offers a packet of size bytes at t0+at.
func (d *bnDriver) send(size int, at time.Duration) Verdict {
	return d.imp.Apply(&Packet{Data: make([]byte, size)}, t0.Add(at), &d.env)
}

// backlog asks the impairment what it holds at t0+at.
func (d *bnDriver) backlog(at time.Duration) (packets, bytes int) {
	return d.imp.(Backlogger).Backlog(t0.Add(at))
}

// bnMedian is the median of ds (which it sorts).
func bnMedian(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// bnDeliveredRate is the rate of a saturated bottleneck measured from its
// deliveries: the bytes delivered after the first delivery over the time from
// the first delivery to the last, in bits per second.
func bnDeliveredRate(t testing.TB, ds []Delivery) float64 {
	t.Helper()
	require.GreaterOrEqual(t, len(ds), 2)
	first, last := ds[0].At, ds[0].At
	bytes := 0
	for _, d := range ds[1:] {
		bytes += d.Packet.Size()
		require.False(t, d.At.Before(last), "deliveries in order")
		last = d.At
	}
	return float64(bytes) * 8 / last.Sub(first).Seconds()
}

// bnMS is shorthand for instants and durations in milliseconds.
func bnMS(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
