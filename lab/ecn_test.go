package lab_test

import (
	"testing"
	"testing/synctest"

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
