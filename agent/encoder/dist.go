package encoder

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The kinds of Dist.
const (
	DistConstant = "constant"
	DistUniform  = "uniform"
	DistNormal   = "normal"
	DistList     = "list"
)

// Dist is a distribution of durations: how long an encode or a reconfigure
// takes. The zero value is a constant zero.
type Dist struct {
	// Kind is "constant" (the default when empty), "uniform", "normal" or
	// "list".
	Kind string
	// Value is the constant's value, or the normal's mean.
	Value time.Duration
	// StdDev is the normal's standard deviation.
	StdDev time.Duration
	// Min and Max bound a uniform draw. A normal draw is clamped to them
	// (Max zero: no upper bound), so that no encode takes negative time; a
	// clamp rather than a redraw keeps one draw per sample, so one sample
	// never shifts the sequence of the next.
	Min, Max time.Duration
	// List is cycled in order, for replaying measured encode times.
	List []time.Duration
}

// Constant is a Dist that is always d.
func Constant(d time.Duration) Dist { return Dist{Kind: DistConstant, Value: d} }

// Uniform is a Dist drawn uniformly in [lo, hi].
func Uniform(lo, hi time.Duration) Dist { return Dist{Kind: DistUniform, Min: lo, Max: hi} }

// Normal is a Dist of mean mean and standard deviation sd, never below zero.
func Normal(mean, sd time.Duration) Dist { return Dist{Kind: DistNormal, Value: mean, StdDev: sd} }

// Cycle is a Dist that replays ds in order, again and again.
func Cycle(ds ...time.Duration) Dist {
	return Dist{Kind: DistList, List: append([]time.Duration(nil), ds...)}
}

func (d Dist) isZero() bool {
	return d.Kind == "" && d.Value == 0 && d.StdDev == 0 && d.Min == 0 && d.Max == 0 && len(d.List) == 0
}

func (d Dist) check() error {
	switch d.Kind {
	case "", DistConstant:
		if d.Value < 0 {
			return fmt.Errorf("constant %v is negative", d.Value)
		}
	case DistUniform:
		if d.Min < 0 || d.Max < d.Min {
			return fmt.Errorf("uniform [%v, %v]: need 0 <= min <= max", d.Min, d.Max)
		}
	case DistNormal:
		if d.Value < 0 || d.StdDev < 0 || d.Min < 0 || (d.Max != 0 && d.Max < d.Min) {
			return fmt.Errorf("normal mean %v sd %v in [%v, %v]: need non-negative values and min <= max", d.Value, d.StdDev, d.Min, d.Max)
		}
	case DistList:
		if len(d.List) == 0 {
			return errors.New("empty list")
		}
		for _, v := range d.List {
			if v < 0 {
				return fmt.Errorf("list holds negative %v", v)
			}
		}
	default:
		return fmt.Errorf("unknown distribution %q (want constant, uniform, normal or list)", d.Kind)
	}
	return nil
}

// String describes d for reports.
func (d Dist) String() string {
	switch d.Kind {
	case DistUniform:
		return fmt.Sprintf("uniform %v-%v", d.Min, d.Max)
	case DistNormal:
		return fmt.Sprintf("normal %v±%v", d.Value, d.StdDev)
	case DistList:
		return fmt.Sprintf("list of %d", len(d.List))
	}
	return d.Value.String()
}

// sampler draws from a Dist with its own seeded source.
type sampler struct {
	d   Dist
	rng *rand.Rand
	i   int
}

func (s *sampler) next() time.Duration {
	d := s.d
	switch d.Kind {
	case DistUniform:
		return d.Min + time.Duration(s.rng.Int64N(int64(d.Max-d.Min)+1))
	case DistNormal:
		v := max(d.Min, d.Value+time.Duration(s.rng.NormFloat64()*float64(d.StdDev)))
		if d.Max > 0 {
			v = min(v, d.Max)
		}
		return v
	case DistList:
		v := d.List[s.i%len(d.List)]
		s.i++
		return v
	}
	return d.Value
}
