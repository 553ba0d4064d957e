package netem

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// jitterRaw is iproute2's paretonormal construction written from the
// quantile u directly, independently of jitter.go (which works from a normal
// variate): a quarter of the normal quantile plus three quarters of the
// Pareto(3) quantile less its mean, times 4/3, capped as the table caps.
func jitterRaw(u float64) float64 {
	normal := math.Sqrt2 * math.Erfinv(2*u-1)
	pareto := math.Min(4, 4.0/3.0*(math.Pow(1-u, -1.0/3.0)-1.5))
	return math.Max(-4, math.Min(4, 0.25*normal+0.75*pareto))
}

// jitterLaw describes a standardised delay law: its mean, standard
// deviation and kurtosis (in units of Jitter), and for pareto-normal the
// share of delays below the mean.
type jitterLaw struct {
	mean, sd, kurtosis, belowMean float64
}

// jitterParetoNormalRaw integrates the raw paretonormal quantile function
// over u by the midpoint rule.
var jitterParetoNormalRaw = sync.OnceValue(func() jitterLaw {
	const n = 1 << 19
	var s1, s2 float64
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = jitterRaw((float64(i) + 0.5) / n)
		s1 += xs[i]
		s2 += xs[i] * xs[i]
	}
	mean := s1 / n
	sd := math.Sqrt(s2/n - mean*mean)
	var s4 float64
	below := 0
	for _, x := range xs {
		d := (x - mean) / sd
		s4 += d * d * d * d
		if x < mean {
			below++ // xs increase with u: this is the quantile of the mean
		}
	}
	return jitterLaw{mean: mean, sd: sd, kurtosis: s4 / n, belowMean: float64(below) / n}
})

// jitterTruncatedNormal integrates |T|/2, T standard normal truncated to
// [-2, 2], over T's own quantiles by the midpoint rule (u spread over
// [Φ(-2), Φ(2)]), independently of jitter.go's map from z.
var jitterTruncatedNormal = sync.OnceValue(func() jitterLaw {
	const n = 1 << 19
	lo := 0.5 * math.Erfc(math.Sqrt2) // Φ(-2)
	xs := make([]float64, n)
	var s1, s2 float64
	for i := range xs {
		u := lo + (1-2*lo)*(float64(i)+0.5)/n
		xs[i] = math.Abs(math.Sqrt2*math.Erfinv(2*u-1)) / 2
		s1 += xs[i]
		s2 += xs[i] * xs[i]
	}
	mean := s1 / n
	sd := math.Sqrt(s2/n - mean*mean)
	var s4 float64
	for _, x := range xs {
		d := (x - mean) / sd
		s4 += d * d * d * d
	}
	return jitterLaw{mean: mean, sd: sd, kurtosis: s4 / n}
})

// jitterExpected returns the law of (delay - Delay) / Jitter.
func jitterExpected(dist string) jitterLaw {
	switch dist {
	case DistTruncatedNormal:
		return jitterTruncatedNormal()
	case DistNormal:
		return jitterLaw{mean: 0, sd: 1, kurtosis: 3}
	case DistParetoNormal:
		raw := jitterParetoNormalRaw()
		return jitterLaw{mean: 0, sd: 1, kurtosis: raw.kurtosis, belowMean: raw.belowMean}
	}
	return jitterLaw{mean: 0, sd: 1 / math.Sqrt(3), kurtosis: 9.0 / 5.0}
}

// The standardisation constants jitter.go computes agree with the table
// construction integrated the other way, and match tc's table: mean -0.025
// and standard deviation 0.835 of its jitter.
func TestJitterParetoNormalMatchesIproute2Construction(t *testing.T) {
	raw := jitterParetoNormalRaw()
	impl := paretoNormalSummary()
	require.InDelta(t, raw.mean, impl.mean, 1e-4)
	require.InDelta(t, raw.sd, impl.sd, 1e-4)
	require.InDelta(t, -0.025, raw.mean, 0.001)
	require.InDelta(t, 0.835, raw.sd, 0.001)
	t.Logf("paretonormal table: mean %.4f sd %.4f kurtosis %.2f, %.1f%% below the mean",
		raw.mean, raw.sd, raw.kurtosis, 100*raw.belowMean)
}

