package scenarios

import (
	"io/fs"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLibrary(t *testing.T) {
	lib, err := Library()
	require.NoError(t, err)
	var lan *Scenario
	for _, s := range lib {
		require.NoError(t, s.Validate(), s.File)
		if s.Name == "lan-animation" {
			lan = s
		}
	}
	require.NotNil(t, lan, "the library holds lan-animation")
	require.Equal(t, "library/lan-animation.yaml", lan.File)
	require.Equal(t, []string{"N1", "N3", "N20"}, lan.Findings)
	require.Equal(t, 20*time.Second, lan.Duration, "from library/defaults.yaml")
	require.Equal(t, uint64(1), lan.Seed, "from library/defaults.yaml")
	link := []Phase{{Delay: 250 * time.Microsecond, Rate: 1_000_000_000}}
	require.Equal(t, Network{Up: link, Down: link}, lan.Network)
	require.Equal(t, []ScreenPhase{{Source: "animation"}}, lan.Screen)
	require.Equal(t, Agent{Encoder: "openh264-asm", FrameSizes: "budget", Refresh: 60}, lan.Agent)
	// The defaults' frame sizes are the H.264 model's: a scenario whose
	// encoder is a real codec does not inherit them.
	i := slices.IndexFunc(lib, func(s *Scenario) bool { return s.Name == "encoder-lossless-support" })
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, "lossless-tile", lib[i].Agent.Encoder)
	require.Empty(t, lib[i].Agent.FrameSizes)
	require.Equal(t, Viewer{Decode: &Dist{Mean: 3 * time.Millisecond}}, lan.Viewer)
	require.Equal(t, Controller{Kind: "fixed", Bitrate: 4_000_000}, lan.Controller)
	require.Equal(t, Path{Connect: "direct"}, lan.Path)
	require.True(t, lan.Path.Plain())
	require.Equal(t, Clocks{Agent: Clock{Offset: 3 * time.Second, DriftPPM: 50}}, lan.Clocks)
	require.Len(t, lan.Expect, 2)
	require.Equal(t, "latency.median", lan.Expect[0].Measure)
	require.Equal(t, 0.018, *lan.Expect[0].Max)
	require.Equal(t, 0.0095, *lan.Expect[0].Min)
	require.Equal(t, time.Second, lan.Expect[0].From)
	require.Equal(t, "lan-animation (library/lan-animation.yaml) 20s findings N1,N3,N20 groups lan", lan.String())
}

