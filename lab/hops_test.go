package lab_test

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/stretchr/testify/require"
)

// A path of two hops: the session crosses both, a cbr flow on the second
// hop alone crosses only that one, and the result counts each hop's links,
// the session's own figures being the narrower hop's.
func TestHopsCrossFlowCrossesItsHopOnly(t *testing.T) {
	sc, err := scenarios.Parse("", []byte(`
name: hops
description: two hops, a cbr flow on the second
duration: 4s
network:
  hops:
    - {name: core, both: {delay: 10ms, rate: 20Mbit/s}}
    - {name: access, both: {delay: 10ms, rate: 8Mbit/s}}
controller: {bitrate: 2Mbit/s}
traffic:
  - {name: cross, kind: cbr, rate: 1Mbit/s, hops: [access]}
`), nil)
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		res, err := lab.Run(t.Context(), sc)
		require.NoError(t, err)
		require.Len(t, res.Hops, 2)
		core, access := res.Hops[0], res.Hops[1]
		require.Equal(t, []string{"core", "access"}, []string{core.Name, access.Name})
		// The cbr flow's megabit a second (4 s, 500 kB with headers' worth
		// of room) crosses the access hop and not the core.
		cross := access.Down.DeliveredBytes - core.Down.DeliveredBytes
		require.InDelta(t, 500_000, float64(cross), 20_000, "access %d B, core %d B", access.Down.DeliveredBytes, core.Down.DeliveredBytes)
		require.Equal(t, access.LinkTotals, res.Links, "the session's links are the narrower hop's")
		require.Greater(t, core.Down.DeliveredBytes, uint64(500_000), "the session's video crosses the core")
		require.Equal(t, []string{"access"}, res.Traffic[0].Hops)
		require.Nil(t, res.Summary.Flows[1].Share, "a flow on part of the path has no share of the narrowest hop")
		require.NotNil(t, res.Summary.Flows[0].Share, "the session has its share")
	})
}

// A path of hops is the in-memory network's only, and has no links of
// the session's own for a packet capture to tap: both are refused before
// anything is made.
func TestHopsRefusedWhereTheyCannotRun(t *testing.T) {
	hops := []transport.Hop{{Name: "core"}, {Name: "access"}}
	synctest.Test(t, func(t *testing.T) {
		_, err := lab.RunSessionContext(t.Context(), lab.Session{Duration: time.Second, Hops: hops, Capture: lab.Capture{Pcap: &bytes.Buffer{}}})
		require.ErrorIs(t, err, lab.ErrUnsupported)
		require.ErrorContains(t, err, "packet capture of a path of several hops")
	})
	_, err := lab.RunSessionContext(t.Context(), lab.Session{Duration: time.Second, Hops: hops, Transport: transport.RealTime{}})
	require.ErrorIs(t, err, lab.ErrUnsupported)
	require.ErrorContains(t, err, "only the in-memory network makes one")
}
