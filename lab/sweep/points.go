package sweep

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Point is one combination of the grid's values. A zero field is a
// parameter the grid does not vary: the scenario's own.
type Point struct {
	// Index is the point's place in Points, from 0: what Shard deals by.
	Index int `json:"index"`
	// ID names the point by its values, the same in every shard and run
	// of the grid (see Points).
	ID        string        `json:"id"`
	Threshold time.Duration `json:"threshold_ns,omitempty"`
	Decrease  float64       `json:"decrease,omitempty"`
	Increase  float64       `json:"increase,omitempty"`
	Hold      time.Duration `json:"hold_ns,omitempty"`
	Sustain   time.Duration `json:"sustain_ns,omitempty"`
	Close     time.Duration `json:"close_ns,omitempty"`
}

// Points enumerates the grid's points: the cartesian product of its axes
// in the order of AxisKeys, the first axis varying slowest and each
// axis's values in the order given. The order is part of the grid, so
// the same grid gives the same points, indices and IDs on every machine.
//
// An ID writes each varied parameter's letter (t threshold, d decrease,
// i increase, h hold, s sustain, c close) before its value, joined by
// "/": "t60ms/d20%/i15%/h1500ms". A grid that varies nothing has one
// point, "as-written".
func (g Grid) Points() []Point {
	points := []Point{{}}
	for _, a := range axes {
		n := a.length(&g)
		if n == 0 {
			continue
		}
		next := make([]Point, 0, len(points)*n)
		for _, p := range points {
			for i := range n {
				q := p
				if a.durs != nil {
					*a.dur(&q) = (*a.durs(&g))[i]
				} else {
					*a.share(&q) = (*a.shares(&g))[i]
				}
				q.ID += "/" + a.letter + a.format(&g, i)
				next = append(next, q)
			}
		}
		points = next
	}
	for i := range points {
		points[i].Index = i
		points[i].ID = strings.TrimPrefix(points[i].ID, "/")
		if points[i].ID == "" {
			points[i].ID = "as-written"
		}
	}
	return points
}

// Params lists the values of the varied parameters, in the order of
// AxisKeys, formatted as grid files write them; keys gives their names.
func (p Point) Params(g Grid) (keys, values []string) {
	for _, a := range axes {
		if a.length(&g) == 0 {
			continue
		}
		keys = append(keys, a.key)
		if a.durs != nil {
			values = append(values, scenarios.FormatDuration(*a.dur(&p)))
		} else {
			values = append(values, scenarios.FormatPercent(*a.share(&p)))
		}
	}
	return keys, values
}

// ErrShard wraps every reason a shard is refused.
var ErrShard = errors.New("bad shard")

// ParseShard reads a shard as "i/n": the i-th of n shards, i from 1 to n
// (as CI matrices count). A Kubernetes Indexed Job counts from 0: pass
// $((JOB_COMPLETION_INDEX+1))/n.
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("%w %q: expected i/n, like 2/3 for the second of three shards", ErrShard, s)
	}
	i, errI := strconv.Atoi(strings.TrimSpace(a))
	n, errN := strconv.Atoi(strings.TrimSpace(b))
	if errI != nil || errN != nil {
		return 0, 0, fmt.Errorf("%w %q: expected whole numbers i/n, like 2/3", ErrShard, s)
	}
	return i, n, checkShard(i, n)
}

func checkShard(i, n int) error {
	switch {
	case n < 1:
		return fmt.Errorf("%w %d/%d: expected at least one shard", ErrShard, i, n)
	case i == 0:
		return fmt.Errorf("%w %d/%d: shards count from 1 (1/%d to %d/%d); for a Kubernetes Indexed Job pass $((JOB_COMPLETION_INDEX+1))/%d", ErrShard, i, n, n, n, n, n)
	case i < 1 || i > n:
		return fmt.Errorf("%w %d/%d: expected a shard from 1/%d to %d/%d", ErrShard, i, n, n, n, n)
	}
	return nil
}

// Shard picks the points of shard i of n: those whose Index is i-1
// modulo n. Dealing by index rather than cutting the list into runs
// spreads every part of the grid (the expensive corner of short holds
// as much as the rest) evenly over the shards, and every point falls in
// exactly one shard whatever n is.
func Shard(points []Point, i, n int) ([]Point, error) {
	if err := checkShard(i, n); err != nil {
		return nil, err
	}
	var out []Point
	for _, p := range points {
		if p.Index%n == i-1 {
			out = append(out, p)
		}
	}
	return out, nil
}

// shardOf is the shard (from 1) that holds the point of this index.
func shardOf(index, n int) int { return index%n + 1 }

// Apply makes the scenario run the point: the ABR (kind abr) with the
// point's parameters, every other controller setting (initial bitrate,
// bounds, the parameters the grid does not vary) and the ABR switches
// kept as the scenario has them. A scenario with scripted steps is
// refused: it has no adaptive bitrate to tune. The expectations are
// dropped: they bound the documented parameters, and a sweep's points
// are meant to miss them.
func (p Point) Apply(sc *scenarios.Scenario) error {
	c := &sc.Controller
	if c.Kind == "steps" {
		return fmt.Errorf("scenario %s scripts its bitrate (controller kind steps): no ABR to sweep", sc.Name)
	}
	c.Kind = "abr"
	for _, a := range axes {
		if a.dur != nil {
			if v := *a.dur(&p); v != 0 {
				*c.ABRDuration(a.key) = v
			}
		} else if v := *a.share(&p); v != 0 {
			*c.ABRShare(a.key) = v
		}
	}
	sc.Expect = nil
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("scenario %s at point %s: %w", sc.Name, p.ID, err)
	}
	return nil
}

// Variant is the point as a jobs.Variant, labelled by its ID.
func (p Point) Variant() jobs.Variant {
	return jobs.Variant{Label: p.ID, Apply: p.Apply}
}
