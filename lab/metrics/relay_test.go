package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem/relay"
)

// A relay's counters, read at the scrape, by direction, reason and result;
// promlint has nothing to say.
func TestRelayCollector(t *testing.T) {
	st := relay.Stats{Bound: 4, Rebound: 1, Refused: 2,
		AgentToViewer: relay.Flow{Datagrams: 10, Bytes: 12000}, ViewerToAgent: relay.Flow{Datagrams: 5, Bytes: 300},
		DroppedUnbound: 7, DroppedNoPeer: 1, DroppedMalformed: 3, DroppedSend: 0}
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(NewRelayCollector(func() relay.Stats { return st }, prometheus.Labels{"relay": "r1"})))
	want := `
# HELP lab_relay_dropped_datagrams_total Datagrams the relay dropped, by reason: malformed, unbound (no session at that address), no-peer (the other role not bound), send (could not be sent on), refused (a bind for a session never registered).
# TYPE lab_relay_dropped_datagrams_total counter
lab_relay_dropped_datagrams_total{reason="malformed",relay="r1"} 3
lab_relay_dropped_datagrams_total{reason="no-peer",relay="r1"} 1
lab_relay_dropped_datagrams_total{reason="refused",relay="r1"} 2
lab_relay_dropped_datagrams_total{reason="send",relay="r1"} 0
lab_relay_dropped_datagrams_total{reason="unbound",relay="r1"} 7
# HELP lab_relay_forwarded_bytes_total Bytes the relay forwarded between a session's peers, by direction.
# TYPE lab_relay_forwarded_bytes_total counter
lab_relay_forwarded_bytes_total{direction="agent-to-viewer",relay="r1"} 12000
lab_relay_forwarded_bytes_total{direction="viewer-to-agent",relay="r1"} 300
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), RelayDroppedDatagrams, RelayForwardedBytes))

	st.DroppedUnbound = 100 // read again at the next scrape
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP lab_relay_binds_total Bind messages the relay accepted, refreshes included; rebound: those that moved a role to a new address.
# TYPE lab_relay_binds_total counter
lab_relay_binds_total{relay="r1",result="bound"} 4
lab_relay_binds_total{relay="r1",result="rebound"} 1
`), RelayBinds))
	require.Equal(t, 7, testutil.CollectAndCount(NewRelayCollector(func() relay.Stats { return st }, nil), RelayDroppedDatagrams, RelayForwardedDatagrams))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	unbound := -1.0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == RelayDroppedDatagrams && m.GetLabel()[0].GetValue() == "unbound" {
				unbound = m.GetCounter().GetValue()
			}
		}
	}
	require.Equal(t, 100.0, unbound, "the counter read at the second scrape")
}
