// Package stats owns the statistics of the lab's reports: quantiles,
// bootstrap confidence intervals of medians and percentiles, the
// difference of two configurations' medians with a confidence interval
// that accounts for run-to-run noise, and the two-sample
// Kolmogorov-Smirnov test.
//
// Quantiles are internal/quantile's nearest rank, the definition the lab's
// own measurements use (package lab/measure), so a median here is the
// median a scenario's expectation bounds; weighted bootstrap samples use
// gonum's stat.Empirical, the same rank with weights.
//
// Every random draw comes from the *rand.Rand the caller passes: the same
// seed gives the same interval, so a report can be regenerated exactly.
package stats

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/nuvirahub/latencylab/internal/quantile"
)

// ErrEmpty is returned when a statistic has no data to be computed from.
var ErrEmpty = errors.New("stats: no data")

// Interval is a confidence interval [Lo, Hi] at a confidence Level (0.95
// for 95%).
type Interval struct {
	Lo, Hi, Level float64
}

// Contains tells whether v lies in the interval, bounds included.
func (i Interval) Contains(v float64) bool { return v >= i.Lo && v <= i.Hi }

// Estimate is a statistic computed from the data as given, and the
// bootstrap confidence interval around it.
type Estimate struct {
	Value float64
	CI    Interval
}

// Sorted returns a sorted copy of x.
func Sorted(x []float64) []float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s
}

// Quantile is the nearest-rank q-quantile of x (x need not be sorted): the
// smallest value with at least a fraction q of the values at or below it,
// by internal/quantile's one definition. It panics on an empty x.
func Quantile(x []float64, q float64) float64 {
	if !slices.IsSorted(x) {
		x = Sorted(x)
	}
	return quantile.Nearest(x, q)
}

// Downsample summarises a distribution by n quantiles evenly spaced in
// probability, at (i+0.5)/n for i = 0..n-1: a sample of n values whose
// empirical distribution follows x's. It is how a baseline keeps a run's
// latency distribution in a few kilobytes. It returns x sorted when x has
// n values or fewer, since fewer values cannot be spread thinner.
func Downsample(x []float64, n int) []float64 {
	s := Sorted(x)
	if len(s) <= n {
		return s
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = stat.Quantile((float64(i)+0.5)/float64(n), stat.Empirical, s, nil)
	}
	return out
}

// check validates a bootstrap's parameters: they are the caller's
// constants, so a wrong one is reported rather than silently corrected.
func check(level float64, iters int, rng *rand.Rand) error {
	switch {
	case !(level > 0 && level < 1):
		return fmt.Errorf("stats: confidence level %v out of range: expected a fraction between 0 and 1", level)
	case iters < 1:
		return fmt.Errorf("stats: %d bootstrap iterations: expected at least 1", iters)
	case rng == nil:
		return errors.New("stats: no random source: pass a seeded *rand.Rand")
	}
	return nil
}

// percentileCI is the percentile bootstrap interval of the replicates: the
// (1-level)/2 and (1+level)/2 quantiles of their distribution. It sorts
// reps.
func percentileCI(reps []float64, level float64) Interval {
	slices.Sort(reps)
	alpha := (1 - level) / 2
	return Interval{
		Lo:    stat.Quantile(alpha, stat.Empirical, reps, nil),
		Hi:    stat.Quantile(1-alpha, stat.Empirical, reps, nil),
		Level: level,
	}
}
