// Package grid is the ABR sweep's grid: the parameters it varies
// (finding N10: threshold, decrease, increase, hold, and the sustain and
// close of N10/N14, the window and the bitrate's bounds), each axis's
// values or a list of candidate points, the scenarios and seeds, read
// strictly from a grid file (Load, Parse) and written back (Format); its
// points in a fixed order (Points) and their shards (Shard). It is plain
// data and parsing, apart from the sessions that run it (package sweep),
// so that its parser is fuzzed without building the lab.
package grid

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/scenarios"
)

// DefaultWarmup is the warm-up Parse and the flags use when none is
// given: the first two seconds hold the first keyframe and the start-up
// of the pipeline, the same for every point, which would only blur the
// differences the sweep is after.
const DefaultWarmup = 2 * time.Second

// Grid is a sweep: the values of each ABR parameter to try, the scenarios
// to try them on and the seeds. Every combination of the axes' values is a
// point (Points); an empty axis leaves that parameter as each scenario has
// it (the ABR's default, N10, unless the scenario sets it).
//
// In JSON, durations are whole nanoseconds in fields ending in _ns and
// percentages are fractions, as in the lab's results.
type Grid struct {
	// Threshold, Hold, Sustain and Close are the ABR's durations
	// (scenarios.Controller): the excess of the median latency over the
	// baseline that counts as a queue, the pause after each change, how
	// long the excess must last, and how near the baseline the median must
	// stay for the bitrate to rise.
	Threshold []time.Duration `json:"threshold_ns,omitempty"`
	Hold      []time.Duration `json:"hold_ns,omitempty"`
	Sustain   []time.Duration `json:"sustain_ns,omitempty"`
	Close     []time.Duration `json:"close_ns,omitempty"`
	// Decrease and Increase are the ABR's steps, as fractions (0.2 is
	// -20%, 0.15 is +15%).
	Decrease []float64 `json:"decrease,omitempty"`
	Increase []float64 `json:"increase,omitempty"`
	// Window is the span whose median latency the ABR judges. (Its
	// baseline span is left to the scenarios: the jobs' flag -baseline is
	// the nightly's.)
	Window []time.Duration `json:"window_ns,omitempty"`
	// Min and Max bound the bitrate, in bits/s. They are part of a
	// scenario's test case (the RMCAT cases fix 150 kbit/s to 1.5 Mbit/s),
	// so a sweep or tune varies them only when asked.
	Min []int64 `json:"min_bps,omitempty"`
	Max []int64 `json:"max_bps,omitempty"`
	// Candidates, when given, are the grid's points themselves rather
	// than the product of the axes (which must then be empty): the points
	// a tune proposes, between any grid's values. Their Index and ID are
	// set by Points.
	Candidates []Point `json:"candidates,omitempty"`
	// Scenarios are names in the scenario library, or paths of scenario
	// files (anything ending in .yaml or .yml).
	Scenarios []string `json:"scenarios"`
	// Seeds replace each scenario's seed; none keeps each one's own.
	Seeds []uint64 `json:"seeds,omitempty"`
	// Warmup is left out of the measurements: they cover [Warmup, end).
	Warmup time.Duration `json:"warmup_ns"`
	// Duration cuts every scenario to this length (0 keeps each one's
	// own), for quick sweeps; a scenario whose timeline changes at or after
	// the cut is refused rather than silently changed.
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// axis is one ABR parameter of the grid: its key in grid files and flags,
// the letter that names it in point IDs, and where its values live in a
// Grid and a Point (in a scenarios.Controller, the key names the field:
// Controller.ABRDuration, ABRShare, Min and Max). Exactly one of the pairs
// (durs, dur), (shares, share) and (rates, rate) is set.
type axis struct {
	key, letter string
	what        string // for errors: "a duration above 0s"

	durs func(*Grid) *[]time.Duration
	dur  func(*Point) *time.Duration

	shares func(*Grid) *[]float64
	share  func(*Point) *float64
	ok     func(float64) bool

	rates func(*Grid) *[]int64
	rate  func(*Point) *int64
}

// axes are the grid's parameters, in the order points are enumerated
// (the first varies slowest) and IDs are written.
var axes = []axis{
	{key: "threshold", letter: "t", what: "a duration above 0s, like 60ms",
		durs: func(g *Grid) *[]time.Duration { return &g.Threshold },
		dur:  func(p *Point) *time.Duration { return &p.Threshold }},
	{key: "decrease", letter: "d", what: "a percentage above 0% and below 100%, like 20%",
		shares: func(g *Grid) *[]float64 { return &g.Decrease },
		share:  func(p *Point) *float64 { return &p.Decrease },
		ok:     func(f float64) bool { return f > 0 && f < 1 }},
	{key: "increase", letter: "i", what: "a percentage above 0%, like 15%",
		shares: func(g *Grid) *[]float64 { return &g.Increase },
		share:  func(p *Point) *float64 { return &p.Increase },
		ok:     func(f float64) bool { return f > 0 }},
	{key: "hold", letter: "h", what: "a duration above 0s, like 1.5s",
		durs: func(g *Grid) *[]time.Duration { return &g.Hold },
		dur:  func(p *Point) *time.Duration { return &p.Hold }},
	{key: "sustain", letter: "s", what: "a duration above 0s, like 1s",
		durs: func(g *Grid) *[]time.Duration { return &g.Sustain },
		dur:  func(p *Point) *time.Duration { return &p.Sustain }},
	{key: "close", letter: "c", what: "a duration above 0s, like 20ms",
		durs: func(g *Grid) *[]time.Duration { return &g.Close },
		dur:  func(p *Point) *time.Duration { return &p.Close }},
	// Added after the first six: a new axis goes last, so that the grids
	// written before keep their points, indices and IDs.
	{key: "window", letter: "w", what: "a duration above 0s, like 1s",
		durs: func(g *Grid) *[]time.Duration { return &g.Window },
		dur:  func(p *Point) *time.Duration { return &p.Window }},
	{key: "min", letter: "min", what: "a rate above 0bit/s, like 150kbit/s",
		rates: func(g *Grid) *[]int64 { return &g.Min },
		rate:  func(p *Point) *int64 { return &p.Min }},
	{key: "max", letter: "max", what: "a rate above 0bit/s, like 1.5Mbit/s",
		rates: func(g *Grid) *[]int64 { return &g.Max },
		rate:  func(p *Point) *int64 { return &p.Max }},
}

// AxisKeys are the grid's parameters as grid files and flags name them,
// in the order Points enumerates them.
func AxisKeys() []string {
	out := make([]string, len(axes))
	for i, a := range axes {
		out[i] = a.key
	}
	return out
}

// AxisWhat says what values the axis of this key takes, as a flag's help
// says it: "a duration above 0s, like 60ms". It is empty for a key that
// names no axis.
func AxisWhat(key string) string {
	a, _ := axisByKey(key)
	return a.what
}

// Values are the values of the axis of this key in g, written as a grid
// file writes them, in their order; none for an axis g does not vary.
func (g *Grid) Values(key string) []string {
	a, ok := axisByKey(key)
	if !ok {
		return nil
	}
	var vals []string
	for i := range a.length(g) {
		vals = append(vals, a.format(g, i))
	}
	return vals
}

// length is how many values the axis has in g.
func (a axis) length(g *Grid) int {
	switch {
	case a.durs != nil:
		return len(*a.durs(g))
	case a.rates != nil:
		return len(*a.rates(g))
	}
	return len(*a.shares(g))
}

// format writes the axis's i-th value in g as a grid file would.
func (a axis) format(g *Grid, i int) string {
	switch {
	case a.durs != nil:
		return scenarios.FormatDuration((*a.durs(g))[i])
	case a.rates != nil:
		return scenarios.FormatRate((*a.rates(g))[i])
	}
	return scenarios.FormatPercent((*a.shares(g))[i])
}

// set says whether the point sets the axis's parameter (a zero value
// leaves the scenario's own).
func (a axis) set(p *Point) bool {
	switch {
	case a.dur != nil:
		return *a.dur(p) != 0
	case a.rate != nil:
		return *a.rate(p) != 0
	}
	return *a.share(p) != 0
}

// formatPoint writes the point's value of the axis as a grid file would.
func (a axis) formatPoint(p *Point) string {
	switch {
	case a.dur != nil:
		return scenarios.FormatDuration(*a.dur(p))
	case a.rate != nil:
		return scenarios.FormatRate(*a.rate(p))
	}
	return scenarios.FormatPercent(*a.share(p))
}

// copyValue sets the point's value of the axis to the grid's i-th.
func (a axis) copyValue(g *Grid, i int, p *Point) {
	switch {
	case a.durs != nil:
		*a.dur(p) = (*a.durs(g))[i]
	case a.rates != nil:
		*a.rate(p) = (*a.rates(g))[i]
	default:
		*a.share(p) = (*a.shares(g))[i]
	}
}

// parse reads one value of the axis and appends it to g. Its errors are
// the unit parsers' messages, which the callers place (file:line or flag).
func (a axis) parse(g *Grid, s string) error {
	if a.durs != nil {
		d, err := scenarios.ParseDuration(s)
		if err != nil {
			return err
		}
		if d <= 0 {
			return fmt.Errorf("%s out of range: expected %s", s, a.what)
		}
		if slices.Contains(*a.durs(g), d) {
			return fmt.Errorf("%s is given twice: each value once, or two points would be the same", s)
		}
		*a.durs(g) = append(*a.durs(g), d)
		return nil
	}
	if a.rates != nil {
		r, err := scenarios.ParseRate(s)
		if err != nil {
			return err
		}
		if r <= 0 {
			return fmt.Errorf("%s out of range: expected %s", s, a.what)
		}
		if slices.Contains(*a.rates(g), r) {
			return fmt.Errorf("%s is given twice: each value once, or two points would be the same", s)
		}
		*a.rates(g) = append(*a.rates(g), r)
		return nil
	}
	// ParsePercent reads 0% to 100%: an increase above 100% (more than
	// doubling per step) is out of a sweep's reach, which is a range worth
	// the shared parser rather than one of our own.
	f, err := scenarios.ParsePercent(s)
	if err != nil {
		return err
	}
	if !a.ok(f) {
		return fmt.Errorf("%s out of range: expected %s", s, a.what)
	}
	if slices.Contains(*a.shares(g), f) {
		return fmt.Errorf("%s is given twice: each value once, or two points would be the same", s)
	}
	*a.shares(g) = append(*a.shares(g), f)
	return nil
}

// clear empties the axis in g.
func (a axis) clear(g *Grid) {
	switch {
	case a.durs != nil:
		*a.durs(g) = nil
	case a.rates != nil:
		*a.rates(g) = nil
	default:
		*a.shares(g) = nil
	}
}

func axisByKey(key string) (axis, bool) {
	for _, a := range axes {
		if a.key == key {
			return a, true
		}
	}
	return axis{}, false
}

// SetAxis replaces the values of one parameter with a comma-separated
// list as the flags write it ("30ms,60ms,90ms", "10%,20%"); an empty list
// empties the axis (the scenarios' own value).
func (g *Grid) SetAxis(key, list string) error {
	a, ok := axisByKey(key)
	if !ok {
		return fmt.Errorf("unknown parameter %q: expected %s", key, strings.Join(AxisKeys(), ", "))
	}
	a.clear(g)
	if strings.TrimSpace(list) == "" {
		return nil
	}
	for _, s := range strings.Split(list, ",") {
		if err := a.parse(g, strings.TrimSpace(s)); err != nil {
			return err
		}
	}
	return nil
}

// SetScenarios replaces the scenarios with a comma-separated list.
func (g *Grid) SetScenarios(list string) error {
	g.Scenarios = nil
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			g.Scenarios = append(g.Scenarios, s)
		}
	}
	return checkNames(g.Scenarios)
}

