package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func normal(r *rand.Rand, n int, mean, sd float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = mean + sd*r.NormFloat64()
	}
	return out
}

// Quantiles are nearest-rank, as lab.Measure computes them.
func TestQuantileIsNearestRank(t *testing.T) {
	x := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	require.Equal(t, 5.0, Quantile(x, 0.5), "the median of an even count is the lower middle value")
	require.Equal(t, 9.0, Quantile(x, 0.9))
	require.Equal(t, 10.0, Quantile(x, 0.95))
	require.Equal(t, 1.0, Quantile(x, 0))
	require.Equal(t, 10.0, x[0], "x is not sorted in place")
}

func TestDownsampleKeepsTheDistribution(t *testing.T) {
	x := make([]float64, 1000)
	for i := range x {
		x[i] = float64(1000 - i)
	}
	d := Downsample(x, 200)
	require.Len(t, d, 200)
	require.Equal(t, 3.0, d[0], "the first of 200 quantiles is at 0.25%")
	require.Equal(t, 998.0, d[199])
	require.InDelta(t, Quantile(x, 0.5), Quantile(d, 0.5), 5)
	require.InDelta(t, Quantile(x, 0.95), Quantile(d, 0.95), 5)
	require.Equal(t, []float64{1, 2, 3}, Downsample([]float64{3, 1, 2}, 200), "fewer values than quantiles: all of them, sorted")
}

// The 95% interval of the median covers the true median about 95% of the
// time.
func TestMedianCICoverage(t *testing.T) {
	r := rng(1)
	covered := 0
	const trials = 200
	for range trials {
		e, err := MedianCI(normal(r, 101, 50, 10), 0.95, 500, r)
		require.NoError(t, err)
		require.LessOrEqual(t, e.CI.Lo, e.Value)
		require.GreaterOrEqual(t, e.CI.Hi, e.Value)
		if e.CI.Contains(50) {
			covered++
		}
	}
	require.InDelta(t, 0.95, float64(covered)/trials, 0.04, "coverage %d/%d", covered, trials)
}

func TestMedianDiffIdenticalContainsZero(t *testing.T) {
	r := rng(2)
	runs := [][]float64{normal(r, 200, 40, 5), normal(r, 200, 40, 5), normal(r, 200, 40, 5)}
	e, err := MedianDiff(runs, runs, 0.95, 1000, r)
	require.NoError(t, err)
	require.Equal(t, 0.0, e.Value)
	require.True(t, e.CI.Contains(0), "%+v", e)
	require.Equal(t, 0.95, e.CI.Level)
}

func TestMedianDiffShiftExcludesZero(t *testing.T) {
	r := rng(3)
	var a, b [][]float64
	for range 3 {
		a = append(a, normal(r, 200, 40, 5))
		b = append(b, normal(r, 200, 45, 5))
	}
	e, err := MedianDiff(a, b, 0.95, 1000, r)
	require.NoError(t, err)
	require.InDelta(t, 5, e.Value, 1.5)
	require.False(t, e.CI.Contains(0), "%+v", e)
	require.Greater(t, e.CI.Lo, 0.0, "b is slower: the whole interval is above 0")
}

// Runs of one configuration differ from each other by more than their
// frames vary (each run its own offset): resampling runs first keeps the
// interval from calling two sets of such runs different, where resampling
// pooled frames alone almost always does.
func TestMedianDiffAccountsForRunToRunNoise(t *testing.T) {
	r := rng(4)
	runs := func() [][]float64 {
		var out [][]float64
		for range 3 {
			out = append(out, normal(r, 100, 40+4*r.NormFloat64(), 1))
		}
		return out
	}
	const trials = 100
	twoLevel, oneLevel := 0, 0
	for range trials {
		a, b := runs(), runs()
		e, err := MedianDiff(a, b, 0.95, 300, r)
		require.NoError(t, err)
		if !e.CI.Contains(0) {
			twoLevel++
		}
		naive, err := MedianDiff([][]float64{pool(a)}, [][]float64{pool(b)}, 0.95, 300, r)
		require.NoError(t, err)
		if !naive.CI.Contains(0) {
			oneLevel++
		}
	}
	t.Logf("false alarms out of %d: two-level %d, frames only %d", trials, twoLevel, oneLevel)
	require.Greater(t, oneLevel, 70)
	require.LessOrEqual(t, twoLevel, 10, "about 5 in 100 at 95%")
}

func TestQuantileDiffP95(t *testing.T) {
	r := rng(5)
	a := [][]float64{normal(r, 400, 40, 2), normal(r, 400, 40, 2)}
	b := [][]float64{append(normal(r, 360, 40, 2), normal(r, 40, 80, 2)...), append(normal(r, 360, 40, 2), normal(r, 40, 80, 2)...)}
	med, err := MedianDiff(a, b, 0.95, 500, r)
	require.NoError(t, err)
	require.True(t, med.CI.Contains(0) || math.Abs(med.Value) < 1, "the medians hardly move: %+v", med)
	p95, err := QuantileDiff(a, b, 0.95, 0.95, 500, r)
	require.NoError(t, err)
	require.Greater(t, p95.CI.Lo, 20.0, "a slow tail moves the 95th percentile: %+v", p95)
}

