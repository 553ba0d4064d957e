package traffic

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/netem/flows"
)

// The flows' random sources are the scenario's seed's: another seed draws
// other web objects.
func TestTrafficSeed(t *testing.T) {
	draw := func(seed uint64) int64 {
		return flows.WebConfig{}.Size(seeded.New(seed, "traffic", strconv.Itoa(0), "w", "web"))
	}
	require.Equal(t, draw(1), draw(1))
	require.NotEqual(t, draw(1), draw(2))
	require.NotEqual(t, Seed(1, 0, "s"), Seed(1, 1, "s"), "its place")
	require.NotEqual(t, Seed(1, 0, "s"), Seed(2, 0, "s"), "the seed")
}
