package lab_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/stretchr/testify/require"
)

// ecnScenario is a short session sending 8 Mbit/s into a 5 Mbit/s CoDel
// bottleneck, ECN-capable (ecn: classic) or not.
func ecnScenario(t *testing.T, ecn bool) *scenarios.Scenario {
	key := ""
	if ecn {
		key = "ecn: classic\n"
	}
	sc, err := scenarios.Parse("", []byte(`
name: ecn
description: a session through CoDel, ECN-capable or not
duration: 5s
`+key+`network:
  both: {delay: 10ms, rate: 5Mbit/s, queue: {codel: true}}
controller: {kind: fixed, bitrate: 8Mbit/s}
`), nil)
	require.NoError(t, err)
	return sc
}

// A scenario's ecn reaches the session's QUIC connection: CoDel marks the
// ECN-capable session's packets instead of dropping them; without it,
// CoDel drops and marks nothing.
func TestECNScenarioKeyReachesTheSession(t *testing.T) {
	for _, ecn := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			res, err := lab.Run(t.Context(), ecnScenario(t, ecn))
			require.NoError(t, err)
			down := res.Links.Down
			t.Logf("ecn %v: %d marked, dropped %v", ecn, down.Marked, down.Dropped)
			if ecn {
				require.Positive(t, down.Marked)
				require.Zero(t, down.Dropped["codel"])
			} else {
				require.Zero(t, down.Marked)
				require.Positive(t, down.Dropped["codel"])
			}
		})
	}
}

// Marks are recorded per flow: an ECN-capable QUIC bulk flow beside a
// session that is not ECN-capable gets the CoDel bottleneck's marks (its
// flow record's marked), the session none; with the session ECN-capable
// too, its own marks are the result's marked. The flow's and the session's
// together are the link's, but for a marked packet still in flight when the
// session ends and the flow's endpoints close (1 in 5 runs is one short):
// an endpoint counts what reached it.
func TestECNMarksPerFlow(t *testing.T) {
	for _, sessionECN := range []bool{false, true} {
		key := ""
		if sessionECN {
			key = "ecn: classic\n"
		}
		sc, err := scenarios.Parse("", []byte(`
name: ecn-flows
description: an ECN-capable QUIC download beside a session, through CoDel
duration: 8s
`+key+`network:
  both: {delay: 10ms, rate: 10Mbit/s, queue: {codel: true}}
controller: {kind: fixed, bitrate: 4Mbit/s}
traffic:
  - {name: download, kind: quic-bulk, start: 2s, ecn: classic}
`), nil)
		require.NoError(t, err)
		synctest.Test(t, func(t *testing.T) {
			res, err := lab.Run(t.Context(), sc)
			require.NoError(t, err)
			flow := res.Traffic[0]
			t.Logf("session ECN %v: session %d marked, download %d marked, downlink %d marked, dropped %v",
				sessionECN, res.Marked, flow.Marked, res.Links.Down.Marked, res.Links.Down.Dropped)
			require.Positive(t, flow.Marked, "the ECN-capable download is marked")
			require.Equal(t, sessionECN, res.Marked > 0, "the session is marked only when ECN-capable")
			link := int64(res.Links.Down.Marked)
			require.LessOrEqual(t, res.Marked+flow.Marked, link, "no mark but the downlink's")
			require.GreaterOrEqual(t, res.Marked+flow.Marked, link-2, "every mark on the downlink is one of theirs, but those in flight at the end")
		})
	}
}

// In real time the proxy carries the ECN bits quic-go sets on its real
// sockets: CoDel marks the ECN-capable session's video instead of
// dropping it.
func TestECNRealTime(t *testing.T) {
	sc := ecnScenario(t, true)
	sc.Duration = 2 * time.Second // real time: a queue stands within the first
	res, err := lab.RunRealTime(t.Context(), sc, lab.RealTimeConfig{})
	require.NoError(t, err)
	down := res.Links.Down
	t.Logf("real time: %d marked, dropped %v", down.Marked, down.Dropped)
	require.Positive(t, down.Marked)
	require.Zero(t, down.Dropped["codel"])
}