// TestDefaultsMerge: mappings merge key by key, lists and scalars replace,
// null removes, and a direction of its own replaces both.
func TestDefaultsMerge(t *testing.T) {
	defaults := `
duration: 30s
seed: 9
agent: {encoder: openh264, send_cap: 128KB, hardware: [quicksync, nvenc]}
network:
  both: {delay: 1ms, rate: 100Mbit/s}
controller: {bitrate: 2Mbit/s}
expect: [{measure: fps, min: 50}]
`
	s, err := Parse("lib/a.yaml", []byte(`
name: a
description: d
seed: 2
agent: {convert: cpu, send_cap: ~, hardware: [nvenc]}
network:
  down: {delay: 30ms}
controller: {kind: steps, steps: [{at: 1s, bitrate: 1Mbit/s}]}
`), []byte(defaults))
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, s.Duration, "inherited")
	require.Equal(t, uint64(2), s.Seed, "a scenario's scalar wins")
	require.Equal(t, Agent{Encoder: "openh264", ConvertOnCPU: true, Hardware: []string{"nvenc"}}, s.Agent,
		"mappings merge; null removed send_cap; the list replaced the defaults' list")
	require.Equal(t, []Phase{{Delay: time.Millisecond, Rate: 100_000_000}}, s.Network.Up, "both, from the defaults")
	require.Equal(t, []Phase{{Delay: 30 * time.Millisecond}}, s.Network.Down, "down replaces both for its direction")
	require.Equal(t, Controller{Kind: "steps", Bitrate: 2_000_000, Steps: []Step{{At: time.Second, Bitrate: 1_000_000}}}, s.Controller)
	require.Len(t, s.Expect, 1, "the defaults' expectations apply when the scenario has none")
	require.Equal(t, 8, s.Expect[0].Line, "line in the defaults file")

	_, err = Parse("lib/b.yaml", []byte("name: b\ndescription: d\nexpect: [{measure: fps, min: 50}]\n"), []byte("duration: 0s\nagent: {encoder: nvenc}\n"))
	require.EqualError(t, err, "lib/defaults.yaml:1: duration: 0s out of range: expected a duration above 0s\n"+
		"lib/defaults.yaml:2: agent.encoder: nvenc is a hardware preset: list it under hardware; encoder takes a software preset, one of busy-pc, lossless-hextile, lossless-tile, lossless-zrle, openh264, openh264-asm, openh264-real, openh264-real-1080p, openh264-real-noskip")

	_, err = Parse("lib/c.yaml", []byte("name: c\ndescription: d\n"), []byte("name: x\nduration: 1s\n"))
	require.EqualError(t, err, "lib/defaults.yaml:1: name: a name cannot be a default: every scenario names itself")

	_, err = Parse("lib/d.yaml", []byte("name: d\ndescription: d\nduration: 1s\n"), []byte("agent: {x: 1\n"))
	require.EqualError(t, err, "lib/defaults.yaml:2: bad YAML syntax: did not find expected ',' or '}'")

	_, err = Parse("lib/e.yaml", []byte("name: e\ndescription: d\nduration: 1s\n"), []byte("- 1\n"))
	require.EqualError(t, err, "lib/defaults.yaml:1: expected a mapping of defaults for the scenario keys, got a list")

	s, err = Parse("lib/f.yaml", []byte("name: f\ndescription: d\nduration: 1s\n"), []byte("# nothing yet\n"))
	require.NoError(t, err, "a defaults file of comments is no defaults")
	require.Equal(t, "f", s.Name)
}

