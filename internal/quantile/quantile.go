// Package quantile is the one definition of a quantile the lab measures
// with: the nearest rank. The p-quantile of n values is the smallest value
// with at least a fraction p of them at or below it, so it is always one
// of the values, and the median of an even count is the lower middle. The
// summary of a run, its measurements, the report's plots, the stage
// breakdown, the nightly's statistics and the codec benchmark all use it,
// so two of them never disagree on the same frames.
//
// It is gonum's stat.Empirical quantile (which reports/stats uses for
// weighted bootstrap samples) with one difference: a tolerance of 1e-9 on
// p x n, so that 0.07 x 100 in floating point (7.000000000000001) picks
// the 7th value, not the 8th.
//
// The viewer's own 250 ms reports are not measured with it: they compute
// what the product computes (viewer/report.go).
package quantile

import (
	"math"
	"slices"
)

// Number is what a quantile is taken of: durations, counts, rates.
type Number interface {
	~int | ~int64 | ~float64
}

// Nearest is the nearest-rank p-quantile of sorted values (ascending); p 0
// is the minimum and p 1 the maximum. It panics on no values: a caller
// decides what an empty window means.
func Nearest[T Number](sorted []T, p float64) T {
	i := int(math.Ceil(p*float64(len(sorted))-1e-9)) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Median is the nearest-rank median of values in any order (the lower
// middle of an even count), or 0 for none. values is not changed.
func Median[T Number](values []T) T {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return Nearest(s, 0.5)
}
