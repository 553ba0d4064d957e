package stats

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// QuantileCI is the q-quantile of x with its percentile bootstrap
// confidence interval: iters resamples of x with replacement, the
// quantile of each, and the central fraction level of their distribution.
//
// It treats x's values as independent draws. Frames of one session are
// not (a queue raises the latency of many frames in a row), so this
// interval describes one run; to compare configurations across runs use
// QuantileDiff, which resamples runs first.
func QuantileCI(x []float64, q, level float64, iters int, rng *rand.Rand) (Estimate, error) {
	return RunsQuantileCI([][]float64{x}, q, level, iters, rng)
}

// MedianCI is QuantileCI of the median.
func MedianCI(x []float64, level float64, iters int, rng *rand.Rand) (Estimate, error) {
	return QuantileCI(x, 0.5, level, iters, rng)
}

// RunsQuantileCI is the q-quantile of several runs' samples pooled, with a
// two-level bootstrap interval: each replicate draws as many runs as there
// are, with replacement, then draws each drawn run's samples with
// replacement, and pools them. The first level is what makes the interval
// honest about run-to-run noise: seeds change the network's random
// decisions (and, in a native session, the Go runtime's scheduling is not
// a function of the seed), so two runs of one configuration differ by
// more than the frames of one run vary around their own median. Runs without samples are left out.
//
// A nightly has a handful of runs, and a bootstrap over few runs is too
// narrow; the interval is corrected for that (see fewRuns).
func RunsQuantileCI(runs [][]float64, q, level float64, iters int, rng *rand.Rand) (Estimate, error) {
	if err := check(level, iters, rng); err != nil {
		return Estimate{}, err
	}
	runs = nonEmpty(runs)
	if len(runs) == 0 {
		return Estimate{}, ErrEmpty
	}
	p := newPooled(runs)
	value := p.quantile(q)
	f := fewRuns{len(runs)}
	reps := make([]float64, iters)
	for i := range reps {
		p.resample(rng)
		reps[i] = f.deviate(value, p.quantile(q))
	}
	return Estimate{Value: value, CI: widen(percentileCI(reps, level), tScale(f.df(), level))}, nil
}

// QuantileDiff is the difference of the q-quantiles of two
// configurations, b's minus a's, each the quantile of its runs' samples
// pooled, with a two-level bootstrap interval (see RunsQuantileCI): each
// replicate resamples a's runs and b's runs independently, runs first,
// then samples within each run. An interval that excludes 0 says the
// difference is larger than two sets of runs of the same configuration
// would show.
func QuantileDiff(a, b [][]float64, q, level float64, iters int, rng *rand.Rand) (Estimate, error) {
	if err := check(level, iters, rng); err != nil {
		return Estimate{}, err
	}
	a, b = nonEmpty(a), nonEmpty(b)
	if len(a) == 0 || len(b) == 0 {
		return Estimate{}, ErrEmpty
	}
	pa, pb := newPooled(a), newPooled(b)
	va, vb := pa.quantile(q), pb.quantile(q)
	fa, fb := fewRuns{len(a)}, fewRuns{len(b)}
	reps := make([]float64, iters)
	for i := range reps {
		pa.resample(rng)
		pb.resample(rng)
		reps[i] = fb.deviate(vb, pb.quantile(q)) - fa.deviate(va, pa.quantile(q))
	}
	return Estimate{Value: vb - va, CI: widen(percentileCI(reps, level), tScale(fa.df()+fb.df(), level))}, nil
}

// MedianDiff is QuantileDiff of the median: b's median minus a's.
func MedianDiff(a, b [][]float64, level float64, iters int, rng *rand.Rand) (Estimate, error) {
	return QuantileDiff(a, b, 0.5, level, iters, rng)
}

// MeanDiff is the difference of the means of two sets of per-run figures
// (frames per second, freezes: one number a run), b's minus a's, with a
// bootstrap interval that resamples the runs of each side, corrected for
// few runs (see fewRuns).
func MeanDiff(a, b []float64, level float64, iters int, rng *rand.Rand) (Estimate, error) {
	if err := check(level, iters, rng); err != nil {
		return Estimate{}, err
	}
	if len(a) == 0 || len(b) == 0 {
		return Estimate{}, ErrEmpty
	}
	ma, mb := mean(a), mean(b)
	fa, fb := fewRuns{len(a)}, fewRuns{len(b)}
	reps := make([]float64, iters)
	for i := range reps {
		reps[i] = fb.deviate(mb, resampledMean(b, rng)) - fa.deviate(ma, resampledMean(a, rng))
	}
	return Estimate{Value: mb - ma, CI: widen(percentileCI(reps, level), tScale(fa.df()+fb.df(), level))}, nil
}

