package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// KS is the two-sample Kolmogorov-Smirnov test of a and b: D, the largest
// distance between their empirical distribution functions (gonum's
// stat.KolmogorovSmirnov), and the asymptotic p-value of D, the chance
// that two samples of these sizes drawn from one continuous distribution
// lie at least that far apart.
//
// The p-value is Q_KS(λ), the survival function of the Kolmogorov
// distribution (KolmogorovQ), at λ = (√n + 0.12 + 0.11/√n)·D with
// n = n_a·n_b/(n_a+n_b) the effective sample size: Stephens'
// correction, which keeps the asymptotic value close to the exact one
// from a few dozen samples on (Numerical Recipes, 3rd ed., §14.3.3).
//
// Like every test that counts frames as independent draws it is far too
// sure of itself on samples from one session, whose frames are
// correlated; the reports show D and p beside the run-level bootstrap
// interval, which decides. Empty samples give D 0 and p 1 (nothing to
// tell apart) when both are empty, D 1 and p NaN otherwise.
func KS(a, b []float64) (d, p float64) {
	if len(a) == 0 || len(b) == 0 {
		if len(a) == len(b) {
			return 0, 1
		}
		return 1, math.NaN()
	}
	// gonum sums the steps of the two distribution functions, which can
	// overshoot 1 by a rounding error when they do not overlap.
	d = min(1, stat.KolmogorovSmirnov(Sorted(a), nil, Sorted(b), nil))
	na, nb := float64(len(a)), float64(len(b))
	en := math.Sqrt(na * nb / (na + nb))
	return d, KolmogorovQ((en + 0.12 + 0.11/en) * d)
}

// KolmogorovQ is the survival function of the Kolmogorov distribution,
// P(K > λ), where K is the limit of √n·D for a sample of n from a
// continuous distribution:
//
//	Q(λ) = 2 Σ_{j≥1} (-1)^(j-1) exp(-2 j² λ²)
//
// That alternating series converges fast for large λ and slowly near 0,
// so below λ = 1.18 Q is computed as 1 - P from the other form of the
// distribution function, which converges fast there:
//
//	P(λ) = √(2π)/λ Σ_{j≥1} exp(-(2j-1)² π² / (8 λ²))
//
// Both agree to 1e-12 where they meet. Q(1.358) ≈ 0.05 and
// Q(1.628) ≈ 0.01, the textbook critical values.
func KolmogorovQ(lambda float64) float64 {
	switch {
	case math.IsNaN(lambda):
		return math.NaN()
	case lambda <= 0:
		return 1
	case lambda < 1.18:
		var sum float64
		for j := 1; j <= 100; j++ {
			k := float64(2*j - 1)
			t := math.Exp(-k * k * math.Pi * math.Pi / (8 * lambda * lambda))
			sum += t
			if t < 1e-17*sum {
				break
			}
		}
		return clamp01(1 - math.Sqrt(2*math.Pi)/lambda*sum)
	default:
		var sum, sign float64 = 0, 1
		for j := 1; j <= 100; j++ {
			jf := float64(j)
			t := math.Exp(-2 * jf * jf * lambda * lambda)
			sum += sign * t
			if t < 1e-17*math.Abs(sum) {
				break
			}
			sign = -sign
		}
		return clamp01(2 * sum)
	}
}

func clamp01(x float64) float64 { return min(1, max(0, x)) }
