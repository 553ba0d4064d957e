// Package tracegen makes synthetic cellular link traces in the mahimahi
// format: capacity that wanders slowly around a mean (a log-normal AR(1)
// process, as measured cellular throughput does over seconds), opportunities
// that arrive as a Poisson process at the current rate (bursty at the
// millisecond scale), and occasional deep fades (handovers, tunnels) where
// almost nothing gets through. The lab ships its own traces made with it
// (testdata/traces), because the real recorded ones are not the project's to
// ship.
package tracegen

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/netem"
)

// opportunityBits is what one mahimahi opportunity carries: 1504 bytes.
const opportunityBits = 1504 * 8

// Config shapes a trace. Zero values mean the defaults given per field.
type Config struct {
	// Duration is the trace's length (its loop period). Default 60 s.
	Duration time.Duration
	// Mean is the long-run mean capacity in bits per second. Default 5 Mbit/s.
	Mean int64
	// Sigma is the standard deviation of the log of the capacity: 0.5 makes
	// the capacity swing roughly between 0.4x and 2.7x the mean. Default 0.5.
	Sigma float64
	// Coherence is how long the capacity takes to forget its level (the
	// AR(1) process's time constant). Default 2 s.
	Coherence time.Duration
	// Step is how often the capacity changes. Default 100 ms.
	Step time.Duration
	// FadeEvery is the mean time between deep fades (exponential); 0 means
	// the default 20 s, negative means none.
	FadeEvery time.Duration
	// FadeLength is a fade's mean length (exponential). Default 300 ms.
	FadeLength time.Duration
	// FadeDepth is the capacity left during a fade, as a fraction of the
	// current capacity. Default 0.02.
	FadeDepth float64
}

func (c *Config) defaults() error {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Duration, 60*time.Second)
	def(&c.Coherence, 2*time.Second)
	def(&c.Step, 100*time.Millisecond)
	def(&c.FadeEvery, 20*time.Second)
	def(&c.FadeLength, 300*time.Millisecond)
	if c.Mean == 0 {
		c.Mean = 5_000_000
	}
	if c.Sigma == 0 {
		c.Sigma = 0.5
	}
	if c.FadeDepth == 0 {
		c.FadeDepth = 0.02
	}
	var errs []error
	if c.Duration < time.Millisecond || c.Step < time.Millisecond || c.Coherence <= 0 || c.FadeLength <= 0 {
		errs = append(errs, errors.New("durations must be at least 1 ms"))
	}
	if c.Mean < 0 || c.Sigma < 0 || c.FadeDepth < 0 || c.FadeDepth > 1 {
		errs = append(errs, errors.New("mean, sigma must be positive and fade depth in [0, 1]"))
	}
	return errors.Join(errs...)
}

// Generate makes a trace from seed and cfg: the same pair always gives the
// same trace.
func Generate(seed uint64, cfg Config) (*netem.Trace, error) {
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("tracegen: %w", err)
	}
	rng := seeded.New(seed, "tracegen")
	rho := math.Exp(-float64(cfg.Step) / float64(cfg.Coherence))
	innov := math.Sqrt(1-rho*rho) * cfg.Sigma
	x := rng.NormFloat64() * cfg.Sigma // start in the stationary distribution
	// exp(x - sigma^2/2) has mean 1 when x ~ N(0, sigma^2).
	bias := cfg.Sigma * cfg.Sigma / 2

	fadeUntil, nextFade := time.Duration(-1), time.Duration(math.MaxInt64)
	if cfg.FadeEvery > 0 {
		nextFade = exp(rng, cfg.FadeEvery)
	}

	var buf bytes.Buffer
	lines := 0
	stepEnd := cfg.Step
	rate := float64(cfg.Mean) * math.Exp(x-bias)
	lastMs := cfg.Duration.Milliseconds()
	for ms := int64(1); ms <= lastMs; ms++ {
		t := time.Duration(ms) * time.Millisecond
		if t >= stepEnd {
			x = rho*x + innov*rng.NormFloat64()
			rate = float64(cfg.Mean) * math.Exp(x-bias)
			stepEnd += cfg.Step
		}
		if t >= nextFade {
			fadeUntil = t + exp(rng, cfg.FadeLength)
			nextFade = fadeUntil + exp(rng, cfg.FadeEvery)
		}
		r := rate
		if t < fadeUntil {
			r *= cfg.FadeDepth
		}
		n := poisson(rng, r/opportunityBits/1000)
		if ms == lastMs && lines+n == 0 {
			n = 1 // a trace needs at least one opportunity
		}
		for range n {
			buf.WriteString(strconv.FormatInt(ms, 10))
			buf.WriteByte('\n')
		}
		lines += n
	}
	// The period is the last timestamp: end on the last millisecond so the
	// loop keeps the length asked for.
	if lines > 0 && !bytes.HasSuffix(buf.Bytes(), []byte(strconv.FormatInt(lastMs, 10)+"\n")) {
		buf.WriteString(strconv.FormatInt(lastMs, 10) + "\n")
	}
	return netem.ParseTrace(&buf, "tracegen")
}

// exp draws an exponential duration of the given mean.
func exp(rng *rand.Rand, mean time.Duration) time.Duration {
	return time.Duration(rng.ExpFloat64() * float64(mean))
}

// poisson draws a Poisson count of mean lambda (Knuth's method: lambda here
// is a few opportunities per millisecond at most).
func poisson(rng *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// Preset is one of the traces the lab ships in testdata/traces.
type Preset struct {
	// File is the file name in testdata/traces.
	File string
	// Seed and Config make it.
	Seed   uint64
	Config Config
	// About says what it stands for.
	About string
}

// Presets are the lab's own cellular traces: a steady LTE-like link and a
// rough one, each direction.
var Presets = []Preset{
	{"cellular-steady.down", 1, Config{Mean: 8_000_000, Sigma: 0.4}, "LTE-like downlink, 8 Mbit/s mean, gentle swings, a fade every ~20 s"},
	{"cellular-steady.up", 2, Config{Mean: 3_000_000, Sigma: 0.4}, "its uplink, 3 Mbit/s mean"},
	{"cellular-rough.down", 3, Config{Mean: 4_000_000, Sigma: 0.9, Coherence: time.Second, FadeEvery: 8 * time.Second, FadeLength: 500 * time.Millisecond}, "a driving-like downlink: 4 Mbit/s mean, deep swings, a fade every ~8 s"},
	{"cellular-rough.up", 4, Config{Mean: 1_000_000, Sigma: 0.9, Coherence: time.Second, FadeEvery: 8 * time.Second, FadeLength: 500 * time.Millisecond}, "its uplink, 1 Mbit/s mean"},
}