// MeanCI is the mean of per-run figures with a bootstrap interval that
// resamples the runs, corrected for few runs (see fewRuns).
func MeanCI(x []float64, level float64, iters int, rng *rand.Rand) (Estimate, error) {
	if err := check(level, iters, rng); err != nil {
		return Estimate{}, err
	}
	if len(x) == 0 {
		return Estimate{}, ErrEmpty
	}
	m, f := mean(x), fewRuns{len(x)}
	reps := make([]float64, iters)
	for i := range reps {
		reps[i] = f.deviate(m, resampledMean(x, rng))
	}
	return Estimate{Value: m, CI: widen(percentileCI(reps, level), tScale(f.df(), level))}, nil
}

// fewRuns corrects a bootstrap over k runs, which is too narrow when k is
// small, in two ways, the same two that turn a normal interval into
// Student's t interval:
//
//   - Resampling k runs gives a spread of (k-1)/k of the runs' variance,
//     not all of it (a third too little with three runs): each replicate's
//     deviation from the estimate is stretched by √(k/(k-1)) (deviate).
//   - The spread itself is estimated from k runs: the interval is widened
//     around its middle by t/z, Student's t quantile with the runs'
//     degrees of freedom over the normal one, 1.42 for 95% with 3 runs a
//     side (tScale, widen).
//
// Without them, in the package's test of three runs against three of one
// configuration, the 95% interval of the median difference excluded 0 in
// 16 trials of 100; with them, in 5, as a 95% interval should. A single run has no run-to-run spread to correct:
// its interval is the frames' alone, and says so by its narrowness.
type fewRuns struct{ k int }

func (f fewRuns) deviate(value, rep float64) float64 {
	if f.k < 2 {
		return rep
	}
	return value + (rep-value)*math.Sqrt(float64(f.k)/float64(f.k-1))
}

func (f fewRuns) df() int { return max(0, f.k-1) }

// tScale is Student's t quantile with df degrees of freedom over the
// normal quantile, at the two-sided level; 1 without degrees of freedom.
func tScale(df int, level float64) float64 {
	if df < 1 {
		return 1
	}
	p := (1 + level) / 2
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p) / distuv.UnitNormal.Quantile(p)
}

// widen stretches an interval by f around its middle.
func widen(ci Interval, f float64) Interval {
	mid := (ci.Lo + ci.Hi) / 2
	ci.Lo, ci.Hi = mid-f*(mid-ci.Lo), mid+f*(ci.Hi-mid)
	return ci
}

func mean(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func resampledMean(x []float64, rng *rand.Rand) float64 {
	var s float64
	for range x {
		s += x[rng.IntN(len(x))]
	}
	return s / float64(len(x))
}

func nonEmpty(runs [][]float64) [][]float64 {
	var out [][]float64
	for _, r := range runs {
		if len(r) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// pooled is a set of runs' samples sorted once, with a weight per sample:
// a bootstrap replicate is a count of how often each sample was drawn, and
// its quantile is the weighted empirical quantile over the same sorted
// values (stat.Quantile with weights), so no replicate is sorted again.
type pooled struct {
	sorted []float64
	pos    [][]int // pos[run][i]: where runs[run][i] is in sorted
	w      []float64
}

func newPooled(runs [][]float64) *pooled {
	type item struct {
		v      float64
		run, i int
	}
	var items []item
	for r, run := range runs {
		for i, v := range run {
			items = append(items, item{v, r, i})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(a.v, b.v) })
	p := &pooled{sorted: make([]float64, len(items)), pos: make([][]int, len(runs)), w: make([]float64, len(items))}
	for r, run := range runs {
		p.pos[r] = make([]int, len(run))
	}
	for k, it := range items {
		p.sorted[k] = it.v
		p.pos[it.run][it.i] = k
		p.w[k] = 1
	}
	return p
}

// resample draws one two-level replicate: as many runs as there are, with
// replacement, then each drawn run's samples with replacement.
func (p *pooled) resample(rng *rand.Rand) {
	clear(p.w)
	for range p.pos {
		pos := p.pos[rng.IntN(len(p.pos))]
		for range pos {
			p.w[pos[rng.IntN(len(pos))]]++
		}
	}
}

// quantile is the current weights' nearest-rank q-quantile.
func (p *pooled) quantile(q float64) float64 {
	return stat.Quantile(q, stat.Empirical, p.sorted, p.w)
}
