package lab

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/nuvirahub/latencylab/viewer"
)

// twinPolicies selects the viewer policies TestModelMatchesRealTwins
// compares under: the product's (drop) by default, every policy the real
// encoder can run with -twin-policies all.
var twinPolicies = flag.String("twin-policies", "drop", "the viewer policies TestModelMatchesRealTwins compares the model and the real encoder under: comma-separated, or all")

// twinSeeds are the seeds each twin runs at, real and model alike: the
// real runs' spread is the band the model must lie in.
var twinSeeds = []uint64{1, 2, 3}

// twinFigures are the figures compared, over the session from 1 s (the
// start-up's first keyframe left out).
var twinFigures = []string{"fps", "latency.median", "damaged.time"}

// twinDamageSlack is what damaged.time may exceed its band by: a quarter
// of a second, 15 frame intervals, so that a twin whose real runs show no
// damage at all does not fail for one damaged frame of the model.
const twinDamageSlack = 0.25

// knownTwinGaps are the figures where the model is known to differ from
// the real encoder beyond its spread, by twin and figure, with why: they
// are measured and logged, not judged, and docs/policies.md lists them.
// Every other figure of every twin is judged.
var knownTwinGaps = map[string]string{
	"real-mobile-spikes/latency.median":   "at seed 3 the model's median is 116-151 ms (two runs) against the real runs' 50-74 ms: the model's repair keyframes are all 70 KB (the animation's first keyframe), OpenH264's spread from 31 to 77 KB at 4 Mbit/s (its repair keyframe's quantiser is held between 26 and 35 and set from the last keyframe's complexity), 36 KB on average in the seed-3 real run; the larger ones hold the link longer",
	"real-abr-capacity-drop/damaged.time": "the model's frames of the animation are all the same size, so none overtakes another when the capacity drops; OpenH264's vary, and 0.2-3.4 s of damaged pictures follow",
	"real-still-refine/fps":               "the model sends the photo at its budget and refines it (N15) where OpenH264 sends one 164 KB frame at its quantiser and skips all 15 passes; counting frames as OpenH264 does, the model skips most of its passes too, and shows 1.6 frames a second against 0.2-1",
}

// knownPolicyTwinGaps are known differences under one viewer policy only
// (-twin-policies), by policy, then twin and figure, as knownTwinGaps.
var knownPolicyTwinGaps = map[string]map[string]string{
	"keyframe": {
		"real-abr-lossy/fps": "the model shows 50-56 frames a second against the real runs' 24-38 (one run of the test, 2026-12-04; 55.9 at seed 1 fell outside the band's 53.7): the model's P frames of the animation are its target's share, where OpenH264's run over it and its rate control skips frames (seen under wait, where the band still holds the model's 60)",
	},
}

// twinMixtures are the figures whose model runs have two outcomes at the
// same seed from one run of the test to the next (a native session's
// goroutines take turns differently, and a lost or late repair keyframe
// decides which outcome comes): they are judged by the median of the
// model's runs over the seeds, the outcomes' mixture, not run by run.
var twinMixtures = map[string]string{
	"real-abr-lossy/damaged.time": "over six runs of the test the model's damaged time was 12.1-12.7 s or 14.2-18.5 s at each seed (seed 1: 12.4, 12.7, 15.8, 18.5), its median over the three seeds 14.2-16.9 s, against the real runs' 17.3-19.0 s",
}

// libraryTwins are the library's scenarios that must show what their real
// twin shows, as the library has them (its frame sizes, its viewer policy,
// its whole length measured over the twin's): by real twin, the library
// scenario and the figures judged by the median over the seeds rather than
// run by run, with why. TestModelMatchesRealTwins judges them beside the
// model, under the library scenario's own policy.
var libraryTwins = map[string]struct {
	scenario string
	mixtures map[string]string
}{
	"real-abr-lossy": {"abr-lossy", map[string]string{
		"real-abr-lossy/latency.median": "over 24 runs at seeds 1-3 the library's median was 72-103 ms, one run of 24 below the band's 79 ms at the real runs' 111-149 ms; the median over the three seeds was 94-100 ms",
	}},
}

// realRuns memoises the real encoder's runs, by file, seed and policy:
// TestReal and TestModelMatchesRealTwins share them in one test binary.
var realRuns struct {
	mu   sync.Mutex
	runs map[string]*realRun
}

