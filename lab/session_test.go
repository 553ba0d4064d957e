package lab

import (
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

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
	t.Logf("frames %d displayed %d median %v agent %+v viewer %+v", len(res.Frames), len(res.Displayed()), Median(lat), res.Agent, res.Viewer)
	f := res.Displayed()[100]
	t.Logf("frame: cap->conv %v conv %v enc %v ->sent %v net %v dec-start %v dec %v disp %v est %v", f.ConvertStart.Sub(f.Captured), f.ConvertEnd.Sub(f.ConvertStart), f.EncodeEnd.Sub(f.EncodeStart), f.Sent.Sub(f.EncodeEnd), f.Arrived.Sub(f.Sent), f.DecodeStart.Sub(f.Arrived), f.Decoded.Sub(f.DecodeStart), f.Displayed.Sub(f.Decoded), f.Estimated)
}