func TestMeanDiff(t *testing.T) {
	r := rng(6)
	same, err := MeanDiff([]float64{60, 59.5, 60}, []float64{60, 60, 59.5}, 0.95, 1000, r)
	require.NoError(t, err)
	require.True(t, same.CI.Contains(0), "%+v", same)
	worse, err := MeanDiff([]float64{60, 59.5, 60}, []float64{48, 49, 48.5}, 0.95, 1000, r)
	require.NoError(t, err)
	require.InDelta(t, -11.33, worse.Value, 0.01)
	require.Less(t, worse.CI.Hi, 0.0)
}

// Per-run figures of three runs a side from one configuration: the
// corrected interval excludes 0 about 5 times in 100.
func TestMeanDiffFewRunsFalseAlarms(t *testing.T) {
	r := rng(10)
	alarms := 0
	const trials = 400
	for range trials {
		e, err := MeanDiff(normal(r, 3, 40, 5), normal(r, 3, 40, 5), 0.95, 400, r)
		require.NoError(t, err)
		if !e.CI.Contains(0) {
			alarms++
		}
	}
	t.Logf("false alarms: %d of %d", alarms, trials)
	require.Less(t, alarms, 40)
}

func TestBootstrapIsSeeded(t *testing.T) {
	x := normal(rng(7), 300, 10, 3)
	a, err := MedianCI(x, 0.9, 300, rng(8))
	require.NoError(t, err)
	b, err := MedianCI(x, 0.9, 300, rng(8))
	require.NoError(t, err)
	require.Equal(t, a, b)
}

func TestBootstrapErrors(t *testing.T) {
	_, err := MedianCI(nil, 0.95, 100, rng(1))
	require.ErrorIs(t, err, ErrEmpty)
	_, err = MedianDiff([][]float64{{1}}, [][]float64{{}, nil}, 0.95, 100, rng(1))
	require.ErrorIs(t, err, ErrEmpty)
	_, err = MeanDiff(nil, []float64{1}, 0.95, 100, rng(1))
	require.ErrorIs(t, err, ErrEmpty)
	_, err = MedianCI([]float64{1}, 95, 100, rng(1))
	require.ErrorContains(t, err, "confidence level 95 out of range")
	_, err = MedianCI([]float64{1}, 0.95, 0, rng(1))
	require.ErrorContains(t, err, "0 bootstrap iterations")
	_, err = MedianCI([]float64{1}, 0.95, 10, nil)
	require.ErrorContains(t, err, "seeded")
}

// The textbook critical values of the Kolmogorov distribution: √n·D above
// 1.224, 1.358, 1.628 and 1.949 has probability 10%, 5%, 1% and 0.1%.
func TestKolmogorovQCriticalValues(t *testing.T) {
	for _, c := range []struct{ lambda, q float64 }{
		{1.2238, 0.10}, {1.3581, 0.05}, {1.6276, 0.01}, {1.9495, 0.001},
		{0.5, 0.96394524}, {1.0, 0.26999967},
	} {
		require.InDelta(t, c.q, KolmogorovQ(c.lambda), c.q*1e-3, "λ=%v", c.lambda)
	}
	require.InDelta(t, KolmogorovQ(1.18-1e-12), KolmogorovQ(1.18), 1e-11, "the two series meet")
	require.Equal(t, 1.0, KolmogorovQ(0))
	require.Less(t, KolmogorovQ(5), 1e-20)
}

func TestKS(t *testing.T) {
	// F_a - F_b is largest at 2: half of a, none of b.
	d, p := KS([]float64{4, 1, 3, 2}, []float64{3, 4, 5, 6})
	require.Equal(t, 0.5, d)
	// n = 4·4/8 = 2, λ = (√2 + 0.12 + 0.11/√2)·0.5 = 0.80600
	require.InDelta(t, KolmogorovQ(0.80600), p, 1e-4)
	require.InDelta(t, 0.534, p, 0.001)

	d, p = KS([]float64{1, 2, 3}, []float64{1, 2, 3})
	require.Equal(t, 0.0, d)
	require.Equal(t, 1.0, p)

	r := rng(9)
	d, p = KS(normal(r, 500, 0, 1), normal(r, 500, 0, 1))
	require.Less(t, d, 0.1)
	require.Greater(t, p, 0.05)
	_, p = KS(normal(r, 500, 0, 1), normal(r, 500, 0.5, 1))
	require.Less(t, p, 1e-6)

	d, p = KS(nil, nil)
	require.Equal(t, 0.0, d)
	require.Equal(t, 1.0, p)
	d, p = KS(nil, []float64{1})
	require.Equal(t, 1.0, d)
	require.True(t, math.IsNaN(p))
}

func pool(runs [][]float64) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r...)
	}
	return out
}
