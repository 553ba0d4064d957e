package quantile

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
)

func TestNearestRank(t *testing.T) {
	v := []time.Duration{10, 20, 30, 40}
	require.Equal(t, time.Duration(10), Nearest(v, 0))
	require.Equal(t, time.Duration(20), Nearest(v, 0.5), "the lower middle of an even count")
	require.Equal(t, time.Duration(30), Nearest(v, 0.51))
	require.Equal(t, time.Duration(40), Nearest(v, 1))
	require.Equal(t, time.Duration(20), Median([]time.Duration{40, 10, 30, 20}))
	require.Equal(t, 0.0, Median([]float64(nil)))
}

// 0.07 x 100 is a hair above 7 in floating point (7.000000000000001), and
// 0.07 x 200 above 14; the tolerance keeps the 7th and 14th values, not the
// 8th and 15th.
func TestToleranceOnTheRank(t *testing.T) {
	v := make([]float64, 200)
	for i := range v {
		v[i] = float64(i + 1)
	}
	require.Greater(t, 0.07*float64(len(v)/2), 7.0, "the case the tolerance is for")
	require.Equal(t, 7.0, Nearest(v[:100], 0.07))
	require.Equal(t, 14.0, Nearest(v, 0.07))
	require.Equal(t, 95.0, Nearest(v[:100], 0.95))
	// Larger counts put p x n further from the whole number: 0.14 x 136 550
	// is 19117.000000000004, which a tolerance of 1e-12 would not absorb.
	w := make([]float64, 136_550)
	for i := range w {
		w[i] = float64(i + 1)
	}
	require.Equal(t, 19117.0, Nearest(w, 0.14))
}

// The definition is gonum's empirical quantile wherever p x n is not
// within the tolerance of a whole number.
func TestAgreesWithGonum(t *testing.T) {
	for n := 1; n <= 60; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i * i)
		}
		for _, p := range []float64{0, 0.1, 0.25, 0.33, 0.5, 0.9, 0.95, 0.99, 1} {
			if x := p * float64(n); x != float64(int(x)) {
				require.Equal(t, stat.Quantile(p, stat.Empirical, v, nil), Nearest(v, p), "n %d p %v", n, p)
			}
		}
	}
}