// The truncated-normal law's mean has a closed form, E|T| =
// 2(φ(0)-φ(2))/(Φ(2)-Φ(-2)), which the midpoint integration and jitter.go's
// Hermite summary both meet: 0.723 of a standard deviation, so a 30 ms
// maximum (a 15 ms standard deviation) adds 10.8 ms on average.
func TestJitterTruncatedNormalMean(t *testing.T) {
	phi := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	want := 2 * (phi(0) - phi(2)) / math.Erf(math.Sqrt2) / 2
	require.InDelta(t, want, jitterTruncatedNormal().mean, 1e-6)
	require.InDelta(t, want, truncatedNormalSummary().mean, 1e-6)
	require.InDelta(t, 0.361, want, 0.001)
	require.InDelta(t, 0.251, jitterTruncatedNormal().sd, 0.001)
}

// jitterDelays sends n packets spaced by gap through a pipeline with j and
// returns their delays in units of j.Jitter, centred on j.Delay.
func jitterDelays(t *testing.T, seed uint64, j *Jitter, n int, gap time.Duration) []float64 {
	t.Helper()
	tp := newTestPipeline(t, seed, j)
	xs := make([]float64, n)
	for i := range n {
		at := time.Duration(i) * gap
		out := tp.send(10, at)
		require.Len(t, out, 1)
		xs[i] = float64(out[0].At.Sub(t0)-at-j.Delay) / float64(j.Jitter)
	}
	return xs
}

// Independent delays: the mean and standard deviation fall in their 99.9%
// intervals (the standard deviation's from the law's kurtosis), both with
// Reorder (the delays are the samples) and in FIFO mode with packets spaced
// far beyond the spread (the FIFO rule never binds).
func TestJitterDistributionsHaveTheirMeanAndSD(t *testing.T) {
	const n = 60_000
	for _, dist := range jitterDistributions {
		for _, mode := range []struct {
			name    string
			reorder bool
			gap     time.Duration
			seed    uint64
		}{{"reorder", true, 100 * time.Microsecond, 21}, {"fifo-spaced", false, time.Second, 22}} {
			t.Run(dist+"/"+mode.name, func(t *testing.T) {
				j := &Jitter{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: dist, Reorder: mode.reorder}
				xs := jitterDelays(t, mode.seed, j, n, mode.gap)
				want := jitterExpected(dist)
				mean, sd, _ := rndMoments(xs)
				rndRequireWithin(t, want.mean, want.sd/math.Sqrt(n), rndZ999, mean, "mean")
				rndRequireWithin(t, want.sd, want.sd*math.Sqrt((want.kurtosis-1)/n)/2, rndZ999, sd, "standard deviation")
				switch dist {
				case DistUniform:
					for _, x := range xs {
						require.True(t, x >= -1 && x <= 1, "uniform delays stay in Delay ± Jitter: %v", x)
					}
				case DistTruncatedNormal:
					for _, x := range xs {
						require.True(t, x >= 0 && x <= 1, "truncated-normal delays stay in [Delay, Delay+Jitter]: %v", x)
					}
				case DistParetoNormal:
					below := 0
					for _, x := range xs {
						if x < 0 {
							below++
						}
						require.Less(t, x, 4.9, "the table caps the tail")
					}
					rndRequireProportion(t, want.belowMean, below, n, "share below the mean")
				}
			})
		}
	}
}

