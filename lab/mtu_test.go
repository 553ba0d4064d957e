package lab_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/stretchr/testify/require"
)

// mtuScenario is a short session over a 10 ms path whose downlink has the
// given MTU key (none when empty).
func mtuScenario(t *testing.T, downMTU string) *scenarios.Scenario {
	key := ""
	if downMTU != "" {
		key = "\n  down_mtu: " + downMTU
	}
	sc, err := scenarios.Parse("", []byte(fmt.Sprintf(`
name: mtu
description: a path MTU
duration: 3s
network:
  both: {delay: 10ms, rate: 20Mbit/s}%s
`, key)), nil)
	require.NoError(t, err)
	return sc
}

// A scenario's down_mtu reaches the session's downlink: through a 1400-byte
// tunnel QUIC's larger probes are dropped there (and none on the default
// 1500-byte path, where all of them fit), and below 1308 bytes the session
// cannot connect, and says why.
func TestMTUScenarioKeyReachesTheLink(t *testing.T) {
	for _, c := range []struct {
		mtu        string
		probesLost bool
	}{{"", false}, {"1400B", true}} {
		synctest.Test(t, func(t *testing.T) {
			res, err := lab.Run(t.Context(), mtuScenario(t, c.mtu))
			require.NoError(t, err)
			require.Equal(t, c.probesLost, res.Links.Down.Dropped["mtu"] > 0, "down_mtu %q: %v", c.mtu, res.Links.Down.Dropped)
		})
	}
	synctest.Test(t, func(t *testing.T) {
		_, err := lab.Run(t.Context(), mtuScenario(t, "1300B"))
		require.ErrorIs(t, err, quicpair.ErrPathMTU)
		require.ErrorContains(t, err, "MTU of 1300 bytes")
	})
}
