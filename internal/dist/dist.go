// Package dist owns the lab's duration distributions: how long a modelled
// stage (a decode, an encode, a reconfigure, a present) takes, drawn frame
// after frame. A distribution is a plain value that scenarios and configs can
// carry; a Sampler draws from it with a seeded source, so the same seed gives
// the same sequence of durations (DESIGN decision 6).
package dist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Duration is a distribution of durations. Which fields are set says which
// kind it is, so that a struct literal needs no separate kind to agree with
// its fields; the first that applies wins:
//
//   - a list (List not nil): List drawn in order and cycled, for models that
//     replay measured sequences;
//   - a normal (SD > 0): Mean and SD, clamped to [Min, Max] with Max zero
//     meaning no upper bound, and never below zero because a stage cannot
//     take negative time;
//   - a uniform (Min or Max not zero): drawn uniformly in [Min, Max], both
//     ends included;
//   - a constant: Mean.
//
// The zero value is "unset": a config holding one uses its documented
// default. Constant(0) is a real zero duration, distinct from unset, so a
// test can ask for a stage that costs nothing.
type Duration struct {
	// Mean is the constant value, or the normal's mean.
	Mean time.Duration
	// SD, when positive, makes the distribution normal.
	SD time.Duration
	// Min and Max bound a uniform draw, or clamp a normal one (Max zero: no
	// upper bound). A normal is clamped rather than redrawn so that every
	// sample takes exactly one draw and an outlier never shifts the samples
	// after it.
	Min, Max time.Duration
	// List, when not nil, is drawn in order and cycled; the other fields
	// are then ignored. An empty but non-nil List is refused by Validate:
	// a list of nothing is a mistake, not a zero.
	List []time.Duration

	set bool // Constant(0) is set; Duration{} is not
}

// kind is what a Duration's fields make it.
type kind int

const (
	constant kind = iota
	normal
	uniform
	list
)

// kind applies the precedence documented on Duration.
func (d Duration) kind() kind {
	switch {
	case d.List != nil:
		return list
	case d.SD > 0:
		return normal
	case d.Min != 0 || d.Max != 0:
		return uniform
	}
	return constant
}

// Constant is a distribution that always gives d.
func Constant(d time.Duration) Duration { return Duration{Mean: d, set: true} }

// Normal is a normal distribution clamped at zero.
func Normal(mean, sd time.Duration) Duration { return Duration{Mean: mean, SD: sd, set: true} }

// Uniform is a distribution drawn uniformly in [lo, hi], both ends included.
func Uniform(lo, hi time.Duration) Duration { return Duration{Min: lo, Max: hi, set: true} }

// List is a distribution that gives ds in order, then again from the start.
// The copy is never nil, so that List() with nothing in it stays a list and
// Validate can refuse it.
func List(ds ...time.Duration) Duration {
	return Duration{List: append([]time.Duration{}, ds...), set: true}
}

// IsZero reports whether d is unset (the zero value), so that a config can
// put its default in its place.
func (d Duration) IsZero() bool {
	return !d.set && d.Mean == 0 && d.SD == 0 && d.Min == 0 && d.Max == 0 && d.List == nil
}

// Or returns d, or def if d is unset.
func (d Duration) Or(def Duration) Duration {
	if d.IsZero() {
		return def
	}
	return d
}

// Validate refuses what no stage can take (negative durations) and what
// cannot be drawn from: bounds the wrong way round and an empty list.
func (d Duration) Validate() error {
	if d.Mean < 0 || d.SD < 0 || d.Min < 0 || d.Max < 0 {
		return fmt.Errorf("dist: negative mean, deviation or bound in %v", d)
	}
	switch d.kind() {
	case list:
		if len(d.List) == 0 {
			return errors.New("dist: empty list")
		}
		for i, v := range d.List {
			if v < 0 {
				return fmt.Errorf("dist: negative duration %v at list position %d", v, i)
			}
		}
	case uniform:
		if d.Max < d.Min {
			return fmt.Errorf("dist: %v: min above max", d)
		}
	case normal:
		if d.Max != 0 && d.Max < d.Min {
			return fmt.Errorf("dist: %v: min above max", d)
		}
	}
	return nil
}

// String describes the distribution: "3ms", "normal(9ms, 1ms)",
// "normal(9ms, 1ms) in [5ms, ∞)", "uniform(1ms, 4ms)", "list(5ms, 7ms)".
func (d Duration) String() string {
	switch d.kind() {
	case list:
		parts := make([]string, len(d.List))
		for i, v := range d.List {
			parts[i] = v.String()
		}
		return "list(" + strings.Join(parts, ", ") + ")"
	case normal:
		s := fmt.Sprintf("normal(%v, %v)", d.Mean, d.SD)
		switch {
		case d.Max != 0:
			s += fmt.Sprintf(" in [%v, %v]", d.Min, d.Max)
		case d.Min != 0:
			s += fmt.Sprintf(" in [%v, ∞)", d.Min)
		}
		return s
	case uniform:
		return fmt.Sprintf("uniform(%v, %v)", d.Min, d.Max)
	}
	return d.Mean.String()
}

// Sampler draws durations from a distribution. It is not safe for
// concurrent use: each stage owns its own.
type Sampler struct {
	d   Duration
	k   kind
	rng *rand.Rand
	pos int
}

// Sampler returns a sampler of d drawing from rng; rng may be nil for
// distributions that need no randomness (constants and lists). It panics if
// d fails Validate or needs a source it was not given: configs validate
// their distributions first, so either is a bug in the caller, better found
// here than as a negative or nonsensical duration later.
func (d Duration) Sampler(rng *rand.Rand) *Sampler {
	if err := d.Validate(); err != nil {
		panic(err)
	}
	k := d.kind()
	if (k == normal || k == uniform) && rng == nil {
		panic(fmt.Sprintf("dist: %v needs a random source", d))
	}
	return &Sampler{d: d, k: k, rng: rng}
}

// Next draws the next duration. Every random kind takes exactly one draw
// from the source per sample, so that the sequence a seed gives never
// depends on the values drawn.
func (s *Sampler) Next() time.Duration {
	d := s.d
	switch s.k {
	case list:
		v := d.List[s.pos]
		s.pos = (s.pos + 1) % len(d.List)
		return v
	case normal:
		// Min is at least zero (Validate), so this is also the clamp at
		// zero.
		v := max(time.Duration(float64(d.Mean)+s.rng.NormFloat64()*float64(d.SD)), d.Min)
		if d.Max != 0 {
			v = min(v, d.Max)
		}
		return v
	case uniform:
		// Uint64N, not Int64N: the width of [0, MaxInt64] overflows an
		// int64. Both draw the same numbers for the same bound, so the
		// sequences are those of the encoder's former Int64N draw.
		return d.Min + time.Duration(s.rng.Uint64N(uint64(d.Max-d.Min)+1))
	}
	return d.Mean
}