// Correlated delays keep their distribution's mean and standard deviation
// and have lag-1 autocorrelation Correlation. The samples are dependent, so
// the standard errors come from 100 batches of 1,000, far longer than the
// correlation lasts (at 0.9, correlation falls below 1% after 44 packets).
func TestJitterCorrelationKeepsTheDistribution(t *testing.T) {
	const n, batches = 100_000, 100
	cases := []struct {
		dist string
		rho  float64
	}{
		{DistUniform, 0.5}, {DistNormal, 0.5}, {DistParetoNormal, 0.5}, {DistNormal, 0.9}, {DistParetoNormal, 0.9},
		{DistTruncatedNormal, 0.5},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v", c.dist, c.rho), func(t *testing.T) {
			j := &Jitter{Delay: 100 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: c.dist, Correlation: c.rho, Reorder: true}
			xs := jitterDelays(t, 23, j, n, 100*time.Microsecond)
			want := jitterExpected(c.dist)
			mean, sd, lag1 := rndMoments(xs)
			se := func(f func(mean, sd, lag1 float64) float64) float64 {
				return rndBatchSE(xs, batches, func(b []float64) float64 { return f(rndMoments(b)) })
			}
			rndRequireWithin(t, want.mean, se(func(m, _, _ float64) float64 { return m }), rndT999Dof99, mean, "mean")
			rndRequireWithin(t, want.sd, se(func(_, s, _ float64) float64 { return s }), rndT999Dof99, sd, "standard deviation")
			rndRequireWithin(t, c.rho, se(func(_, _, r float64) float64 { return r }), rndT999Dof99, lag1, "lag-1 autocorrelation")
		})
	}
}

// For uniform, the correlation of Φ(Z) and Φ(Z') is (6/π)·asin(φ/2), so
// the calibration has a closed form to check the Hermite series against.
func TestJitterCorrelationCalibration(t *testing.T) {
	for rho := 0.05; rho < 1; rho += 0.05 {
		require.InDelta(t, 2*math.Sin(math.Pi*rho/6), calibrateCorrelation(DistUniform, rho), 1e-6, "uniform at %v", rho)
		require.Equal(t, rho, calibrateCorrelation(DistNormal, rho))
		phi := calibrateCorrelation(DistParetoNormal, rho)
		require.Greater(t, phi, rho, "the map from z lowers the correlation, so z needs more")
		require.InDelta(t, rho, paretoNormalSummary().corr(phi), 1e-9)
		phi = calibrateCorrelation(DistTruncatedNormal, rho)
		require.Greater(t, phi, rho, "|z| keeps about φ² of z's correlation")
		require.InDelta(t, rho, truncatedNormalSummary().corr(phi), 1e-9)
	}
	for _, dist := range jitterDistributions {
		require.Zero(t, calibrateCorrelation(dist, 0))
		require.Equal(t, 1.0, calibrateCorrelation(dist, 1))
	}
}

func TestJitterFullCorrelationRepeatsTheFirstDelay(t *testing.T) {
	xs := jitterDelays(t, 5, &Jitter{Delay: time.Second, Jitter: 100 * time.Millisecond, Distribution: DistNormal, Correlation: 1}, 1000, time.Millisecond)
	for _, x := range xs {
		require.Equal(t, xs[0], x)
	}
}

func TestJitterNegativeDelaysClampAtZero(t *testing.T) {
	j := &Jitter{Delay: time.Millisecond, Jitter: 100 * time.Millisecond, Distribution: DistNormal, Reorder: true}
	tp := newTestPipeline(t, 1, j)
	zeros := 0
	for i := range 10_000 {
		at := time.Duration(i) * time.Millisecond
		d := tp.send(1, at)[0].At.Sub(t0) - at
		require.GreaterOrEqual(t, d, time.Duration(0))
		if d == 0 {
			zeros++
		}
	}
	require.Greater(t, zeros, 4000, "about half the samples are negative")
}

func TestJitterZeroIsAFixedDelay(t *testing.T) {
	tp := newTestPipeline(t, 1, &Jitter{Delay: 7 * time.Millisecond, Distribution: DistParetoNormal, Correlation: 0.5})
	for i := range 100 {
		require.Equal(t, t0.Add(time.Duration(i)+7*time.Millisecond), tp.send(1, time.Duration(i))[0].At)
	}
}

