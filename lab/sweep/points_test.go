package sweep

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

func writeFile(t *testing.T, file, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
}

// bigGrid is the default grid's shape: 72 points.
func bigGrid(t *testing.T) Grid {
	t.Helper()
	g, err := ParseGrid("g.yaml", []byte("threshold: [30ms, 60ms, 90ms, 120ms]\ndecrease: [10%, 20%, 30%]\nincrease: [5%, 15%, 25%]\nhold: [1s, 1.5s]\nscenarios: [abr-lossy]\n"))
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
					require.Equal(t, i, shardOf(p.Index, n))
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