type realRun struct {
	once sync.Once
	r    *result.Run
}

// runRealOnce runs sc (a real twin at its seed and policy) once per test
// binary.
func runRealOnce(t *testing.T, sc *scenarios.Scenario) *result.Run {
	t.Helper()
	policy := policyOf(sc)
	key := fmt.Sprintf("%s seed %d policy %s", sc.File, sc.Seed, policy)
	realRuns.mu.Lock()
	if realRuns.runs == nil {
		realRuns.runs = map[string]*realRun{}
	}
	rr := realRuns.runs[key]
	if rr == nil {
		rr = &realRun{}
		realRuns.runs[key] = rr
	}
	realRuns.mu.Unlock()
	rr.once.Do(func() { rr.r = runReal(t, sc) })
	require.NotNil(t, rr.r, "%s: the run failed in the test that made it", key)
	return rr.r
}

// modelTwin is a real twin with the H.264 model in OpenH264's place: the
// calibrated sizes (fitted to OpenH264 at 720p, the twins' size), the real
// encoder's fixed cost per frame, the same screen, network, controller and
// viewer. Its expectations, written for the real encoder, are left out.
func modelTwin(real *scenarios.Scenario) *scenarios.Scenario {
	m := *real
	m.Name = strings.Replace(real.Name, "real-", "model-", 1)
	m.Agent.Encoder = encoder.PresetOpenH264Asm
	m.Agent.FrameSizes = "calibrated"
	m.Agent.EncodeTime = &scenarios.Dist{Mean: openh264.EncodeTime720p}
	m.Expect = nil
	return &m
}

