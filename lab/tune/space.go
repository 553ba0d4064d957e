// Package tune searches the ABR's parameters (finding N10's threshold,
// window, sustain, close, decrease, increase and hold, and the bitrate's
// bounds when asked) for the setting that scores best on a set of
// scenarios, with a real optimiser: CMA-ES, gonum's optimize.CmaEsChol.
//
// A tune is a series of steps, each a grid of candidates
// (grid.Grid.Candidates) that lab sweep runs like any grid, sharded or
// not, into the sweep's part files. Everything lives in a state folder:
// the settings (tune.json), the step waiting for its sessions
// (pending/grid.yaml, its parts in pending/parts) and the steps done
// (steps/NN-NAME, each its grid and parts). Ask writes the first step;
// Tell merges the pending step's parts, moves it to the steps and writes
// the next, or, when the search and its validation are done, the report.
// So the tune runs the same on one machine (lab tune, which runs each step
// itself) as on a cluster (lab tune -ask, an Indexed Job of lab sweep
// shards per step, lab tune -tell), and what the steps measured is never
// held anywhere but in their part files.
//
// The optimiser keeps no state between steps: Tell builds it afresh from
// the settings' seed and feeds it the scores of every step done, in order,
// checking that it proposes again exactly the candidates each step ran.
// CMA-ES is deterministic for a seed, so the replay is exact.
package tune

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Param is one parameter of the search: a sweep axis (its key), the
// range searched, and the write-up's value, where the search starts.
// Values are in the axis's unit as a number: seconds for durations, a
// fraction for the steps, bits/s for the bounds.
type Param struct {
	Key string `json:"key"`
	// Lo and Hi bound the range searched.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// Log searches the range on a log scale: a threshold of 10 ms against
	// 20 ms matters as much as 100 ms against 200 ms.
	Log bool `json:"log"`
	// Round is the step values are rounded to, so that a candidate is
	// one a scenario file can write and its ID stays short.
	Round float64 `json:"round"`
	// Start is the write-up's value (N10), or the ABR's default.
	Start float64 `json:"start"`
}

// Params are the parameters a tune can search, with their ranges: wide
// enough to hold every setting worth trying on a desktop stream, narrow
// enough that the optimiser's first steps land on sensible ones.
//
// The bounds' ranges do not overlap, so that no candidate puts its floor
// above its ceiling.
var Params = []Param{
	{Key: "threshold", Lo: 0.010, Hi: 0.250, Log: true, Round: 0.001, Start: abr.DefaultThreshold.Seconds()},
	{Key: "window", Lo: 0.250, Hi: 4, Log: true, Round: 0.010, Start: abr.DefaultWindow.Seconds()},
	{Key: "sustain", Lo: 0.100, Hi: 4, Log: true, Round: 0.010, Start: abr.DefaultSustain.Seconds()},
	{Key: "close", Lo: 0.002, Hi: 0.080, Log: true, Round: 0.001, Start: abr.DefaultClose.Seconds()},
	{Key: "decrease", Lo: 0.03, Hi: 0.50, Log: true, Round: 0.001, Start: abr.DefaultDecrease},
	{Key: "increase", Lo: 0.02, Hi: 0.50, Log: true, Round: 0.001, Start: abr.DefaultIncrease},
	{Key: "hold", Lo: 0.200, Hi: 5, Log: true, Round: 0.010, Start: abr.DefaultHold.Seconds()},
	{Key: "min", Lo: 50e3, Hi: 1e6, Log: true, Round: 10e3, Start: float64(abr.DefaultMin)},
	{Key: "max", Lo: 1.2e6, Hi: 50e6, Log: true, Round: 100e3, Start: float64(abr.DefaultMax)},
}

// DefaultParams are searched unless the tune names others: the ABR's
// rule, without the bitrate's bounds, which belong to the test cases
// (the RMCAT cases fix 150 kbit/s to 1.5 Mbit/s).
var DefaultParams = []string{"threshold", "window", "sustain", "close", "decrease", "increase", "hold"}

