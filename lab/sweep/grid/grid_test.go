package grid

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

func TestParseGridReadsEveryKey(t *testing.T) {
	g, err := Parse("yaml", []byte(`
threshold: [30ms, 0.12s]
decrease: 20%
increase: [5%, 25%]
hold: [1s]
sustain: [500ms]
close: [10ms]
scenarios: [abr-lossy, scenarios/testdata/x.yaml]
seeds: [1, 7]
warmup: 3s
duration: 10s
`))
	require.NoError(t, err)
	require.Equal(t, Grid{
		Threshold: []time.Duration{30 * time.Millisecond, 120 * time.Millisecond},
		Decrease:  []float64{0.2},
		Increase:  []float64{0.05, 0.25},
		Hold:      []time.Duration{time.Second},
		Sustain:   []time.Duration{500 * time.Millisecond},
		Close:     []time.Duration{10 * time.Millisecond},
		Scenarios: []string{"abr-lossy", "scenarios/testdata/x.yaml"},
		Seeds:     []uint64{1, 7},
		Warmup:    3 * time.Second,
		Duration:  10 * time.Second,
	}, g)
	require.NoError(t, g.Validate())
}

func TestParseGridDefaultsTheWarmup(t *testing.T) {
	g, err := Parse("yaml", []byte("threshold: [60ms]\n"))
	require.NoError(t, err)
	require.Equal(t, DefaultWarmup, g.Warmup)
}

// Every mistake names file, line and key, like a scenario file's.
func TestParseGridRefusesMistakesWithTheirLine(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"unknown key":       {"threshold: [60ms]\ntreshold: [30ms]\n", `g.yaml:2: treshold: unknown key "treshold": expected threshold, decrease`},
		"missing unit":      {"threshold: [60ms,\n  30]\n", "g.yaml:2: threshold[1]: 30 is missing a unit: expected a duration"},
		"wrong unit":        {"decrease: [20ms]\n", "g.yaml:1: decrease[0]: 20ms has the wrong unit: expected a percentage"},
		"decrease 100%":     {"decrease: [100%]\n", "g.yaml:1: decrease[0]: 100% out of range: expected a percentage above 0% and below 100%"},
		"increase 0%":       {"increase: [0%]\n", "increase[0]: 0% out of range: expected a percentage above 0%"},
		"zero hold":         {"hold: [0s]\n", "hold[0]: 0s out of range: expected a duration above 0s"},
		"value twice":       {"hold: [1s, 1000ms]\n", "hold[1]: 1000ms is given twice"},
		"key twice":         {"hold: [1s]\nhold: [2s]\n", "g.yaml:2: hold: given twice"},
		"bad seed":          {"seeds: [1, x]\n", "g.yaml:1: seeds[1]: x is not a seed"},
		"scenario twice":    {"scenarios: [a, a]\n", "scenarios[1]: scenario a is given twice"},
		"warmup no unit":    {"warmup: 2\n", "g.yaml:1: warmup: 2 is missing a unit"},
		"warmup list":       {"warmup: [2s]\n", "g.yaml:1: warmup: expected a duration"},
		"nested list":       {"threshold: [[60ms]]\n", "threshold: expected a duration above 0s"},
		"empty":             {"", "g.yaml:1: empty file"},
		"not a mapping":     {"- 60ms\n", "g.yaml:1: expected a mapping"},
		"syntax":            {"threshold: [60ms\n", "g.yaml: yaml: line"},
		"zero duration cut": {"duration: 0s\n", "duration: 0s out of range"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(c.yaml))
			require.ErrorContains(t, err, c.want)
		})
	}
}

// All the mistakes of a file are reported, not only the first.
func TestParseGridReportsEveryMistake(t *testing.T) {
	_, err := Parse("g.yaml", []byte("threshold: [60]\ndecrease: [2]\nfoo: 1\n"))
	require.Len(t, scenarios.Errors(err), 3)
}