// SetSeeds replaces the seeds with a comma-separated list of whole
// numbers; an empty list keeps each scenario's own seed.
func (g *Grid) SetSeeds(list string) error {
	g.Seeds = nil
	if strings.TrimSpace(list) == "" {
		return nil
	}
	for _, s := range strings.Split(list, ",") {
		if err := g.addSeed(strings.TrimSpace(s)); err != nil {
			return err
		}
	}
	return nil
}

func (g *Grid) addSeed(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a seed: expected a whole number of 0 or more", s)
	}
	if slices.Contains(g.Seeds, v) {
		return fmt.Errorf("seed %d is given twice", v)
	}
	g.Seeds = append(g.Seeds, v)
	return nil
}

func checkNames(names []string) error {
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return fmt.Errorf("scenario %s is given twice", n)
		}
	}
	return nil
}

// Validate checks what the parsers cannot check value by value: there
// are scenarios, the warm-up leaves something to measure, and no axis
// holds a value twice or out of range (a Grid built in Go).
func (g Grid) Validate() error {
	var errs []error
	if len(g.Scenarios) == 0 {
		errs = append(errs, errors.New("no scenarios: expected at least one, like abr-lossy"))
	}
	if err := checkNames(g.Scenarios); err != nil {
		errs = append(errs, err)
	}
	for i, s := range g.Seeds {
		if slices.Contains(g.Seeds[:i], s) {
			errs = append(errs, fmt.Errorf("seed %d is given twice", s))
		}
	}
	if g.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warmup %s out of range: expected 0s or more", scenarios.FormatDuration(g.Warmup)))
	}
	if g.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration %s out of range: expected a duration above 0s, or none", scenarios.FormatDuration(g.Duration)))
	}
	if g.Duration > 0 && g.Warmup >= g.Duration {
		errs = append(errs, fmt.Errorf("warmup %s is not shorter than duration %s: nothing would be measured",
			scenarios.FormatDuration(g.Warmup), scenarios.FormatDuration(g.Duration)))
	}
	for _, a := range axes {
		var check Grid
		for i := range a.length(&g) {
			if err := a.parse(&check, a.format(&g, i)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", a.key, err))
			}
		}
	}
	errs = append(errs, g.checkCandidates()...)
	return errors.Join(errs...)
}

