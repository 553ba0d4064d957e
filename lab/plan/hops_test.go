package plan

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

// A path of hops: each hop's links as the network's are, the session's
// capacity at every instant the least of the hops', and its links' figures
// the hop that carries least over the session, in each direction.
func TestConvertHops(t *testing.T) {
	sc, err := scenarios.Parse("hops.yaml", []byte(`
name: hops
description: two hops whose narrow one changes
duration: 20s
network:
  hops:
    - name: core
      down: [{rate: 3Mbit/s, delay: 10ms}, {at: 10s, rate: 1Mbit/s, delay: 10ms}]
      up: {rate: 1Mbit/s}
    - name: access
      down: {rate: 2Mbit/s, delay: 5ms}
      up: {rate: 5Mbit/s}
      down_mtu: 1400B
`), nil)
	require.NoError(t, err)
	p, err := Convert(sc)
	require.NoError(t, err)
	require.Len(t, p.Hops, 2)
	require.Equal(t, "access", p.Hops[1].Name)
	require.Equal(t, 1400, p.Hops[1].Down.MTU)
	require.Len(t, p.Hops[0].Down.Timeline, 1, "the core's second phase is its timeline")
	require.Empty(t, p.Downlink, "the session's own pair of links is not made")

	// Down: 2 Mbit/s (access) for 10 s, then 1 Mbit/s (core).
	bits, capped := p.DownlinkCapacity.Between(0, 10*time.Second)
	require.Equal(t, 20e6, bits)
	require.Equal(t, 10*time.Second, capped)
	bits, _ = p.DownlinkCapacity.Between(10*time.Second, 20*time.Second)
	require.Equal(t, 10e6, bits)
	// The core carries 40 Mbit over the session, the access 40 too: the
	// first of a tie. Up: the core's 1 Mbit/s.
	require.Equal(t, 0, p.DownBottleneck)
	require.Equal(t, 0, p.UpBottleneck)
	bits, _ = p.UplinkCapacity.Between(0, 20*time.Second)
	require.Equal(t, 20e6, bits)

	// A flow on the access hop alone reaches the plan by name.
	sc.Traffic = []scenarios.Flow{{Name: "x", Kind: "cbr", Rate: 1e6, Hops: []string{"access"}}}
	p, err = Convert(sc)
	require.NoError(t, err)
	require.Equal(t, []string{"access"}, p.Traffic[0].Hops)
}