// ParamsByKey looks the named parameters up, in the order given.
func ParamsByKey(keys []string) ([]Param, error) {
	var out []Param
	for _, k := range keys {
		i := slices.IndexFunc(Params, func(p Param) bool { return p.Key == k })
		switch {
		case i < 0:
			return nil, fmt.Errorf("unknown parameter %q: expected some of %s", k, strings.Join(paramKeys(), ", "))
		case slices.ContainsFunc(out, func(p Param) bool { return p.Key == k }):
			return nil, fmt.Errorf("parameter %s is given twice", k)
		}
		out = append(out, Params[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no parameters: expected some of %s", strings.Join(paramKeys(), ", "))
	}
	return out, nil
}

func paramKeys() []string {
	out := make([]string, len(Params))
	for i, p := range Params {
		out[i] = p.Key
	}
	return out
}

// unit maps a value of the range to [0, 1].
func (p Param) unit(v float64) float64 {
	if p.Log {
		return math.Log(v/p.Lo) / math.Log(p.Hi/p.Lo)
	}
	return (v - p.Lo) / (p.Hi - p.Lo)
}

// value maps an optimiser's coordinate to the range. The optimiser
// searches all of R^n; the coordinate is folded into [0, 1] by
// reflection at its ends (a triangle wave), which keeps the map
// continuous, so a step past a bound comes back inside rather than
// sticking to it, then mapped and rounded.
func (p Param) value(x float64) float64 {
	u := math.Mod(math.Abs(x), 2)
	if u > 1 {
		u = 2 - u
	}
	var v float64
	if p.Log {
		v = p.Lo * math.Pow(p.Hi/p.Lo, u)
	} else {
		v = p.Lo + u*(p.Hi-p.Lo)
	}
	v = math.Round(v/p.Round) * p.Round
	return math.Min(math.Max(v, p.Lo), p.Hi)
}

// start is where the optimiser starts: the write-up's values.
func start(ps []Param) []float64 {
	x := make([]float64, len(ps))
	for i, p := range ps {
		x[i] = p.unit(p.Start)
	}
	return x
}

// point is the candidate at the optimiser's coordinates x.
func point(ps []Param, x []float64) grid.Point {
	var pt grid.Point
	for i, p := range ps {
		set(&pt, p.Key, p.value(x[i]))
	}
	return pt
}

// WriteUp is the write-up's setting (N10) of the parameters: the point
// the search starts from, and the reference its scores are read against.
func WriteUp(ps []Param) grid.Point {
	var pt grid.Point
	for _, p := range ps {
		set(&pt, p.Key, p.Start)
	}
	return pt
}

// set puts v, in the parameter's unit, into the point, written as a grid
// file writes it and read by the sweep's parser: a share to a tenth of a
// percent ("18.5%", which reads back as the same float64 every time), a
// rate in bits/s, a duration to the nanosecond.
func set(pt *grid.Point, key string, v float64) {
	var text string
	switch key {
	case "decrease", "increase":
		text = strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
	case "min", "max":
		text = strconv.FormatInt(int64(math.Round(v)), 10) + "bit/s"
	default:
		text = scenarios.FormatDuration(time.Duration(math.Round(v * 1e9)))
	}
	if err := pt.Set(key, text); err != nil {
		panic("tune: a value of the search's range out of the sweep's: " + err.Error())
	}
}

// Snippet writes the point as a scenario's controller, to paste.
func Snippet(pt grid.Point) string {
	var kv []string
	add := func(k, v string) { kv = append(kv, k+": "+v) }
	if pt.Min != 0 {
		add("min", scenarios.FormatRate(pt.Min))
	}
	if pt.Max != 0 {
		add("max", scenarios.FormatRate(pt.Max))
	}
	for _, d := range []struct {
		k string
		v time.Duration
	}{{"window", pt.Window}, {"threshold", pt.Threshold}, {"sustain", pt.Sustain}, {"close", pt.Close}, {"hold", pt.Hold}} {
		if d.v != 0 {
			add(d.k, scenarios.FormatDuration(d.v))
		}
	}
	for _, s := range []struct {
		k string
		v float64
	}{{"decrease", pt.Decrease}, {"increase", pt.Increase}} {
		if s.v != 0 {
			add(s.k, scenarios.FormatPercent(s.v))
		}
	}
	return "controller: {kind: abr, " + strings.Join(kv, ", ") + "}"
}