// checkCandidates checks a grid's candidates: no axes beside them, each
// value in range, no point twice.
func (g Grid) checkCandidates() []error {
	if len(g.Candidates) == 0 {
		return nil
	}
	var errs []error
	for _, a := range axes {
		if a.length(&g) > 0 {
			errs = append(errs, fmt.Errorf("%s: a grid lists its candidates or its axes' values, not both", a.key))
		}
	}
	seen := map[string]int{}
	for i, p := range g.Points() {
		if err := p.check(); err != nil {
			errs = append(errs, fmt.Errorf("candidates[%d]: %w", i, err))
		}
		if j, dup := seen[p.ID]; dup {
			errs = append(errs, fmt.Errorf("candidates[%d]: the same as candidates[%d] (%s)", i, j, p.ID))
		}
		seen[p.ID] = i
	}
	return errs
}

// check tells whether every value the point sets is in its axis's range.
func (p Point) check() error {
	var errs []error
	for _, a := range axes {
		if !a.set(&p) {
			continue
		}
		var one Grid
		if err := a.parse(&one, a.formatPoint(&p)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", a.key, err))
		}
	}
	if p.Min != 0 && p.Max != 0 && p.Min > p.Max {
		errs = append(errs, fmt.Errorf("min %s is above max %s", scenarios.FormatRate(p.Min), scenarios.FormatRate(p.Max)))
	}
	return errors.Join(errs...)
}

