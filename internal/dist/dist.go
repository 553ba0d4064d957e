// Package dist owns the lab's duration distributions: how long a modelled
// stage (a decode, an encode, a present) takes, drawn frame after frame. A
// distribution is a plain value that scenarios and configs can carry; a
// Sampler draws from it with a seeded source, so the same seed gives the
// same sequence of durations (DESIGN decision 6).
package dist

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Duration is a distribution of durations: a constant (Mean), a normal
// (Mean and SD > 0, clamped at zero because a stage cannot take negative
// time), or a list (List non-empty) drawn in turn and cycled, for models
// that replay measured sequences.
//
// The zero value is "unset": a config holding one uses its documented
// default. Constant(0) is a real zero duration, distinct from unset, so a
// test can ask for a stage that costs nothing.
type Duration struct {
	// Mean is the constant value, or the normal's mean.
	Mean time.Duration
	// SD, when positive, makes the distribution normal.
	SD time.Duration
	// List, when not empty, is drawn in order and cycled; Mean and SD are
	// then ignored.
	List []time.Duration

	set bool // Constant(0) is set; Duration{} is not
}

// Constant is a distribution that always gives d.
func Constant(d time.Duration) Duration { return Duration{Mean: d, set: true} }

// Normal is a normal distribution clamped at zero.
func Normal(mean, sd time.Duration) Duration { return Duration{Mean: mean, SD: sd, set: true} }

// List is a distribution that gives ds in order, then again from the start.
func List(ds ...time.Duration) Duration {
	return Duration{List: append([]time.Duration(nil), ds...), set: true}
}

// IsZero reports whether d is unset (the zero value), so that a config can
// put its default in its place.
func (d Duration) IsZero() bool {
	return !d.set && d.Mean == 0 && d.SD == 0 && len(d.List) == 0
}

// Or returns d, or def if d is unset.
func (d Duration) Or(def Duration) Duration {
	if d.IsZero() {
		return def
	}
	return d
}

// Validate refuses what no stage can take: negative durations.
func (d Duration) Validate() error {
	if d.Mean < 0 || d.SD < 0 {
		return fmt.Errorf("dist: negative mean or deviation in %v", d)
	}
	for i, v := range d.List {
		if v < 0 {
			return fmt.Errorf("dist: negative duration %v at list position %d", v, i)
		}
	}
	return nil
}

// String describes the distribution: "3ms", "normal(9ms, 1ms)",
// "list(5ms, 7ms)".
func (d Duration) String() string {
	switch {
	case len(d.List) > 0:
		parts := make([]string, len(d.List))
		for i, v := range d.List {
			parts[i] = v.String()
		}
		return "list(" + strings.Join(parts, ", ") + ")"
	case d.SD > 0:
		return fmt.Sprintf("normal(%v, %v)", d.Mean, d.SD)
	}
	return d.Mean.String()
}

// Sampler draws durations from a distribution. It is not safe for
// concurrent use: each stage owns its own.
type Sampler struct {
	d   Duration
	rng *rand.Rand
	pos int
}

// Sampler returns a sampler of d drawing from rng; rng may be nil for
// distributions that need no randomness (constants and lists).
func (d Duration) Sampler(rng *rand.Rand) *Sampler {
	if len(d.List) == 0 && d.SD > 0 && rng == nil {
		panic("dist: a normal distribution needs a random source")
	}
	return &Sampler{d: d, rng: rng}
}

// Next draws the next duration.
func (s *Sampler) Next() time.Duration {
	switch {
	case len(s.d.List) > 0:
		v := s.d.List[s.pos]
		s.pos = (s.pos + 1) % len(s.d.List)
		return v
	case s.d.SD > 0:
		v := time.Duration(float64(s.d.Mean) + s.rng.NormFloat64()*float64(s.d.SD))
		return max(v, 0)
	}
	return s.d.Mean
}
