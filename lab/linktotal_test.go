package lab

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

func TestECNLinkTotalCountsMarksBetweenReadings(t *testing.T) {
	from := netem.Stats{Marked: netem.Counter{Packets: 3, Bytes: 3000}}
	to := netem.Stats{Marked: netem.Counter{Packets: 10, Bytes: 10000}}
	require.Equal(t, uint64(7), LinkTotal(from, to).Marked)
}
