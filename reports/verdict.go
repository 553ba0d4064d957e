package reports

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/reports/stats"
)

// Outcome is a verdict's conclusion.
type Outcome string

// Outcomes of a comparison.
const (
	Regression  Outcome = "regression"
	Improvement Outcome = "improvement"
	Unchanged   Outcome = "unchanged"
	// NoData: one side has no value to compare (no frame displayed).
	NoData Outcome = "no data"
)

// Metric is a figure the comparison judges, and the smallest change of it
// that matters in practice.
type Metric struct {
	// Name is the measurement's name in scenarios.Measurements.
	Name string
	// Unit is how reports print it: "ms", "fps" or "" for a count.
	Unit string
	// HigherIsWorse says which way a regression goes.
	HigherIsWorse bool
	// Quantile, for a latency metric, is the quantile of the frames'
	// latency; 0 for a per-run figure, which Value reads.
	Quantile float64
	Value    func(Evidence) float64
	// MinAbs and MinRel make the practical minimum: a change counts only
	// when it is at least max(MinAbs, MinRel × the baseline's value).
	MinAbs, MinRel float64
}

// Latency is a latency metric: frames' latency in milliseconds.
func (m Metric) Latency() bool { return m.Quantile > 0 }

// Metrics are the figures the nightly and the comparisons judge. The
// practical minima are what an engineer would act on: 2 ms or 5% of
// latency (N2's 40 ms budget leaves no room for less to matter), 1 frame
// per second or 5%, 2 freezes or 25% (a count of rare events moves by one
// on a different seed).
var Metrics = []Metric{
	{Name: "latency.median", Unit: "ms", HigherIsWorse: true, Quantile: 0.5, MinAbs: 2, MinRel: 0.05},
	{Name: "latency.p95", Unit: "ms", HigherIsWorse: true, Quantile: 0.95, MinAbs: 2, MinRel: 0.05},
	{Name: "fps", Unit: "fps", Value: func(e Evidence) float64 { return e.FPS }, MinAbs: 1, MinRel: 0.05},
	{Name: "freezes", HigherIsWorse: true, Value: func(e Evidence) float64 { return float64(e.Freezes) }, MinAbs: 2, MinRel: 0.25},
}

// Options tune a comparison; the zero value is the nightly's.
type Options struct {
	// Level is the confidence level of the intervals (default 0.95).
	Level float64
	// Iters is the number of bootstrap replicates (default 2000).
	Iters int
	// Seed seeds the bootstrap (default 1); each scenario and metric
	// derives its own source from it, so a verdict does not depend on
	// which others were computed before it.
	Seed uint64
}

