package jobs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/scenarios"
)

// A configuration runs as a variant that applies it; as-written applies
// nothing, so its sessions are the scenarios as their files say.
func TestVariantOf(t *testing.T) {
	c, err := jobspec.Parse("old-pipeline")
	require.NoError(t, err)
	v := variantOf(c)
	require.Equal(t, "old-pipeline", v.Label)
	require.NotNil(t, v.Apply)
	asw, err := jobspec.Parse(jobspec.AsWritten)
	require.NoError(t, err)
	require.Nil(t, variantOf(asw).Apply, "as written changes nothing")
	set, err := jobspec.Parse("threshold=80ms")
	require.NoError(t, err)
	require.NotNil(t, variantOf(set).Apply, "settings alone start from as-written and change it")
}

func TestApplicable(t *testing.T) {
	c, err := jobspec.Parse("old-abr")
	require.NoError(t, err)
	scs, err := jobspec.Select("", []string{"lan-animation", "abr-lossy"})
	require.NoError(t, err)
	ok, left := Applicable(scs, c)
	require.Len(t, ok, 1)
	require.Equal(t, "abr-lossy", ok[0].Name)
	require.Equal(t, []string{"lan-animation: not applicable: old-abr: old-abr applies to the ABR controller, and scenario lan-animation's controller is fixed"}, left)
}

// The encoder settings with the presets the lab registers when it is
// linked (jobspec's own tests run without them): a real encoder has no
// calibrated frame sizes, and takes the library's budget away when it is
// swapped in.
func TestEncoderSettings(t *testing.T) {
	_, err := jobspec.Parse("encoder=openh264,controller=gcc")
	require.NoError(t, err)
	scenario := func(name string) *scenarios.Scenario {
		scs, err := jobspec.Select("", []string{name})
		require.NoError(t, err)
		sc := *scs[0]
		return &sc
	}
	c, err := jobspec.Parse("encoder=lossless-hextile")
	require.NoError(t, err)
	sc := scenario("lan-animation")
	require.Equal(t, "budget", sc.Agent.FrameSizes, "the library's defaults")
	require.NoError(t, c.Apply(sc), "a real codec on a library scenario")
	require.Equal(t, "lossless-hextile", sc.Agent.Encoder)
	require.Empty(t, sc.Agent.FrameSizes)
	c, err = jobspec.Parse("encoder=lossless-tile,frame_sizes=budget")
	require.NoError(t, err)
	require.EqualError(t, c.Apply(scenario("lan-animation")), "scenario lan-animation: frame_sizes does not apply to lossless-tile, a real encoder")
}