func TestSetAxisReadsFlagLists(t *testing.T) {
	var g Grid
	require.NoError(t, g.SetAxis("threshold", "30ms, 60ms,90ms"))
	require.NoError(t, g.SetAxis("increase", "5%,15%"))
	require.Equal(t, []time.Duration{30 * time.Millisecond, 60 * time.Millisecond, 90 * time.Millisecond}, g.Threshold)
	require.Equal(t, []float64{0.05, 0.15}, g.Increase)
	require.NoError(t, g.SetAxis("threshold", ""), "an empty list clears the axis")
	require.Empty(t, g.Threshold)
	require.ErrorContains(t, g.SetAxis("decrease", "10%,abc"), "abc is not a number with a unit")
	require.ErrorContains(t, g.SetAxis("treshold", "1s"), `unknown parameter "treshold"`)
	require.ErrorContains(t, g.SetSeeds("1,1"), "seed 1 is given twice")
	require.ErrorContains(t, g.SetScenarios("a,b,a"), "scenario a is given twice")
}

func TestValidateRefusesAnEmptyOrImpossibleGrid(t *testing.T) {
	require.ErrorContains(t, Grid{}.Validate(), "no scenarios")
	g := Grid{Scenarios: []string{"abr-lossy"}, Warmup: 5 * time.Second, Duration: 5 * time.Second}
	require.ErrorContains(t, g.Validate(), "warmup 5s is not shorter than duration 5s")
	g = Grid{Scenarios: []string{"abr-lossy"}, Decrease: []float64{0.2, 0.2}}
	require.ErrorContains(t, g.Validate(), "decrease: 20% is given twice")
}

func FuzzParseGrid(f *testing.F) {
	f.Add([]byte("threshold: [30ms, 60ms]\ndecrease: 20%\nscenarios: [a]\n"))
	f.Add([]byte("seeds: [1, 2]\nwarmup: 1s\nduration: 5s\n"))
	f.Add([]byte("hold: [[1s]]\n"))
	f.Add([]byte("candidates:\n  - {threshold: 63ms, decrease: 18.5%, max: 2500kbit/s}\n  - {hold: 900ms, min: 150kbit/s}\nseeds: [3]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse("f.yaml", data)
		if err != nil {
			return
		}
		// What parses has valid axes, and its points have unique IDs.
		g.Scenarios = []string{"x"}
		n := 1
		for _, a := range axes {
			n *= max(1, a.length(&g))
		}
		if n > 10000 {
			return // a valid but needlessly slow product
		}
		if g.Duration > 0 && g.Warmup >= g.Duration {
			return
		}
		require.NoError(t, g.Validate())
		// A grid written back reads back the same (the tune writes its
		// steps so).
		back, err := Parse("back.yaml", Format(g))
		require.NoError(t, err, "%s", Format(g))
		require.Equal(t, g, back)
		seen := map[string]bool{}
		for _, p := range g.Points() {
			require.False(t, seen[p.ID], p.ID)
			require.False(t, strings.Contains(p.ID, " "))
			seen[p.ID] = true
		}
	})
}

// A grid of candidates (what lab tune writes for lab sweep to run) reads
// back from Format to the same grid, and its points are the
// candidates in their order, named by their values.
func TestGridOfCandidatesRoundTrips(t *testing.T) {
	g := Grid{
		Candidates: []Point{
			{Threshold: 63 * time.Millisecond, Decrease: 0.185, Window: 1200 * time.Millisecond, Max: 2_500_000},
			{Threshold: 41 * time.Millisecond, Hold: 900 * time.Millisecond, Min: 150_000, Max: 1_500_000},
		},
		Scenarios: []string{"abr-lossy"},
		Seeds:     []uint64{1, 2},
		Warmup:    2 * time.Second,
	}
	require.NoError(t, g.Validate())
	text := Format(g)
	back, err := Parse("gen.yaml", text)
	require.NoError(t, err, "%s", text)
	require.Equal(t, g, back, "%s", text)
	pts := back.Points()
	require.Len(t, pts, 2)
	require.Equal(t, "t63ms/d18.5%/w1200ms/max2500kbit", pts[0].ID)
	require.Equal(t, "t41ms/h900ms/min150kbit/max1500kbit", pts[1].ID)
	require.Equal(t, 1, pts[1].Index)
	keys, vals := pts[1].Params(back)
	require.Equal(t, []string{"threshold", "decrease", "hold", "window", "min", "max"}, keys)
	require.Equal(t, []string{"41ms", "as written", "900ms", "as written", "150kbit/s", "1500kbit/s"}, vals)

	sc := &scenarios.Scenario{}
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, s := range lib {
		if s.Name == "abr-lossy" {
			c := *s
			sc = &c
		}
	}
	require.NoError(t, pts[1].Apply(sc))
	require.Equal(t, int64(150_000), sc.Controller.Min)
	require.Equal(t, int64(1_500_000), sc.Controller.Max)
	require.Equal(t, 900*time.Millisecond, sc.Controller.Hold)
	require.Equal(t, int64(1_500_000), sc.Controller.Bitrate, "the start moves within the bounds")
}