func TestLoadDir(t *testing.T) {
	ok := func(name string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("name: " + name + "\ndescription: d\n")}
	}
	fsys := fstest.MapFS{
		"lib/defaults.yaml":   {Data: []byte("duration: 10s\nseed: x\n")},
		"lib/a.yaml":          ok("one"),
		"lib/b.yaml":          ok("two"),
		"lib/c.yaml":          ok("one"),
		"lib/d.yml":           ok("three"),
		"lib/notes.md":        {Data: []byte("not a scenario")},
		"lib/sub/e.yaml":      ok("four"),
		"good/defaults.yaml":  {Data: []byte("duration: 10s\n")},
		"good/a.yaml":         ok("one"),
		"good/b.yaml":         ok("two"),
		"good/traces/t.down":  {Data: []byte("1\n")},
		"empty/defaults.yaml": {Data: []byte("duration: 10s\n")},
	}
	_, err := LoadDir(fsys, "lib")
	require.EqualError(t, err, "lib/defaults.yaml:2: seed: x is not a seed: expected a whole number from 0 to 18446744073709551615\n"+
		"lib/d.yml: scenario files end in .yaml: rename it, or it is not loaded",
		"an error in the defaults is reported once, not once per scenario")

	list, err := LoadDir(fsys, "good")
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "good/a.yaml", list[0].File)
	require.Equal(t, 10*time.Second, list[1].Duration)

	delete(fsys, "lib/defaults.yaml")
	list, err = LoadDir(fsys, "lib")
	require.Empty(t, list)
	require.EqualError(t, err, "lib/a.yaml:1: duration: missing required field: expected how long the session runs, like 20s (here or in defaults.yaml)\n"+
		"lib/b.yaml:1: duration: missing required field: expected how long the session runs, like 20s (here or in defaults.yaml)\n"+
		"lib/c.yaml:1: duration: missing required field: expected how long the session runs, like 20s (here or in defaults.yaml)\n"+
		"lib/d.yml: scenario files end in .yaml: rename it, or it is not loaded")

	fsys["lib/defaults.yaml"] = &fstest.MapFile{Data: []byte("duration: 1s\n")}
	list, err = LoadDir(fsys, "lib")
	require.EqualError(t, err, "lib/c.yaml:1: name: duplicate name one: lib/a.yaml:1 has it too\n"+
		"lib/d.yml: scenario files end in .yaml: rename it, or it is not loaded")
	require.Len(t, list, 2, "the scenarios that loaded are returned with the error")
	require.Equal(t, []string{"lib/a.yaml", "lib/b.yaml"}, []string{list[0].File, list[1].File})

	list, err = LoadDir(fsys, "empty")
	require.NoError(t, err)
	require.Empty(t, list)

	_, err = LoadDir(fsys, "missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestLoadFile(t *testing.T) {
	s, err := LoadFile("library/lan-animation.yaml")
	require.NoError(t, err)
	require.Equal(t, 20*time.Second, s.Duration, "defaults.yaml of the same folder")

	_, err = LoadFile("library/defaults.yaml")
	require.EqualError(t, err, "library/defaults.yaml: defaults.yaml holds the folder's defaults, not a scenario")

	_, err = LoadFile("testdata/none.yaml")
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// TestValidate: a Scenario built in Go is checked by the same rules, with
// the canonical field names and no line.
func TestValidate(t *testing.T) {
	s := &Scenario{File: "go", Name: "x", Description: "d", Duration: time.Second,
		Network: Network{Down: []Phase{{Loss: 1.2}, {At: time.Second, Rate: -1}}},
		Expect:  []Expectation{{Measure: "fps"}}}
	require.EqualError(t, s.Validate(), "go: network.down[0].loss: 120% out of range: expected a percentage from 0% to 100%\n"+
		"go: network.down[1].at: 1s is not before the end: the scenario lasts 1s\n"+
		"go: network.down[1].rate: -1bit/s out of range: expected a rate above 0bit/s\n"+
		"go: expect[0]: missing a bound: expected min, max or both")
	// A controller without a kind is fixed: the ABR's keys and switches
	// are refused, as in a file.
	s = &Scenario{File: "go", Name: "x", Description: "d", Duration: time.Second,
		Controller: Controller{Min: 1_000_000, Decrease: 1.2}, Switches: Switches{OldABRTotalLatency: true}}
	require.EqualError(t, s.Validate(), "go: controller.min: min does not apply to kind fixed: min applies to kind abr or gcc\n"+
		"go: controller.decrease: decrease does not apply to kind fixed: decrease applies to kind abr\n"+
		"go: switches.old_abr_total_latency: old_abr_total_latency does not apply to controller kind fixed: old_abr_total_latency applies to controller kind abr")
	s.Controller.Kind = "abr"
	s.Controller.Bitrate, s.Controller.Max, s.Controller.Window, s.Controller.Baseline = 2_000_000, -1, time.Second, time.Millisecond
	s.Controller.Increase, s.Controller.Guard, s.Controller.Hold = -0.1, 2, -time.Second
	require.EqualError(t, s.Validate(), "go: controller.max: -1bit/s out of range: expected a rate above 0bit/s\n"+
		"go: controller.hold: -1s out of range: expected a duration above 0s\n"+
		"go: controller.baseline: 1ms is shorter than window 1s: expected baseline >= window (the median over the window is compared with the minimum over the baseline)\n"+
		"go: controller.decrease: 120% out of range: expected a decrease above 0% and below 100%\n"+
		"go: controller.increase: -10% out of range: expected an increase above 0%\n"+
		"go: controller.guard: 200% out of range: expected a percentage from 0% to 100%")
	s.Controller = Controller{Kind: "abr", Bitrate: 500_000, Min: 1_000_000}
	require.EqualError(t, s.Validate(), "go: controller.bitrate: 500kbit/s is below min 1Mbit/s: expected an initial bitrate from min to max")
	s.Controller = Controller{Kind: "abr", Bitrate: 500_000, Min: 1_000_000, Max: 800_000}
	require.EqualError(t, s.Validate(), "go: controller.min: 1Mbit/s is greater than max 800kbit/s: expected min <= max")

	require.EqualError(t, (&Scenario{}).Validate(), "name: missing required field: expected lower-case words joined by '-', like lan-animation\n"+
		"description: missing required field: expected a sentence or two saying what the scenario shows\n"+
		"duration: missing required field: expected how long the session runs, like 20s (here or in defaults.yaml)")
}
