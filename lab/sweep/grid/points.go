package grid

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	Window    time.Duration `json:"window_ns,omitempty"`
	// Min and Max are the bitrate's bounds, in bits/s.
	Min int64 `json:"min_bps,omitempty"`
	Max int64 `json:"max_bps,omitempty"`
}

// Points enumerates the grid's points: the cartesian product of its axes
// in the order of AxisKeys, the first axis varying slowest and each
// axis's values in the order given; or, when the grid lists Candidates,
// those, in their order. The order is part of the grid, so the same grid
// gives the same points, indices and IDs on every machine.
//
// An ID writes each varied parameter's letter (t threshold, d decrease,
// i increase, h hold, s sustain, c close, w window, min and
// max the bitrate's bounds) before its value, joined by "/":
// "t60ms/d20%/i15%/h1500ms" (a rate without its "/s": "max2500kbit"). A
// grid that varies nothing has one point, "as-written".
func (g Grid) Points() []Point {
	if len(g.Candidates) > 0 {
		points := slices.Clone(g.Candidates)
		for i := range points {
			points[i].Index = i
			points[i].ID = points[i].id()
		}
		return points
	}
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
				a.copyValue(&g, i, &q)
				next = append(next, q)
			}
		}
		points = next
	}
	for i := range points {
		points[i].Index = i
		points[i].ID = points[i].id()
	}
	return points
}

// id names the point by the parameters it sets, in the order of AxisKeys.
func (p Point) id() string {
	var parts []string
	for _, a := range axes {
		if a.set(&p) {
			parts = append(parts, a.letter+strings.TrimSuffix(a.formatPoint(&p), "/s"))
		}
	}
	if len(parts) == 0 {
		return "as-written"
	}
	return strings.Join(parts, "/")
}

// Set sets one parameter of the point from a value as a grid file writes
// it ("63ms", "18.5%", "1500kbit/s"), with the grid's checks.
func (p *Point) Set(key, value string) error {
	a, ok := axisByKey(key)
	if !ok {
		return fmt.Errorf("unknown parameter %q: expected %s", key, strings.Join(AxisKeys(), ", "))
	}
	var one Grid
	if err := a.parse(&one, value); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	a.copyValue(&one, 0, p)
	return nil
}

// varied lists the axes the grid varies: those with values, or, for a
// grid of candidates, those any candidate sets.
func (g Grid) varied() []axis {
	var out []axis
	for _, a := range axes {
		if a.length(&g) > 0 || slices.ContainsFunc(g.Candidates, func(p Point) bool { return a.set(&p) }) {
			out = append(out, a)
		}
	}
	return out
}

// Params lists the values of the varied parameters, in the order of
// AxisKeys, formatted as grid files write them; keys gives their names.
func (p Point) Params(g Grid) (keys, values []string) {
	for _, a := range g.varied() {
		keys = append(keys, a.key)
		if a.set(&p) {
			values = append(values, a.formatPoint(&p))
		} else {
			values = append(values, "as written")
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

// ShardOf is the shard (from 1 to n) that holds the point of this index.
func ShardOf(index, n int) int { return index%n + 1 }

// Apply makes the scenario run the point: the ABR (kind abr) with the
// point's parameters, every other controller setting (initial bitrate,
// bounds, the parameters the grid does not vary) and the ABR switches
// kept as the scenario has them (the initial bitrate moved within the
// bounds when the point sets them). A scenario with scripted steps is
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
		switch {
		case !a.set(&p):
		case a.dur != nil:
			*c.ABRDuration(a.key) = *a.dur(&p)
		case a.key == "min":
			c.Min = p.Min
		case a.key == "max":
			c.Max = p.Max
		default:
			*c.ABRShare(a.key) = *a.share(&p)
		}
	}
	// Bounds the point sets hold the start too: the ABR starts at its
	// initial bitrate, which must lie within them.
	if p.Min != 0 {
		c.Bitrate = max(c.Bitrate, p.Min)
	}
	if p.Max != 0 {
		c.Bitrate = min(c.Bitrate, p.Max)
	}
	sc.Expect = nil
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("scenario %s at point %s: %w", sc.Name, p.ID, err)
	}
	return nil
}