func TestGridOfCandidatesRefusesMistakes(t *testing.T) {
	for name, c := range map[string]struct{ yaml, want string }{
		"unknown parameter": {"candidates:\n  - {treshold: 60ms}\nscenarios: [abr-lossy]\n", `g.yaml:2: candidates[0].treshold: unknown parameter "treshold"`},
		"bad value":         {"candidates:\n  - {threshold: 60}\n", "g.yaml:2: candidates[0].threshold: 60 is missing a unit"},
		"not a list":        {"candidates: {threshold: 60ms}\n", "g.yaml:1: candidates: expected a list of points"},
		"empty point":       {"candidates:\n  - {}\n", "candidates[0]: no parameters"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(c.yaml))
			require.ErrorContains(t, err, c.want)
		})
	}
	both := Grid{Threshold: []time.Duration{time.Millisecond}, Candidates: []Point{{Hold: time.Second}}, Scenarios: []string{"abr-lossy"}}
	require.ErrorContains(t, both.Validate(), "threshold: a grid lists its candidates or its axes' values, not both")
	twice := Grid{Candidates: []Point{{Hold: time.Second}, {Hold: 1000 * time.Millisecond}}, Scenarios: []string{"abr-lossy"}}
	require.ErrorContains(t, twice.Validate(), "candidates[1]: the same as candidates[0] (h1s)")
	inverted := Grid{Candidates: []Point{{Min: 2_000_000, Max: 1_000_000}}, Scenarios: []string{"abr-lossy"}}
	require.ErrorContains(t, inverted.Validate(), "candidates[0]: min 2Mbit/s is above max 1Mbit/s")
}

func TestPointSetReadsAGridFilesValue(t *testing.T) {
	var p Point
	require.NoError(t, p.Set("decrease", "18.5%"))
	require.NoError(t, p.Set("max", "1500000bit/s"))
	require.Equal(t, Point{Decrease: 0.185, Max: 1_500_000}, p)
	require.ErrorContains(t, p.Set("hold", "0s"), "hold: 0s out of range")
	require.ErrorContains(t, p.Set("treshold", "1ms"), `unknown parameter "treshold"`)
}

// bigGrid is the default grid's shape: 72 points.
func bigGrid(t *testing.T) Grid {
	t.Helper()
	g, err := Parse("g.yaml", []byte("threshold: [30ms, 60ms, 90ms, 120ms]\ndecrease: [10%, 20%, 30%]\nincrease: [5%, 15%, 25%]\nhold: [1s, 1.5s]\nscenarios: [abr-lossy]\n"))
	require.NoError(t, err)
	return g
}

// Points enumerate the product in a fixed order, the first axis slowest,
// each with an ID made of its values.
func TestPointsOrderAndIDs(t *testing.T) {
	g := Grid{Threshold: []time.Duration{60 * time.Millisecond, 90 * time.Millisecond}, Decrease: []float64{0.1, 0.2}, Hold: []time.Duration{1500 * time.Millisecond}}
	var ids []string
	for i, p := range g.Points() {
		require.Equal(t, i, p.Index)
		ids = append(ids, p.ID)
	}
	require.Equal(t, []string{"t60ms/d10%/h1500ms", "t60ms/d20%/h1500ms", "t90ms/d10%/h1500ms", "t90ms/d20%/h1500ms"}, ids)
	p := g.Points()[2]
	require.Equal(t, 90*time.Millisecond, p.Threshold)
	require.Equal(t, 0.1, p.Decrease)
	require.Zero(t, p.Increase, "an axis the grid does not vary stays the scenario's")
	keys, values := p.Params(g)
	require.Equal(t, []string{"threshold", "decrease", "hold"}, keys)
	require.Equal(t, []string{"90ms", "10%", "1500ms"}, values)

	require.Equal(t, []Point{{ID: "as-written"}}, Grid{}.Points(), "no axis: one point, the scenarios as written")
	require.Len(t, bigGrid(t).Points(), 72)
}

