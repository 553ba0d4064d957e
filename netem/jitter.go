package netem

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

func init() { Register("jitter", func() Impairment { return &Jitter{} }) }

// The delay distributions Jitter knows.
const (
	// DistUniform spreads delays evenly over Delay ± Jitter.
	DistUniform = "uniform"
	// DistNormal draws delays from a normal law of mean Delay and standard
	// deviation Jitter.
	DistNormal = "normal"
	// DistParetoNormal draws delays from tc netem's "paretonormal" shape (a
	// body with a heavy right tail), scaled to mean Delay and standard
	// deviation Jitter. See Jitter for the construction.
	DistParetoNormal = "pareto-normal"
	// DistTruncatedNormal adds to Delay an extra delay between zero and
	// Jitter: |T|·Jitter/2, where T is a standard normal variate truncated
	// to [-2, 2] (drawn within the range, not clamped to it). It is the
	// jitter of the RMCAT evaluation test cases (RFC 8867 and RFC 8868), as
	// WebRTC's bandwidth-estimation test framework states them: "truncated
	// gaussian, maximum end-to-end jitter 30 ms = 2*standard_deviation",
	// one-sided as that framework draws it. Delay is then the smallest
	// delay, not the mean; the mean extra delay is 0.361·Jitter and its
	// standard deviation 0.251·Jitter.
	DistTruncatedNormal = "truncated-normal"
)

// jitterDistributions lists the valid names, in the order error messages
// give them.
var jitterDistributions = []string{DistUniform, DistNormal, DistParetoNormal, DistTruncatedNormal}

// Jitter adds a random one-way delay to every packet, like tc netem's
// "delay TIME JITTER [CORRELATION] distribution NAME".
//
// Every sample is made from one standard normal variate z, turned into the
// chosen distribution by a fixed map (for uniform, erf(z/√2); for normal, z
// itself; for pareto-normal, the quantile mix below; for truncated-normal,
// the absolute value of the truncated quantile over two, the one map that is
// not monotone). Correlation
// acts on z only, so the distribution of each delay stays exactly the chosen
// one whatever the correlation.
//
// Pareto-normal follows iproute2's paretonormal table: at every quantile u it
// mixes a quarter of the standard normal quantile with three quarters of a
// Pareto (shape 3) quantile shifted to mean zero and scaled by 4/3, the Pareto
// part capped at 4 and the sum kept in [-4, 4], as the table's 16-bit entries
// cap them. The mix is taken quantile by quantile (comonotone), not by
// drawing one law or the other, because that is what the table does. Unlike
// tc, the result is then standardised so that Delay is its mean and Jitter its
// standard deviation, as with normal: tc's own table has mean -0.025 and
// standard deviation 0.835 in units of its jitter, so tc's
// "delay D J distribution paretonormal" corresponds to Delay D-0.025J and
// Jitter 0.835J here. About 63% of the delays fall below the mean, and the
// longest ones reach the mean plus 4.8 standard deviations.
//
// A sampled delay below zero is taken as zero (the packet cannot leave before
// it arrived), which raises the mean when Jitter is large next to Delay.
//
// Unless Reorder is set, the link keeps packets in sending order: a packet
// whose sampled delay would let it overtake an earlier one waits for it, the
// no-reordering model of RFC 8868 and what a single radio or FIFO queue does.
// The delays then seen are the samples only when packets are spaced more than
// the spread of the delays.
type Jitter struct {
	// Delay is the mean delay (for uniform, the middle of the range; for
	// truncated-normal, the smallest delay).
	Delay time.Duration
	// Jitter is the spread: the half-width of the range for uniform, the
	// standard deviation for normal and pareto-normal, the largest extra
	// delay for truncated-normal.
	Jitter time.Duration
	// Distribution names the law of the delays: "uniform" (the default when
	// empty), "normal", "pareto-normal" or "truncated-normal".
	Distribution string
	// Correlation, in [0, 1], is the correlation between consecutive
	// delays (lag-1 autocorrelation). Zero draws every delay independently;
	// one repeats the first delay forever.
	//
	// tc netem correlates by averaging each fresh uniform number with the
	// previous result, which narrows the distribution: the standard
	// deviation of its uniform number falls by √((1-ρ)/(1+ρ)), to 58% at a
	// correlation of 50%, and the delays narrow with it. Here the
	// underlying normal variate follows a stationary AR(1) process,
	// z' = φz + √(1-φ²)ε, whose every sample is still standard normal, so
	// the delays keep the chosen distribution and standard deviation
	// exactly. φ is chosen so that the delays themselves (not z) have lag-1
	// correlation Correlation: φ equals Correlation for normal, and is
	// slightly larger for uniform and pareto-normal, whose maps from z bend
	// the correlation down (found from the maps' Hermite expansions, see
	// summarizeShape).
	Correlation float64
	// Reorder lets packets overtake each other when their sampled delays say
	// so, as tc netem does. False keeps sending order.
	Reorder bool

	z       float64 // the previous underlying normal variate
	started bool    // whether z holds a sample yet
	phi     float64 // AR(1) coefficient of z for phiFor
	phiFor  jitterKey
	phiOK   bool
}

