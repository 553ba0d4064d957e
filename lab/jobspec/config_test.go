package jobspec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

func scenario(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	scs, err := Select("", []string{name})
	require.NoError(t, err)
	sc := *scs[0]
	return &sc
}

func TestParseConfig(t *testing.T) {
	c, err := Parse(" old-pipeline ")
	require.NoError(t, err)
	require.Equal(t, "old-pipeline", c.Spec)
	require.Equal(t, map[string]string{"switches.old_capture_first": "true"}, c.Changes())

	c, err = Parse("old-abr, hold=2s, decrease=25%")
	require.NoError(t, err)
	require.Equal(t, "old-abr", c.Named.Name)
	require.Len(t, c.Settings, 2)
	require.Equal(t, "2s", c.Changes()["controller.hold"])
	require.Equal(t, "true", c.Changes()["switches.old_abr_single_peaks"])

	c, err = Parse("threshold=80ms")
	require.NoError(t, err)
	require.Equal(t, AsWritten, c.Named.Name, "settings alone start from as-written")

	for spec, want := range map[string]string{
		"":                              "empty configuration",
		"old-pipelin":                   `unknown configuration "old-pipelin" (did you mean old-pipeline?): configurations are as-written, old-pipeline`,
		"treshold=80ms":                 `unknown setting "treshold" (did you mean threshold?): settings are threshold, window`,
		"threshold=80":                  `threshold: 80 is missing a unit: expected a duration`,
		"threshold=-5ms":                "threshold: -5ms out of range",
		"decrease=150%":                 "decrease: 150% out of range",
		"decrease=0%":                   "decrease: 0% out of range: expected a percentage above 0% up to 100%",
		"increase=5ms":                  "increase: 5ms has the wrong unit",
		"hold=1s,old-pipeline":          `"old-pipeline" is not key=value: a configuration's name comes first`,
		"hold=1s,hold=2s":               "hold set twice",
		"encoder=x264":                  `encoder: unknown encoder "x264": expected one of`,
		"old-pipeline,threshold=1s":     "", // valid to parse; refused when applied to a fixed bitrate
		"controller=nada":               `controller: unknown adaptive controller "nada": expected abr or gcc`,
		"threshold=80ms,controller=gcc": "controller=gcc comes before the ABR's settings (threshold is set before it)",
		"frame_sizes=exact":             `frame_sizes: unknown frame sizes "exact": expected one of calibrated, budget`,
	} {
		_, err := Parse(spec)
		if want == "" {
			require.NoError(t, err, spec)
			continue
		}
		require.ErrorContains(t, err, want, spec)
	}
}

