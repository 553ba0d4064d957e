package seeded

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func draw(seed uint64, names ...string) []uint64 {
	r := New(seed, names...)
	out := make([]uint64, 8)
	for i := range out {
		out[i] = r.Uint64()
	}
	return out
}

func TestSameSeedAndNameSameSequence(t *testing.T) {
	require.Equal(t, draw(7, "uplink", "loss"), draw(7, "uplink", "loss"))
}

func TestNamesAndSeedsSeparateSources(t *testing.T) {
	require.NotEqual(t, draw(7, "uplink", "loss"), draw(8, "uplink", "loss"))
	require.NotEqual(t, draw(7, "uplink", "loss"), draw(7, "downlink", "loss"))
	require.NotEqual(t, draw(7, "ab", "c"), draw(7, "a", "bc"))
}