// jitterDense sends n packets 200 µs apart through a real link whose delays
// spread over ±20 ms, and returns what arrived.
func jitterDense(t *testing.T, n int, reorder bool) []arrival {
	var got []arrival
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Name: "dense", Seed: 17, Impairments: []Impairment{
			&Jitter{Delay: 30 * time.Millisecond, Jitter: 20 * time.Millisecond, Reorder: reorder},
		}})
		for range n {
			require.NoError(t, l.Send(&Packet{Data: []byte{0}}))
			time.Sleep(200 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got = rec.arrivals()
		require.Len(t, got, n)
	})
	return got
}

// By default a link with jitter delivers in sending order, at non-decreasing
// instants; with Reorder, the same delays (same seed) let packets overtake.
// The FIFO link delivers each packet exactly when the slowest packet sent so
// far (itself included) is due, which is what keeping order means.
func TestJitterKeepsOrderUnlessReorder(t *testing.T) {
	const n = 2000
	fifo := jitterDense(t, n, false)
	free := jitterDense(t, n, true)

	// Instants are compared as offsets from each run's first sending.
	due := make([]time.Duration, n+1) // by Seq, from the reordering run
	for _, a := range free {
		due[a.P.Seq] = a.At.Sub(a.P.Sent) + time.Duration(a.P.Seq-1)*200*time.Microsecond
	}
	start := fifo[0].P.Sent
	var latest time.Duration
	for i, a := range fifo {
		require.Equal(t, uint64(i+1), a.P.Seq, "delivery order is sending order")
		if i > 0 {
			require.False(t, a.At.Before(fifo[i-1].At), "delivery instants never go back")
		}
		latest = max(latest, due[a.P.Seq])
		require.Equal(t, latest, a.At.Sub(start), "packet %d waits for the slowest before it", a.P.Seq)
	}

	overtaken := 0
	for i := 1; i < n; i++ {
		if free[i].P.Seq < free[i-1].P.Seq {
			overtaken++
		}
	}
	t.Logf("with Reorder, %d of %d deliveries come after a later-sent packet", overtaken, n)
	require.Greater(t, overtaken, n/10, "with Reorder, packets overtake each other")
}

func TestJitterIsSeeded(t *testing.T) {
	for _, dist := range jitterDistributions {
		t.Run(dist, func(t *testing.T) {
			rndRequireSeeded(t, func() []Impairment {
				return []Impairment{&Jitter{Delay: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Distribution: dist, Correlation: 0.3}}
			})
		})
	}
}

func TestJitterValidate(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		j    Jitter
		want string
	}{
		{Jitter{Delay: -ms}, "delay -1ms is negative"},
		{Jitter{Jitter: -ms}, "jitter -1ms is negative"},
		{Jitter{Correlation: -0.1}, "correlation -0.1 is not in [0, 1]"},
		{Jitter{Correlation: 1.5}, "correlation 1.5 is not in [0, 1]"},
		{Jitter{Correlation: math.NaN()}, "correlation NaN is not in [0, 1]"},
		{Jitter{Distribution: "pareto"}, `unknown distribution "pareto" (valid: ["uniform" "normal" "pareto-normal" "truncated-normal"])`},
	} {
		require.EqualError(t, c.j.Validate(), c.want)
	}
	for _, dist := range append([]string{""}, jitterDistributions...) {
		require.NoError(t, (&Jitter{Delay: ms, Jitter: ms, Distribution: dist, Correlation: 1}).Validate())
	}
	_, err := NewLink(LinkConfig{Impairments: []Impairment{&Jitter{Distribution: "gamma"}}}, func(*Packet) {})
	require.ErrorContains(t, err, `jitter: unknown distribution "gamma"`)
	imp, err := New("jitter")
	require.NoError(t, err)
	require.Equal(t, &Jitter{}, imp)
	require.False(t, imp.(Reorderer).Reorders(), "FIFO by default")
}
