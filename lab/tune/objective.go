package tune

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/lab/sweep"
)

// Weights are the objective's exchange rates, in milliseconds of latency
// p95: what a percent of bitrate and a freeze per minute are worth.
type Weights struct {
	// Bitrate is the ms a percent of bitrate below the write-up's values
	// costs (and a percent above saves).
	Bitrate float64 `json:"bitrate_ms_per_percent"`
	// Freeze is the ms a freeze per minute costs.
	Freeze float64 `json:"freeze_ms_per_per_minute"`
}

// DefaultWeights: 10% less bitrate is worth 50 ms of p95, and a freeze a
// minute 5 ms. Over the default sweep grid's 72 points (native, seeds
// 1-3) the points' p95 spread by 60 ms (standard deviation), their
// bitrate against the write-up's values by 7.8 percentage points and
// their freezes by 12 a minute: at these rates each term moves a score
// about as much as the others.
var DefaultWeights = Weights{Bitrate: 5, Freeze: 5}

// Describe says the objective in words, with its weights.
func (w Weights) Describe() string {
	return fmt.Sprintf("score = latency p95 (ms) + %s ms x bitrate below the write-up's values on the same session (%%; a percent above takes as much off) + %s ms x freezes per minute, "+
		"averaged over the sessions, each scenario and seed alike; lower is better",
		trim(w.Bitrate), trim(w.Freeze))
}

func trim(v float64) string { return fmt.Sprintf("%g", v) }

// Figures are a candidate's means over a set of sessions.
type Figures struct {
	// Score is the objective (Weights.Describe); +Inf when a session
	// failed or lacked a figure (Missing says which and why).
	Score float64 `json:"score"`
	// P95 is latency p95 in ms; Bitrate the bitrate below the write-up's
	// values in percent (negative: above); Freezes per minute.
	P95      float64 `json:"p95_ms"`
	Bitrate  float64 `json:"bitrate_below_percent"`
	Freezes  float64 `json:"freezes_per_minute"`
	Sessions int     `json:"sessions"`
	Missing  string  `json:"missing,omitempty"`
}

// key names a session: a scenario under a seed.
type key struct {
	scenario string
	seed     uint64
}

// sessionFigures are one session's terms of the objective.
type sessionFigures struct {
	p95, below, freezes float64
	missing             string
}

// figuresOf reads one session's terms, its bitrate against ref's (the
// write-up's values on the same scenario and seed).
func figuresOf(run, ref sweep.RunResult, warmup time.Duration) sessionFigures {
	var f sessionFigures
	switch {
	case run.Error != "":
		f.missing = fmt.Sprintf("%s seed %d failed: %s", run.Scenario, run.Seed, run.Error)
		return f
	case ref.Error != "":
		f.missing = fmt.Sprintf("%s seed %d failed at the write-up's values: %s", run.Scenario, run.Seed, ref.Error)
		return f
	}
	p95, ok1 := run.Measures["latency.p95"]
	b, ok2 := run.Measures["bitrate.mean"]
	fr, ok3 := run.Measures["freezes"]
	rb, ok4 := ref.Measures["bitrate.mean"]
	measured := (run.Ran - warmup).Minutes()
	switch {
	case !ok1 || !ok2 || !ok3:
		f.missing = fmt.Sprintf("%s seed %d: %v", run.Scenario, run.Seed, run.Missing)
		return f
	case !ok4 || rb <= 0:
		f.missing = fmt.Sprintf("%s seed %d: no bitrate at the write-up's values", run.Scenario, run.Seed)
		return f
	case measured <= 0:
		f.missing = fmt.Sprintf("%s seed %d: ran %s, no longer than the warm-up", run.Scenario, run.Seed, run.Ran)
		return f
	}
	f.p95 = p95 * 1e3
	f.below = 100 * (1 - b/rb)
	f.freezes = fr / measured
	return f
}

// score averages the sessions' figures. Sessions are summed in the order
// given, so the same sessions give the same bits.
func (w Weights) score(fs []sessionFigures) Figures {
	out := Figures{Sessions: len(fs)}
	if len(fs) == 0 {
		out.Score = math.Inf(1)
		out.Missing = "no sessions"
		return out
	}
	for _, f := range fs {
		if f.missing != "" {
			out.Score = math.Inf(1)
			out.Missing = f.missing
			return out
		}
		out.P95 += f.p95
		out.Bitrate += f.below
		out.Freezes += f.freezes
	}
	n := float64(len(fs))
	out.P95 /= n
	out.Bitrate /= n
	out.Freezes /= n
	out.Score = out.P95 + w.Bitrate*out.Bitrate + w.Freeze*out.Freezes
	return out
}

// sessionSet picks sessions by scenario and seed.
type sessionSet func(key) bool

// figures scores a row's sessions that are in the set against the
// reference's (the write-up's row of a table with the same sessions).
func (w Weights) figures(row, ref sweep.Row, in sessionSet, warmup time.Duration) Figures {
	refs := map[key]sweep.RunResult{}
	for _, r := range ref.Runs {
		refs[key{r.Scenario, r.Seed}] = r
	}
	var fs []sessionFigures
	for _, r := range row.Runs {
		k := key{r.Scenario, r.Seed}
		if !in(k) {
			continue
		}
		rr, ok := refs[k]
		if !ok {
			fs = append(fs, sessionFigures{missing: fmt.Sprintf("%s seed %d: the write-up's values did not run it", r.Scenario, r.Seed)})
			continue
		}
		fs = append(fs, figuresOf(r, rr, warmup))
	}
	return w.score(fs)
}

// inSets is the session set of the scenarios and seeds given (an empty
// seed list: any seed).
func inSets(scs []string, seeds []uint64) sessionSet {
	return func(k key) bool {
		return slices.Contains(scs, k.scenario) && (len(seeds) == 0 || slices.Contains(seeds, k.seed))
	}
}
