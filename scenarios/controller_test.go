package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A controller swapped for the other adaptive kind keeps its initial
// bitrate and bounds and drops the keys only the old kind reads; a fixed
// bitrate cannot be swapped.
func TestControllerAs(t *testing.T) {
	abr := Controller{Kind: "abr", Bitrate: 150_000, Min: 150_000, Max: 1_500_000, Threshold: 80 * time.Millisecond, Hold: 2 * time.Second}
	gcc, err := abr.As("gcc")
	require.NoError(t, err)
	require.Equal(t, Controller{Kind: "gcc", Bitrate: 150_000, Min: 150_000, Max: 1_500_000}, gcc)
	back, err := gcc.As("abr")
	require.NoError(t, err)
	require.Equal(t, Controller{Kind: "abr", Bitrate: 150_000, Min: 150_000, Max: 1_500_000}, back, "the ABR's own defaults for the rest")
	same, err := abr.As("abr")
	require.NoError(t, err)
	require.Equal(t, abr, same, "the same kind changes nothing")

	_, err = Controller{Kind: "fixed", Bitrate: 1_000_000}.As("gcc")
	require.EqualError(t, err, "a fixed controller has no adaptive bitrate to hand to gcc: expected a scenario with controller kind abr or gcc")
	_, err = Controller{}.As("abr")
	require.ErrorContains(t, err, "a fixed controller")
	_, err = abr.As("nada")
	require.EqualError(t, err, `unknown adaptive controller "nada": expected abr or gcc`)
	require.True(t, abr.Adaptive())
	require.False(t, Controller{Kind: "steps"}.Adaptive())
}