// jitterKey is what the AR(1) coefficient depends on.
type jitterKey struct {
	dist string
	corr float64
}

// Kind implements Impairment.
func (*Jitter) Kind() string { return "jitter" }

// Stage implements Impairment.
func (*Jitter) Stage() Stage { return StageDelay }

// Reorders implements Reorderer: packets may overtake each other only when
// Reorder is set.
func (j *Jitter) Reorders() bool { return j.Reorder }

// Validate refuses negative durations, a correlation outside [0, 1] and an
// unknown distribution.
func (j *Jitter) Validate() error {
	if j.Delay < 0 {
		return fmt.Errorf("delay %v is negative", j.Delay)
	}
	if j.Jitter < 0 {
		return fmt.Errorf("jitter %v is negative", j.Jitter)
	}
	if !(j.Correlation >= 0 && j.Correlation <= 1) { // also refuses NaN
		return fmt.Errorf("correlation %v is not in [0, 1]", j.Correlation)
	}
	if j.distribution() == "" {
		return fmt.Errorf("unknown distribution %q (valid: %q)", j.Distribution, jitterDistributions)
	}
	return nil
}

// distribution returns the effective distribution name, or "" if unknown.
func (j *Jitter) distribution() string {
	switch j.Distribution {
	case "", DistUniform:
		return DistUniform
	case DistNormal, DistParetoNormal, DistTruncatedNormal:
		return j.Distribution
	}
	return ""
}

// Apply implements Impairment.
func (j *Jitter) Apply(_ *Packet, at time.Time, env *Env) Verdict {
	if j.Jitter == 0 {
		// Nothing random to decide: keep the source untouched so that a
		// jitter of zero behaves exactly like a fixed delay.
		return Verdict{At: at.Add(j.Delay)}
	}
	d := float64(j.Delay) + float64(j.Jitter)*j.sample(env.Rand)
	switch {
	case d <= 0:
		return Verdict{At: at}
	case d >= math.MaxInt64:
		return Verdict{At: at.Add(math.MaxInt64)}
	}
	return Verdict{At: at.Add(time.Duration(math.Round(d)))}
}

// sample draws the next standardised delay variate: mean 0 and standard
// deviation 1 for normal and pareto-normal, uniform on (-1, 1) for uniform,
// in [0, 1] for truncated-normal.
func (j *Jitter) sample(r *rand.Rand) float64 {
	dist := j.distribution()
	phi := j.underlyingCorrelation(dist)
	eps := r.NormFloat64()
	if j.started && phi > 0 {
		// Stationary AR(1): z stays standard normal at every step.
		j.z = phi*j.z + math.Sqrt(1-phi*phi)*eps
	} else {
		j.z = eps
		j.started = true
	}
	return jitterShape(dist, j.z)
}

// underlyingCorrelation returns the AR(1) coefficient of z that gives the
// delays lag-1 correlation j.Correlation, computing it once per setting.
func (j *Jitter) underlyingCorrelation(dist string) float64 {
	key := jitterKey{dist, j.Correlation}
	if !j.phiOK || j.phiFor != key {
		j.phi = calibrateCorrelation(dist, j.Correlation)
		j.phiFor, j.phiOK = key, true
	}
	return j.phi
}

// jitterShape maps a standard normal variate to the distribution dist.
func jitterShape(dist string, z float64) float64 {
	switch dist {
	case DistNormal:
		return z
	case DistParetoNormal:
		m := paretoNormalSummary()
		return (paretoNormalRaw(z) - m.mean) / m.sd
	case DistTruncatedNormal:
		return truncatedNormalRaw(z)
	}
	// Φ(z) is uniform on (0, 1); 2Φ(z)-1 = erf(z/√2) is uniform on (-1, 1).
	return math.Erf(z / math.Sqrt2)
}

// paretoNormalRaw is the value of iproute2's paretonormal table (in units
// of its scale) at the quantile u = Φ(z): a quarter of the normal quantile z
// plus three quarters of the Pareto quantile (1-u)^(-1/3), less its mean 1.5,
// times 4/3, with the table's caps.
func paretoNormalRaw(z float64) float64 {
	tail := 0.5 * math.Erfc(z/math.Sqrt2) // 1-u, exact far into the tail
	pareto := 4.0 / 3.0 * (math.Pow(tail, -1.0/3.0) - 1.5)
	x := 0.25*z + 0.75*min(pareto, 4)
	return max(-4, min(4, x))
}