// Whatever n, every point is in exactly one shard, and shards differ in
// size by one at most.
func TestShardsCoverEveryPointOnce(t *testing.T) {
	for _, g := range []Grid{bigGrid(t), {Threshold: []time.Duration{time.Millisecond, 2 * time.Millisecond}}} {
		points := g.Points()
		for n := 1; n <= 5; n++ {
			seen := map[string]int{}
			sizes := []int{}
			for i := 1; i <= n; i++ {
				shard, err := Shard(points, i, n)
				require.NoError(t, err)
				sizes = append(sizes, len(shard))
				for _, p := range shard {
					seen[p.ID]++
					require.Equal(t, i, ShardOf(p.Index, n))
				}
			}
			require.Len(t, seen, len(points), "n=%d", n)
			for id, k := range seen {
				require.Equal(t, 1, k, "n=%d: %s", n, id)
			}
			require.LessOrEqual(t, sizes[0]-sizes[n-1], 1, "n=%d: %v", n, sizes)
		}
	}
}

func TestParseShard(t *testing.T) {
	i, n, err := ParseShard("2/3")
	require.NoError(t, err)
	require.Equal(t, []int{2, 3}, []int{i, n})
	for s, want := range map[string]string{
		"0/3": "shards count from 1 (1/3 to 3/3); for a Kubernetes Indexed Job pass $((JOB_COMPLETION_INDEX+1))/3",
		"4/3": "bad shard 4/3: expected a shard from 1/3 to 3/3",
		"1/0": "bad shard 1/0: expected at least one shard",
		"3":   `bad shard "3": expected i/n`,
		"a/b": `bad shard "a/b": expected whole numbers`,
	} {
		_, _, err := ParseShard(s)
		require.ErrorIs(t, err, ErrShard)
		require.ErrorContains(t, err, want, s)
	}
	_, err = Shard(nil, 2, 1)
	require.ErrorIs(t, err, ErrShard)
}

func libraryScenario(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, sc := range lib {
		if sc.Name == name {
			c := *sc
			return &c
		}
	}
	t.Fatalf("no scenario %s", name)
	return nil
}

// A point sets the ABR's parameters it varies and keeps the scenario's
// others.
func TestApplySetsTheABR(t *testing.T) {
	sc := libraryScenario(t, "abr-lossy")
	sc.Controller.Close = 30 * time.Millisecond
	p := Point{ID: "x", Threshold: 90 * time.Millisecond, Decrease: 0.3}
	require.NoError(t, p.Apply(sc))
	c := sc.Controller
	require.Equal(t, "abr", c.Kind)
	require.Equal(t, 90*time.Millisecond, c.Threshold)
	require.Equal(t, 0.3, c.Decrease)
	require.Equal(t, int64(8_000_000), c.Bitrate, "the scenario's initial bitrate stays")
	require.Equal(t, 30*time.Millisecond, c.Close, "a parameter the point does not vary stays")
	require.Zero(t, c.Increase, "left to the ABR's default")
	require.Nil(t, sc.Expect, "expectations bound the documented parameters, not the sweep's")

	fixed := libraryScenario(t, "lan-animation")
	require.NoError(t, p.Apply(fixed))
	require.Equal(t, "abr", fixed.Controller.Kind, "a fixed bitrate becomes the ABR's initial one")

	steps := libraryScenario(t, "abr-lossy")
	steps.Controller = scenarios.Controller{Kind: "steps", Steps: []scenarios.Step{{At: time.Second, Bitrate: 1e6}}}
	require.ErrorContains(t, p.Apply(steps), "scripts its bitrate (controller kind steps)")

	bad := libraryScenario(t, "abr-lossy")
	bad.Controller.Window, bad.Controller.Baseline = 5*time.Second, 2*time.Second
	require.ErrorContains(t, p.Apply(bad), "scenario abr-lossy at point x")
}
