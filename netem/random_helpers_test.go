package netem

// Statistical helpers for the tests of the random impairments (loss,
// gilbert, duplicate, corrupt, jitter). Every tolerance is a 99.9%
// confidence interval computed from the model, never a margin picked to let
// one seed pass. Names start with rnd so they do not clash with other tests'
// helpers.

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rndZ999 is the two-sided 99.9% quantile of the standard normal law: a
// statistic within rndZ999 standard errors of its expectation passes.
const rndZ999 = 3.2905267314919255

// rndT999Dof99 is the two-sided 99.9% quantile of Student's t law with 99
// degrees of freedom, for standard errors estimated from 100 batches.
const rndT999Dof99 = 3.392

// rndRequireWithin asserts that got lies within k standard errors se of want.
func rndRequireWithin(t testing.TB, want, se, k, got float64, what string, args ...any) {
	t.Helper()
	name := fmt.Sprintf(what, args...)
	require.Falsef(t, math.IsNaN(got), "%s is NaN", name)
	require.InDeltaf(t, want, got, k*se,
		"%s: got %.6g, want %.6g ± %.3g (%.1f standard errors of %.3g)", name, got, want, k*se, k, se)
	t.Logf("%s: got %.6g, want %.6g ± %.3g (99.9%%)", name, got, want, k*se)
}

// rndRequireProportion asserts that hits out of n is a plausible outcome of
// n independent trials of probability p: inside the 99.9% normal
// approximation of the binomial interval (fine when np and n(1-p) are in the
// hundreds, as everywhere here).
func rndRequireProportion(t testing.TB, p float64, hits, n int, what string, args ...any) {
	t.Helper()
	rndRequireWithin(t, p, math.Sqrt(p*(1-p)/float64(n)), rndZ999, float64(hits)/float64(n), what, args...)
}

// rndMoments returns the mean, the standard deviation (divided by n) and the
// lag-1 autocorrelation of xs.
func rndMoments(xs []float64) (mean, sd, lag1 float64) {
	n := float64(len(xs))
	for _, x := range xs {
		mean += x
	}
	mean /= n
	var ss, cross float64
	for i, x := range xs {
		d := x - mean
		ss += d * d
		if i > 0 {
			cross += d * (xs[i-1] - mean)
		}
	}
	return mean, math.Sqrt(ss / n), cross / ss
}

// rndBatchSE estimates the standard error of stat computed over all of xs
// from its spread over nb consecutive batches (the method of batch means):
// for a stationary sequence whose dependence dies out well within a batch,
// the batches' statistics are nearly independent, and the whole sample's
// statistic varies like their mean.
func rndBatchSE(xs []float64, nb int, stat func([]float64) float64) float64 {
	size := len(xs) / nb
	vals := make([]float64, nb)
	var mean float64
	for b := range nb {
		vals[b] = stat(xs[b*size : (b+1)*size])
		mean += vals[b]
	}
	mean /= float64(nb)
	var ss float64
	for _, v := range vals {
		ss += (v - mean) * (v - mean)
	}
	return math.Sqrt(ss / float64(nb-1) / float64(nb))
}

// rndChain is a finite Markov chain given by its transition matrix, used to
// compute the exact long-run behaviour of the loss process of a
// Gilbert-Elliott model independently of the formulas in gilbert.go.
type rndChain [][]float64

// stationary solves π P = π, Σπ = 1.
func (c rndChain) stationary() []float64 {
	n := len(c)
	a := make([][]float64, n)
	b := make([]float64, n)
	for i := range n {
		a[i] = make([]float64, n)
		for j := range n {
			a[i][j] = c[j][i] // transpose: (Pᵀ - I) π = 0
			if i == j {
				a[i][j]--
			}
		}
	}
	for j := range n { // replace the last (redundant) equation by Σπ = 1
		a[n-1][j] = 1
	}
	b[n-1] = 1
	return rndSolve(a, b)
}

// asymptoticCov returns lim N·Cov(mean of f, mean of g) over N steps of the
// stationary chain: Σ over all lags of Cov(f(X₀), g(X_k)). With centred f̄,
// ḡ and the fundamental matrix Z = (I - P + 1π)⁻¹, it is
// ⟨f̄, Zḡ⟩ + ⟨ḡ, Zf̄⟩ - ⟨f̄, ḡ⟩ in the inner product weighted by π.
func (c rndChain) asymptoticCov(pi, f, g []float64) float64 {
	n := len(c)
	center := func(v []float64) []float64 {
		m := 0.0
		for i := range n {
			m += pi[i] * v[i]
		}
		out := make([]float64, n)
		for i := range n {
			out[i] = v[i] - m
		}
		return out
	}
	fc, gc := center(f), center(g)
	applyZ := func(v []float64) []float64 {
		a := make([][]float64, n)
		for i := range n {
			a[i] = make([]float64, n)
			for j := range n {
				a[i][j] = pi[j] - c[i][j]
				if i == j {
					a[i][j]++
				}
			}
		}
		return rndSolve(a, append([]float64(nil), v...))
	}
	inner := func(u, v []float64) float64 {
		s := 0.0
		for i := range n {
			s += pi[i] * u[i] * v[i]
		}
		return s
	}
	return inner(fc, applyZ(gc)) + inner(gc, applyZ(fc)) - inner(fc, gc)
}

// rndSolve solves a x = b by Gaussian elimination with partial pivoting
// (a and b are overwritten).
func rndSolve(a [][]float64, b []float64) []float64 {
	n := len(b)
	for col := range n {
		piv := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[piv][col]) {
				piv = r
			}
		}
		a[col], a[piv] = a[piv], a[col]
		b[col], b[piv] = b[piv], b[col]
		for r := col + 1; r < n; r++ {
			f := a[r][col] / a[col][col]
			for k := col; k < n; k++ {
				a[r][k] -= f * a[col][k]
			}
			b[r] -= f * b[col]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x
}

// rndFates runs n packets with distinct payloads through a fresh pipeline of
// the impairments made by imps, under seed, and describes what became of
// each one, so that runs can be compared.
func rndFates(t testing.TB, seed uint64, n int, imps func() []Impairment) []string {
	t.Helper()
	tp := newTestPipeline(t, seed, imps()...)
	fates := make([]string, n)
	for i := range n {
		at := time.Duration(i) * time.Millisecond
		p := &Packet{Data: []byte(fmt.Sprintf("packet %08d payload", i))}
		out := tp.pl.process(p, t0.Add(at), nil)
		if len(out) == 0 {
			fates[i] = "dropped"
			continue
		}
		for _, d := range out {
			fates[i] += fmt.Sprintf("[%v dup=%v corrupt=%v %x]", d.At.Sub(t0)-at, d.Packet.Duplicate, d.Packet.Corrupted, d.Packet.Data)
		}
	}
	return fates
}

// rndRequireSeeded asserts that the impairments made by imps decide the
// same fates under the same seed and different ones under another seed.
func rndRequireSeeded(t *testing.T, imps func() []Impairment) {
	t.Helper()
	const n = 2000
	a := rndFates(t, 1, n, imps)
	require.Equal(t, a, rndFates(t, 1, n, imps), "same seed, same fates")
	require.NotEqual(t, a, rndFates(t, 2, n, imps), "another seed, other fates")
}