// truncatedNormalRaw is the truncated-normal extra delay in units of its
// maximum: the quantile of a standard normal truncated to [-2, 2] at the
// quantile Φ(z) of the untruncated one, taken absolute and halved. With
// 2Φ(z)-1 = erf(z/√2), that quantile is √2·erfinv(erf(z/√2)·erf(√2)).
func truncatedNormalRaw(z float64) float64 {
	return math.Abs(math.Sqrt2*math.Erfinv(math.Erf(z/math.Sqrt2)*math.Erf(math.Sqrt2))) / 2
}

// shapeSummary describes a map f of a standard normal variate: the mean and
// standard deviation of f(Z), and a[k] = c_k²/Var f(Z) for k = 1..len(a),
// where c_k is the coefficient of f on the k-th normalised Hermite
// polynomial. By Mehler's formula, when Z and Z' are standard normal with
// correlation φ, Corr(f(Z), f(Z')) = Σ a[k] φ^k.
type shapeSummary struct {
	mean, sd float64
	a        []float64
}

// hermiteTerms is how many Hermite coefficients are kept; the rest of the
// variance is lumped into one more term so that correlation 1 still maps to 1.
const hermiteTerms = 32

// summarizeShape integrates f against the standard normal density with the
// trapezoidal rule over [-12, 12], beyond which the density is negligible.
// With 24,577 points it takes a few milliseconds and is accurate to about
// 1e-6 even across the kinks of the paretonormal caps.
func summarizeShape(f func(float64) float64) shapeSummary {
	const lim, step = 12.0, 1.0 / 1024
	n := int(2 * lim / step)
	norm := step / math.Sqrt(2*math.Pi)
	var m0, m1, m2 float64
	c := make([]float64, hermiteTerms+1)
	for i := 0; i <= n; i++ {
		z := -lim + float64(i)*step
		w := norm * math.Exp(-z*z/2)
		if i == 0 || i == n {
			w /= 2
		}
		v := f(z)
		m0 += w
		m1 += w * v
		m2 += w * v * v
		// Normalised probabilists' Hermite polynomials by recurrence.
		hPrev, h := 1.0, z
		for k := 1; k <= hermiteTerms; k++ {
			c[k] += w * v * h
			hPrev, h = h, (z*h-math.Sqrt(float64(k))*hPrev)/math.Sqrt(float64(k+1))
		}
	}
	mean := m1 / m0
	variance := m2/m0 - mean*mean
	s := shapeSummary{mean: mean, sd: math.Sqrt(variance), a: make([]float64, hermiteTerms)}
	for k := 1; k <= hermiteTerms; k++ {
		s.a[k-1] = c[k] * c[k] / m0 / m0 / variance
	}
	return s
}

// corr returns Corr(f(Z), f(Z')) for normal Z, Z' of correlation phi.
func (s shapeSummary) corr(phi float64) float64 {
	sum, total, pk := 0.0, 0.0, 1.0
	for _, a := range s.a {
		pk *= phi
		sum += a * pk
		total += a
	}
	// What the kept terms miss (4e-4 of the variance for pareto-normal,
	// nothing for uniform) goes with the next power, so that the result is
	// exact at 0 and 1 and increasing in between.
	return sum + max(0, 1-total)*pk*phi
}

// The summaries are computed once, on first use (a few milliseconds).
var (
	paretoNormalSummary = sync.OnceValue(func() shapeSummary { return summarizeShape(paretoNormalRaw) })
	uniformSummary      = sync.OnceValue(func() shapeSummary {
		return summarizeShape(func(z float64) float64 { return math.Erf(z / math.Sqrt2) })
	})
	truncatedNormalSummary = sync.OnceValue(func() shapeSummary { return summarizeShape(truncatedNormalRaw) })
)

// calibrateCorrelation returns the correlation φ of consecutive normal
// variates that gives consecutive delays of distribution dist the
// correlation rho.
func calibrateCorrelation(dist string, rho float64) float64 {
	if rho <= 0 || rho >= 1 || dist == DistNormal {
		return rho
	}
	s := uniformSummary()
	switch dist {
	case DistParetoNormal:
		s = paretoNormalSummary()
	case DistTruncatedNormal:
		// An even map: only the even Hermite terms count, so the delays
		// keep about φ² of z's correlation and z needs much more.
		s = truncatedNormalSummary()
	}
	// s.corr increases with phi from 0 to 1 (every term's weight is
	// non-negative): bisect.
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if s.corr(mid) < rho {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}
