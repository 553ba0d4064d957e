package netem

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 is an arbitrary epoch for tests that drive a pipeline directly.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// testPipeline drives a pipeline without a clock: fast enough for the
// statistical tests' hundreds of thousands of packets.
type testPipeline struct {
	pl    *pipeline
	stats Stats
}

func newTestPipeline(t testing.TB, seed uint64, imps ...Impairment) *testPipeline {
	t.Helper()
	require.NoError(t, validate(imps))
	tp := &testPipeline{}
	tp.pl = newPipeline("test", seed, t0, &tp.stats)
	tp.pl.set(imps)
	return tp
}

// send offers a packet of size bytes at t0+at and returns its deliveries.
func (tp *testPipeline) send(size int, at time.Duration) []Delivery {
	return tp.pl.process(&Packet{Data: make([]byte, size)}, t0.Add(at), nil)
}

// recorder collects what a real Link delivers, with the instant of delivery
// (read from the clock, so exact inside a synctest bubble).
type recorder struct {
	mu  sync.Mutex
	got []arrival
}

type arrival struct {
	P  *Packet
	At time.Time
}

func (r *recorder) deliver(p *Packet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, arrival{P: p, At: time.Now()})
}

func (r *recorder) arrivals() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]arrival(nil), r.got...)
}

// newTestLink makes a Link that records its deliveries and closes at the end
// of the test (inside the bubble when called inside synctest.Test).
func newTestLink(t *testing.T, cfg LinkConfig) (*Link, *recorder) {
	t.Helper()
	r := &recorder{}
	l, err := NewLink(cfg, r.deliver)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, r
}