func (o Options) withDefaults() Options {
	if o.Level == 0 {
		o.Level = 0.95
	}
	if o.Iters == 0 {
		o.Iters = 2000
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// Verdict is one metric of one scenario compared between a baseline (A)
// and new runs (B), with the evidence.
type Verdict struct {
	// Scenario and Metric are what was compared; Outcome is the Rule's
	// conclusion.
	Scenario string
	Metric   Metric
	Outcome  Outcome
	// A and B are each side's value (a latency quantile over the runs'
	// frames pooled, or the mean of a per-run figure) with its bootstrap
	// interval over runs; RunsA and RunsB count the runs.
	A, B         stats.Estimate
	RunsA, RunsB int
	// Diff is B - A with its two-level bootstrap interval.
	Diff stats.Estimate
	// MinChange is the practical minimum the difference had to reach.
	MinChange float64
	// KSD and KSP are the Kolmogorov-Smirnov test of the two latency
	// distributions pooled (latency metrics only; NaN otherwise). They
	// are shown, not used: pooling frames ignores run-to-run noise.
	KSD, KSP float64
	// Note says why there is no data, when there is none.
	Note string
}

// Rule is the regression rule in a sentence, for reports.
//
// Why both conditions. The lab's runs are not bit-repeatable: another seed
// changes every random decision of the network, and even the same seed
// does not give the same frames, because when several of quic-go's
// goroutines are ready at the same virtual instant the runtime picks one
// at random (docs/determinism.md). A threshold on one number would flag
// that noise on noisy scenarios and miss real changes on quiet ones. The
// interval measures the noise where it is, from the runs themselves: it
// resamples runs, then frames within each (stats.QuantileDiff), and is
// widened for the handful of runs a nightly has (stats' fewRuns), so a
// difference two sets of runs of one configuration would show does not
// exclude 0. The practical minimum stops the opposite mistake: a scenario
// whose runs are nearly identical (a LAN without loss) gives an interval
// a few microseconds wide, which excludes 0 for a change nobody could
// perceive or act on; 2 ms or 5% is the smallest latency change that
// matters against N2's 40 ms. The KS test is shown beside them, not used:
// it counts frames as independent draws and calls almost any two runs
// different.
const Rule = "A metric regressed (or improved) only when both hold: the bootstrap confidence interval of the difference, " +
	"which resamples runs before frames, excludes 0, and the difference is at least the practical minimum: " +
	"max(2 ms, 5%) for latency, max(1 fps, 5%) for fps, max(2, 25%) for freezes, of the baseline's value."

// Compare judges every metric of one scenario: base are the baseline's
// runs (A), cur the new ones (B).
func Compare(scenario string, base, cur []Evidence, o Options) []Verdict {
	o = o.withDefaults()
	var out []Verdict
	for _, m := range Metrics {
		out = append(out, compareMetric(scenario, m, base, cur, o))
	}
	return out
}

// rngFor derives the bootstrap's source of one scenario and metric.
func rngFor(seed uint64, scenario, metric string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(scenario + "\x00" + metric))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func compareMetric(scenario string, m Metric, base, cur []Evidence, o Options) Verdict {
	v := Verdict{Scenario: scenario, Metric: m, RunsA: len(base), RunsB: len(cur), KSD: math.NaN(), KSP: math.NaN()}
	rng := rngFor(o.Seed, scenario, m.Name)
	var err error
	if m.Latency() {
		a, b := latencyRuns(base), latencyRuns(cur)
		if v.A, err = stats.RunsQuantileCI(a, m.Quantile, o.Level, o.Iters, rng); err == nil {
			if v.B, err = stats.RunsQuantileCI(b, m.Quantile, o.Level, o.Iters, rng); err == nil {
				v.Diff, err = stats.QuantileDiff(a, b, m.Quantile, o.Level, o.Iters, rng)
			}
		}
		if err == nil {
			v.KSD, v.KSP = stats.KS(flatten(a), flatten(b))
		}
	} else {
		a, b := perRun(base, m.Value), perRun(cur, m.Value)
		if v.A, err = stats.MeanCI(a, o.Level, o.Iters, rng); err == nil {
			if v.B, err = stats.MeanCI(b, o.Level, o.Iters, rng); err == nil {
				v.Diff, err = stats.MeanDiff(a, b, o.Level, o.Iters, rng)
			}
		}
	}
	if err != nil {
		v.Outcome, v.Note = NoData, noDataNote(base, cur)
		return v
	}
	// Every metric is at least 0; the small-sample widening of an
	// interval may not say otherwise.
	v.A.CI.Lo, v.B.CI.Lo = max(0, v.A.CI.Lo), max(0, v.B.CI.Lo)
	v.MinChange = max(m.MinAbs, m.MinRel*math.Abs(v.A.Value))
	v.Outcome = judge(m, v.Diff, v.MinChange)
	return v
}

// judge applies Rule.
func judge(m Metric, diff stats.Estimate, minChange float64) Outcome {
	if diff.CI.Contains(0) || math.Abs(diff.Value) < minChange {
		return Unchanged
	}
	if (diff.Value > 0) == m.HigherIsWorse {
		return Regression
	}
	return Improvement
}

func noDataNote(base, cur []Evidence) string {
	switch {
	case len(base) == 0:
		return "no baseline runs"
	case len(cur) == 0:
		return "no new runs"
	}
	return "no frame displayed on one side"
}

// latencyRuns are the runs' latency quantiles in milliseconds.
func latencyRuns(ev []Evidence) [][]float64 {
	out := make([][]float64, 0, len(ev))
	for _, e := range ev {
		ms := make([]float64, len(e.Latency))
		for i, d := range e.Latency {
			ms[i] = float64(d) / float64(time.Millisecond)
		}
		out = append(out, ms)
	}
	return out
}

func perRun(ev []Evidence, f func(Evidence) float64) []float64 {
	out := make([]float64, 0, len(ev))
	for _, e := range ev {
		out = append(out, f(e))
	}
	return out
}

func flatten(runs [][]float64) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}

// Format writes a value in the metric's unit.
func (m Metric) Format(v float64) string {
	switch m.Unit {
	case "ms":
		return fmt.Sprintf("%.1f ms", v)
	case "fps":
		return fmt.Sprintf("%.1f fps", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// FormatSigned writes a difference with its sign.
func (m Metric) FormatSigned(v float64) string {
	s := m.Format(v)
	if v >= 0 {
		s = "+" + s
	}
	return s
}

// Evidence is the verdict's evidence in a line: both sides with their
// intervals, the difference with its interval against the practical
// minimum, and the KS test for a latency metric.
func (v Verdict) Evidence() string {
	if v.Outcome == NoData {
		return v.Note
	}
	m := v.Metric
	pct := fmt.Sprintf("%.0f%%", 100*v.Diff.CI.Level)
	var b strings.Builder
	fmt.Fprintf(&b, "baseline %s [%s, %s] (%d runs) -> new %s [%s, %s] (%d runs); difference %s, %s CI [%s, %s], practical minimum %s",
		m.Format(v.A.Value), m.Format(v.A.CI.Lo), m.Format(v.A.CI.Hi), v.RunsA,
		m.Format(v.B.Value), m.Format(v.B.CI.Lo), m.Format(v.B.CI.Hi), v.RunsB,
		m.FormatSigned(v.Diff.Value), pct, m.FormatSigned(v.Diff.CI.Lo), m.FormatSigned(v.Diff.CI.Hi), m.Format(v.MinChange))
	if m.Latency() {
		fmt.Fprintf(&b, "; KS D %.3f, p %s", v.KSD, FormatP(v.KSP))
	}
	return b.String()
}

// FormatP writes a p-value; one too small for a float64 is written as a
// bound rather than as 0, which no test can give.
func FormatP(p float64) string {
	if p < 1e-300 {
		return "< 1e-300"
	}
	return fmt.Sprintf("%.2g", p)
}

// String is the verdict in a line: scenario, metric, outcome, evidence.
func (v Verdict) String() string {
	return fmt.Sprintf("%s %s: %s: %s", v.Scenario, v.Metric.Name, v.Outcome, v.Evidence())
}