// Load reads a grid file (Parse).
func Load(file string) (Grid, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Grid{}, err
	}
	return Parse(file, data)
}

// gridKeys are the keys of a grid file besides the axes.
var gridKeys = []string{"candidates", "scenarios", "seeds", "warmup", "duration"}

// Parse reads a grid file: a YAML mapping of the axes (each a list of
// values with their units, or a single value), scenarios (a list of
// names or files), seeds (a list of whole numbers), warmup and duration
// (durations):
//
//	threshold: [30ms, 60ms, 90ms, 120ms]
//	decrease: [10%, 20%, 30%]
//	increase: [5%, 15%, 25%]
//	hold: [1s, 1.5s]
//	scenarios: [abr-capacity-drop, abr-lossy]
//	seeds: [1]
//	warmup: 2s
//
// Like scenario files it is strict: an unknown key, a value without its
// unit or in the wrong one, a value given twice are errors naming file,
// line and key (*scenarios.Error values, all of them joined). Left out,
// warmup is DefaultWarmup. The scenarios may be left for the flags.
func Parse(file string, data []byte) (Grid, error) {
	g := Grid{Warmup: DefaultWarmup}
	var errs []error
	fail := func(n *yaml.Node, field, msg string) {
		errs = append(errs, &scenarios.Error{File: file, Line: n.Line, Field: field, Msg: msg})
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return g, &scenarios.Error{File: file, Line: 1, Msg: "empty file: expected a grid, a mapping of threshold, decrease, increase, hold, scenarios, ..."}
	case err != nil:
		// yaml's message carries the line ("yaml: line 3: ...").
		return g, &scenarios.Error{File: file, Msg: err.Error()}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return g, &scenarios.Error{File: file, Line: root.Line, Msg: "expected a mapping of threshold, decrease, increase, hold, scenarios, ..."}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if seen[key] {
			fail(k, key, "given twice")
			continue
		}
		seen[key] = true
		// A list, or a single value standing for a list of one.
		items := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			items = v.Content
		}
		scalars := func(what string) bool {
			for _, it := range items {
				if it.Kind != yaml.ScalarNode {
					fail(it, key, "expected "+what)
					return false
				}
			}
			return true
		}
		single := func(what string) (*yaml.Node, bool) {
			if v.Kind != yaml.ScalarNode {
				fail(v, key, "expected "+what)
				return nil, false
			}
			return v, true
		}
		if a, ok := axisByKey(key); ok {
			if !scalars(a.what + " or a list of them") {
				continue
			}
			for j, it := range items {
				if err := a.parse(&g, it.Value); err != nil {
					fail(it, fmt.Sprintf("%s[%d]", key, j), err.Error())
				}
			}
			continue
		}
		switch key {
		case "candidates":
			if v.Kind != yaml.SequenceNode {
				fail(v, key, "expected a list of points like [{threshold: 63ms, decrease: 18.5%}]")
				continue
			}
			for j, it := range v.Content {
				p, err := parseCandidate(file, fmt.Sprintf("candidates[%d]", j), it)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				g.Candidates = append(g.Candidates, p)
			}
		case "scenarios":
			if !scalars("a scenario name or file, or a list of them") {
				continue
			}
			for j, it := range items {
				if slices.Contains(g.Scenarios, it.Value) {
					fail(it, fmt.Sprintf("scenarios[%d]", j), fmt.Sprintf("scenario %s is given twice", it.Value))
					continue
				}
				g.Scenarios = append(g.Scenarios, it.Value)
			}
		case "seeds":
			if !scalars("a seed or a list of them") {
				continue
			}
			for j, it := range items {
				if err := g.addSeed(it.Value); err != nil {
					fail(it, fmt.Sprintf("seeds[%d]", j), err.Error())
				}
			}
		case "warmup", "duration":
			n, ok := single("a duration")
			if !ok {
				continue
			}
			d, err := scenarios.ParseDuration(n.Value)
			switch {
			case err != nil:
				fail(n, key, err.Error())
			case d < 0 || (key == "duration" && d == 0):
				fail(n, key, fmt.Sprintf("%s out of range: expected a duration above 0s", n.Value))
			case key == "warmup":
				g.Warmup = d
			default:
				g.Duration = d
			}
		default:
			fail(k, key, fmt.Sprintf("unknown key %q: expected %s", key, strings.Join(append(AxisKeys(), gridKeys...), ", ")))
		}
	}
	if len(errs) == 0 {
		for _, err := range g.checkCandidates() {
			errs = append(errs, &scenarios.Error{File: file, Field: "candidates", Msg: err.Error()})
		}
	}
	return g, errors.Join(errs...)
}

