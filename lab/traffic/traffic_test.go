package traffic

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/lab/laberr"
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

// A QUIC flow made ECN-capable cannot take an extra delay (its delayed
// endpoint would send the datagrams on without their bits, and the flow
// would run not ECN-capable): Check refuses it for any caller, the
// scenario loader's users and a lab.Session's alike. ECN alone, or the
// TCP-like model's ECN with a delay, pass.
func TestCheckRefusesQUICECNWithADelay(t *testing.T) {
	s := time.Second
	err := Check([]Flow{{Name: "q", Kind: KindQUICBulk, ECN: "classic", Delay: 20 * time.Millisecond}}, 10*s)
	require.ErrorIs(t, err, laberr.ErrScenario)
	require.ErrorContains(t, err, "ECN with a delay")
	require.NoError(t, Check([]Flow{{Name: "q", Kind: KindSession, ECN: "classic"}}, 10*s))
	require.NoError(t, Check([]Flow{{Name: "d", Kind: KindTCPBulk, ECN: "l4s", Delay: 20 * time.Millisecond}}, 10*s))
}
