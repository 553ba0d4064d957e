package lab

import (
	"sync"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/netem"
)

// run runs a session in a synctest bubble with crypto/rand seeded too.
func run(t *testing.T, s Session) *Result {
	t.Helper()
	cryptotest.SetGlobalRandom(t, s.Seed)
	var res *Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		res, err = RunSession(s)
		require.NoError(t, err)
	})
	return res
}

func lan() []netem.Impairment {
	return []netem.Impairment{
		&netem.Rate{Rate: 1_000_000_000, Queue: netem.QueueLimit{Packets: 1000}},
		&netem.Delay{Delay: 250 * time.Microsecond},
	}
}

func TestSessionSmoke(t *testing.T) {
	res := run(t, Session{Seed: 1, Duration: 3 * time.Second, Uplink: lan(), Downlink: lan()})
	lat := res.Latencies(time.Second)
	require.NotEmpty(t, lat)
	t.Logf("frames %d displayed %d median %v agent %+v viewer %+v", len(res.Frames), len(res.Displayed()), quantile.Median(lat), res.Agent, res.Viewer)
	f := res.Displayed()[100]
	t.Logf("frame: cap->conv %v conv %v enc %v ->sent %v net %v dec-start %v dec %v disp %v est %v", f.ConvertStart.Sub(f.Captured), f.ConvertEnd.Sub(f.ConvertStart), f.EncodeEnd.Sub(f.EncodeStart), f.Sent.Sub(f.EncodeEnd), f.Arrived.Sub(f.Sent), f.DecodeStart.Sub(f.Arrived), f.Decoded.Sub(f.DecodeStart), f.Displayed.Sub(f.Decoded), f.Estimated)
}

// watcher is a controller that watches frames (as GCC does).
type watcher struct {
	agent.Fixed
	mu          sync.Mutex
	sent, acked int
	lastArrived time.Time
	backwards   int
	oneWay      []time.Duration // arrived (viewer clock) - sent (true): offset + one-way
}

func (w *watcher) FrameSent(time.Time, uint64, int) { w.mu.Lock(); w.sent++; w.mu.Unlock() }
func (w *watcher) FrameAcked(_ time.Time, _ uint64, _ int, sent, arrived time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.acked++
	if arrived.Before(w.lastArrived) {
		w.backwards++
	}
	w.lastArrived = arrived
	w.oneWay = append(w.oneWay, arrived.Sub(sent))
}

// A controller that watches frames sees every frame sent and every ack with
// the arrival on the viewer's clock (here 2 s ahead of true time).
func TestControllersSeeFramesAndAcks(t *testing.T) {
	w := &watcher{Fixed: agent.Fixed{Bps: 4_000_000}}
	s := Session{Seed: 1, Duration: 2 * time.Second, Uplink: lan(), Downlink: lan(), ViewerClock: HostClock{Offset: 2 * time.Second}}
	s.Agent.Controller = w
	res := run(t, s)
	require.Equal(t, int(res.Agent.Frames), w.sent)
	require.InDelta(t, w.sent, w.acked, 2, "frames still in flight at the end are not acked")
	require.Zero(t, w.backwards)
	for _, d := range w.oneWay {
		require.InDelta(t, float64(2*time.Second), float64(d), float64(5*time.Millisecond), "viewer clock offset + a LAN's one-way time")
	}
}

// An impairment instance given to both links is refused before anything
// runs: its queue and random state belong to one link.
func TestSessionRefusesOneImpairmentOnBothLinks(t *testing.T) {
	rate := &netem.Rate{Rate: 10_000_000}
	_, err := RunSession(Session{Seed: 1, Duration: time.Second,
		Uplink: []netem.Impairment{&netem.Delay{Delay: time.Millisecond}, rate}, Downlink: []netem.Impairment{rate}})
	require.ErrorContains(t, err, "the same rate impairment (one instance) on both links")
}