// parseCandidate reads one point of a grid's candidates: a mapping of
// axis keys to one value each.
func parseCandidate(file, field string, n *yaml.Node) (Point, error) {
	var p Point
	if n.Kind != yaml.MappingNode {
		return p, &scenarios.Error{File: file, Line: n.Line, Field: field, Msg: "expected a mapping of parameters like {threshold: 63ms, decrease: 18.5%}"}
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		at := field + "." + k.Value
		a, ok := axisByKey(k.Value)
		switch {
		case !ok:
			errs = append(errs, &scenarios.Error{File: file, Line: k.Line, Field: at, Msg: fmt.Sprintf("unknown parameter %q: expected %s", k.Value, strings.Join(AxisKeys(), ", "))})
			continue
		case seen[k.Value]:
			errs = append(errs, &scenarios.Error{File: file, Line: k.Line, Field: at, Msg: "given twice"})
			continue
		case v.Kind != yaml.ScalarNode:
			errs = append(errs, &scenarios.Error{File: file, Line: v.Line, Field: at, Msg: "expected " + a.what})
			continue
		}
		seen[k.Value] = true
		var one Grid
		if err := a.parse(&one, v.Value); err != nil {
			errs = append(errs, &scenarios.Error{File: file, Line: v.Line, Field: at, Msg: err.Error()})
			continue
		}
		a.copyValue(&one, 0, &p)
	}
	if len(errs) == 0 && len(seen) == 0 {
		errs = append(errs, &scenarios.Error{File: file, Line: n.Line, Field: field, Msg: "no parameters: expected at least one, like {threshold: 63ms}"})
	}
	return p, errors.Join(errs...)
}