// TestModelMatchesRealTwins runs each real-encoder twin and its model under
// the same viewer policy at the same seeds and requires the model's fps,
// latency median and damaged time, each run's, within the real runs'
// spread widened by the bound rule of docs/testing.md: a model that is
// optimistic about what a broken reference chain costs (frames decoded
// independently of each other) fails it. The library's scenarios of
// libraryTwins are judged the same way, as the library has them, over
// their twin's length.
//
//	go test ./lab -run TestModelMatchesRealTwins -v
//	go test ./lab -run TestModelMatchesRealTwins -v -args -twin-policies all
func TestModelMatchesRealTwins(t *testing.T) {
	openh264test.Require(t)
	policies := strings.Split(*twinPolicies, ",")
	if *twinPolicies == "all" {
		policies = nil
		for _, p := range viewer.Policies {
			if p != viewer.PolicyRefresh { // OpenH264 has no rolling refresh
				policies = append(policies, string(p))
			}
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "real", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 5)
	for key := range twinMixtures {
		name, fig, _ := strings.Cut(key, "/")
		require.Contains(t, files, filepath.Join("testdata", "real", name+".yaml"), "a mixture of a twin that is gone: %s", key)
		require.Contains(t, twinFigures, fig, "a mixture of a figure not compared: %s", key)
	}
	gaps := []map[string]string{knownTwinGaps}
	for policy, known := range knownPolicyTwinGaps {
		require.Contains(t, viewer.Policies, viewer.Policy(policy), "a known difference under a policy that is gone")
		gaps = append(gaps, known)
	}
	for _, known := range gaps {
		for key := range known {
			name, fig, _ := strings.Cut(key, "/")
			require.Contains(t, files, filepath.Join("testdata", "real", name+".yaml"), "a known difference of a twin that is gone: %s", key)
			require.Contains(t, twinFigures, fig, "a known difference of a figure not compared: %s", key)
		}
	}
	for _, file := range files {
		for _, policy := range policies {
			name := strings.TrimSuffix(filepath.Base(file), ".yaml")
			t.Run(name+"/"+policy, func(t *testing.T) {
				t.Parallel()
				real, model := map[string][]float64{}, map[string][]float64{}
				for _, seed := range twinSeeds {
					sc := realScenario(t, name)
					sc.Seed, sc.Viewer.Policy = seed, policy
					collect(t, real, runRealOnce(t, sc))
					var r *result.Run
					t.Run(fmt.Sprintf("model/seed%d", seed), func(t *testing.T) { r = runReal(t, modelTwin(sc)) })
					if r == nil {
						t.Skip("skipping: the -run filter left out the model's runs")
					}
					collect(t, model, r)
				}
				known := maps.Clone(knownTwinGaps)
				maps.Copy(known, knownPolicyTwinGaps[policy])
				judgeTwin(t, name, "model", real, model, known, twinMixtures)
				if lt, ok := libraryTwins[name]; ok && policy == policyOf(libraryScenario(t, lt.scenario)) {
					t.Run("library", func(t *testing.T) {
						lib, budget := map[string][]float64{}, map[string][]float64{}
						twin := realScenario(t, name).Duration
						for _, seed := range twinSeeds {
							// Cut to the twin's length: a session's first
							// seconds do not depend on its end.
							sc := *libraryScenario(t, lt.scenario)
							sc.Seed, sc.Duration, sc.Expect = seed, twin, nil
							collectTo(t, lib, runReal(t, &sc), twin)
							// What the library's other scenarios have, logged
							// for docs/policies.md: the budget's sizes.
							sc.Agent.FrameSizes = "budget"
							collectTo(t, budget, runReal(t, &sc), twin)
						}
						judgeTwin(t, name, "library "+lt.scenario, real, lib, nil, lt.mixtures)
						for _, fig := range twinFigures {
							t.Logf("%-15s with the budget's sizes, not judged: %s", fig, figures(budget[fig]))
						}
					})
				}
			})
		}
	}
}

// judgeTwin requires each of the runs of who (the model, or a library
// scenario: model, by figure, a value a seed of twinSeeds) within the
// twin's real runs' spread (real) widened by the bound rule: the figures
// known (name/figure) are logged, not judged, and the mixtures
// (name/figure) are judged by the median of the runs over the seeds.
func judgeTwin(t *testing.T, name, who string, real, model map[string][]float64, known, mixtures map[string]string) {
	t.Helper()
	for _, fig := range twinFigures {
		lo, hi := ruleBand(real[fig])
		if fig == "damaged.time" {
			hi += twinDamageSlack
		}
		t.Logf("%-15s real %s, band [%.3g, %.3g]; %s %s", fig, figures(real[fig]), lo, hi, who, figures(model[fig]))
		if why, ok := known[name+"/"+fig]; ok {
			t.Logf("%-15s not judged, a known difference: %s", fig, why)
			continue
		}
		if why, ok := mixtures[name+"/"+fig]; ok {
			if m := quantile.Median(model[fig]); m < lo || m > hi {
				t.Errorf("%s: the median of the %s's %s over the seeds is %.3g, outside the real runs' spread %s widened by the bound rule to [%.3g, %.3g] (two outcomes a seed: %s)",
					name, who, fig, m, figures(real[fig]), lo, hi, why)
			}
			continue
		}
		for i, v := range model[fig] {
			if v < lo || v > hi {
				t.Errorf("%s: the %s's %s at seed %d is %.3g, outside the real runs' spread %s widened by the bound rule to [%.3g, %.3g]",
					name, who, fig, twinSeeds[i], v, figures(real[fig]), lo, hi)
			}
		}
	}
}

// collect measures a run's twinFigures from 1 s to its end.
func collect(t *testing.T, into map[string][]float64, r *result.Run) {
	t.Helper()
	collectTo(t, into, r, 0)
}

// collectTo measures a run's twinFigures from 1 s to to (0: its end): a
// library scenario longer than its twin over the twin's length.
func collectTo(t *testing.T, into map[string][]float64, r *result.Run, to time.Duration) {
	t.Helper()
	for _, fig := range twinFigures {
		v, err := measure.Of(r, fig, time.Second, to)
		require.NoError(t, err, fig)
		into[fig] = append(into[fig], v)
	}
}

// ruleBand is the runs' spread widened by the bound rule of
// docs/testing.md at each end: the lowest run divided by sqrt 2, the
// highest multiplied by it, what the rule gives a figure with no spread.
// (The rule's band for setting a bound, sqrt(low x high / 2) to sqrt(high
// x 2 x low), lies inside a spread wider than 2x, and three real runs are
// too few to set a bound by: a model run a few percent outside the
// narrower band failed one run in three.)
func ruleBand(runs []float64) (lo, hi float64) {
	return slices.Min(runs) / math.Sqrt2, slices.Max(runs) * math.Sqrt2
}

// figures writes runs for a log line.
func figures(runs []float64) string {
	parts := make([]string, len(runs))
	for i, v := range runs {
		parts[i] = fmt.Sprintf("%.3g", v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