func TestConfigApply(t *testing.T) {
	c, err := Parse("old-pipeline")
	require.NoError(t, err)
	sc := scenario(t, "pipeline-encoder-first-fix")
	require.NoError(t, c.Apply(sc))
	require.True(t, sc.Switches.OldCaptureFirst)
	asw, err := Parse(AsWritten)
	require.NoError(t, err)
	require.Equal(t, AsWritten, asw.Named.Name)
	require.Empty(t, asw.Changes(), "as written changes nothing")

	c, err = Parse("threshold=80ms,hold=2s,decrease=30%")
	require.NoError(t, err)
	require.EqualError(t, c.Apply(scenario(t, "lan-animation")), "threshold applies to the ABR controller, and scenario lan-animation's controller is fixed")
	sc = scenario(t, "abr-lossy")
	require.NoError(t, c.Apply(sc))
	require.Equal(t, 80*time.Millisecond, sc.Controller.Threshold)
	require.Equal(t, 2*time.Second, sc.Controller.Hold)
	require.Equal(t, 0.3, sc.Controller.Decrease)

	// Values each fine alone that do not go together are refused by the
	// scenario's own validation, naming it.
	c, err = Parse("window=20s,baseline=10s")
	require.NoError(t, err)
	require.ErrorContains(t, c.Apply(scenario(t, "abr-lossy")), "baseline >= window")

	c, err = Parse("old-abr")
	require.NoError(t, err)
	require.ErrorContains(t, c.Apply(scenario(t, "lan-animation")), "old-abr applies to the ABR controller")

	for _, name := range []string{"relay", "websocket"} {
		c, err = Parse(name)
		require.NoError(t, err)
		for _, scn := range []string{"lan-animation", "path-lan-direct", "path-symmetric-nats"} {
			sc := scenario(t, scn)
			require.NoError(t, c.Apply(sc), "%s on %s", name, scn)
			require.False(t, sc.Path.Plain())
		}
	}
	// frame_sizes sets the library's budget sizes back to the presets'
	// calibrated ones (a real encoder's, which the lab registers, are
	// lab/jobs' TestEncoderSettings).
	c, err = Parse("frame_sizes=calibrated")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"agent.frame_sizes": "calibrated"}, c.Changes())
	sc = scenario(t, "lan-animation")
	require.Equal(t, "budget", sc.Agent.FrameSizes, "the library's defaults")
	require.NoError(t, c.Apply(sc))
	require.Equal(t, "calibrated", sc.Agent.FrameSizes)

	// policy sets the viewer's policy.
	c, err = Parse("policy=wait")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"viewer.policy": "wait"}, c.Changes())
	sc = scenario(t, "abr-lossy")
	require.NoError(t, c.Apply(sc))
	require.Equal(t, "wait", sc.Viewer.Policy)
	_, err = Parse("policy=hold")
	require.ErrorContains(t, err, `unknown policy "hold": expected one of drop, wait, keyframe, refresh`)

	// The controller setting swaps the adaptive kind, keeping the bounds,
	// and refuses a scenario without an adaptive controller.
	c, err = Parse("controller=gcc")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"controller.kind": "gcc"}, c.Changes())
	sc = scenario(t, "rmcat-5-1-variable-capacity")
	require.NoError(t, c.Apply(sc))
	require.Equal(t, scenarios.Controller{Kind: "gcc", Bitrate: 150_000, Min: 150_000, Max: 1_500_000}, sc.Controller)
	require.EqualError(t, c.Apply(scenario(t, "lan-animation")),
		"scenario lan-animation: a fixed controller has no adaptive bitrate to hand to gcc: expected a scenario with controller kind abr or gcc")
	c, err = Parse("controller=abr,threshold=80ms")
	require.NoError(t, err)
	sc = scenario(t, "rmcat-5-1-variable-capacity")
	sc.Controller, err = sc.Controller.As("gcc")
	require.NoError(t, err)
	require.NoError(t, c.Apply(sc), "abr settings after the swap apply to the new ABR")
	require.Equal(t, "abr", sc.Controller.Kind)
	require.Equal(t, 80*time.Millisecond, sc.Controller.Threshold)

	c, err = Parse("busy-pc")
	require.NoError(t, err)
	sc = scenario(t, "lan-animation")
	require.NoError(t, c.Apply(sc))
	require.Equal(t, "busy-pc", sc.Agent.Encoder)
}

func TestParseSeeds(t *testing.T) {
	s, err := ParseSeeds("1, 2,3")
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, s)
	_, err = ParseSeeds("1,x")
	require.ErrorContains(t, err, `"x" is not a seed`)
	_, err = ParseSeeds("1,1")
	require.ErrorContains(t, err, "1 twice")
	_, err = ParseSeeds(" , ")
	require.ErrorContains(t, err, "no seed")
}

func TestSelect(t *testing.T) {
	scs, err := Select("pipeline", nil)
	require.NoError(t, err)
	for _, sc := range scs {
		require.Contains(t, sc.Groups, "pipeline")
	}
	_, err = Select("pipelin", nil)
	require.ErrorContains(t, err, `no group "pipelin" (did you mean pipeline?)`)
	_, err = Select("", []string{"lan-animaton"})
	require.ErrorContains(t, err, `no scenario "lan-animaton" in the library (did you mean lan-animation?)`)
	_, err = Select("lan", []string{"lan-animation"})
	require.ErrorContains(t, err, "both a group and scenarios")
	all, err := Select("", nil)
	require.NoError(t, err)
	require.Greater(t, len(all), len(scs))
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"old-pipeline", "old-abr,hold=2s", "threshold=80ms,decrease=25%", "encoder=openh264", "x=", ",,", "relay,guard=50%"} {
		f.Add(s)
	}
	lib, err := Select("", []string{"abr-lossy", "lan-animation"})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := Parse(spec)
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		for _, base := range lib {
			sc := *base
			_ = c.Apply(&sc) // refusing is fine; panicking is not
		}
		_ = c.Changes()
	})
}

func FuzzParseSeeds(f *testing.F) {
	f.Add("1,2,3")
	f.Add(" 18446744073709551615 , 0")
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := ParseSeeds(s)
		if err == nil {
			require.NotEmpty(t, seeds)
		}
	})
}