// Format writes the grid as a grid file that Parse reads back to
// the same grid: its axes or candidates, scenarios, seeds, warm-up and
// duration. The tune writes its generations so, for lab sweep to run.
func Format(g Grid) []byte {
	var b bytes.Buffer
	for _, a := range axes {
		if n := a.length(&g); n > 0 {
			vals := make([]string, n)
			for i := range n {
				vals[i] = a.format(&g, i)
			}
			fmt.Fprintf(&b, "%s: [%s]\n", a.key, strings.Join(vals, ", "))
		}
	}
	if len(g.Candidates) > 0 {
		b.WriteString("candidates:\n")
		for _, p := range g.Candidates {
			var kv []string
			for _, a := range axes {
				if a.set(&p) {
					kv = append(kv, a.key+": "+a.formatPoint(&p))
				}
			}
			fmt.Fprintf(&b, "  - {%s}\n", strings.Join(kv, ", "))
		}
	}
	fmt.Fprintf(&b, "scenarios: [%s]\n", strings.Join(g.Scenarios, ", "))
	if len(g.Seeds) > 0 {
		seeds := make([]string, len(g.Seeds))
		for i, s := range g.Seeds {
			seeds[i] = strconv.FormatUint(s, 10)
		}
		fmt.Fprintf(&b, "seeds: [%s]\n", strings.Join(seeds, ", "))
	}
	fmt.Fprintf(&b, "warmup: %s\n", scenarios.FormatDuration(g.Warmup))
	if g.Duration > 0 {
		fmt.Fprintf(&b, "duration: %s\n", scenarios.FormatDuration(g.Duration))
	}
	return b.Bytes()
}
