package scenarios

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder turns a merged node tree into a Scenario, walking the types of
// scenario.go by their tags. It checks what only the file can tell (syntax
// of values, units, keys, an explicit 0 where 0 makes no sense, since in
// the Scenario 0 means "none"); validate checks the rest on the Scenario,
// and the decoder's record of where each field was written gives those
// errors their lines.
type decoder struct {
	file, defaultsFile string
	fromDefaults       map[*yaml.Node]bool
	errs               *errorList
	// where maps a canonical field to where it is written; failed holds the
	// canonical fields with a decoding error, so that validate does not
	// report the zero left in their place as a second mistake.
	where  map[string]loc
	failed map[string]bool
	// used records the keys read, as "kind.key", for the test that checks
	// the example files use every key of the format.
	used map[string]bool
}

// loc is where a field is written.
type loc struct {
	written string
	node    *yaml.Node
}

// nodeDecoder is implemented by the types whose YAML shape is not only a
// mapping of their fields (a distribution may be one duration, a path one
// word). It reports false when it decoded nothing, for a pointer to stay
// nil.
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, p fpath) bool
}

// keyDecoder reads a type's custom keys (format tag flag custom): a value
// whose reading depends on another field, or that fills several.
type keyDecoder interface {
	decodeKey(d *decoder, key string, n *yaml.Node, p fpath)
}

// finisher completes a mapping once its keys are read: defaults that
// depend on what was given.
type finisher interface {
	finish(o *object)
}

func newDecoder(file, defaultsFile string, defaults *yaml.Node, errs *errorList) *decoder {
	return &decoder{
		file: file, defaultsFile: defaultsFile, fromDefaults: nodesOf(defaults), errs: errs,
		where: map[string]loc{}, failed: map[string]bool{}, used: map[string]bool{},
	}
}

// fileOf is the file a node was read from.
func (d *decoder) fileOf(n *yaml.Node) string {
	if d.fromDefaults[n] {
		return d.defaultsFile
	}
	return d.file
}

// inherited tells whether a field's value came from the defaults file.
func (d *decoder) inherited(field string) bool {
	l, ok := d.where[field]
	return ok && d.fromDefaults[l.node]
}

// fail reports a mistake in the value n written at p.
func (d *decoder) fail(n *yaml.Node, p fpath, msg string) {
	d.failed[p.canon] = true
	d.errs.add(Error{File: d.fileOf(n), Line: n.Line, Field: p.written, Msg: msg})
}

// report is validate's reporter: it places an error on the field's line,
// or on the line of the nearest enclosing mapping when the field is not
// written (a missing field), and drops it when the field, or one the check
// depends on, already failed to decode.
func (d *decoder) report(field string, related []string, msg string) {
	for _, f := range append([]string{field}, related...) {
		for g := range d.failed {
			if within(f, g) || within(g, f) {
				return
			}
		}
	}
	at := field
	for {
		if l, ok := d.where[at]; ok {
			d.errs.add(Error{File: d.fileOf(l.node), Line: l.node.Line, Field: l.written + field[len(at):], Msg: msg})
			return
		}
		if at == "" {
			d.errs.add(Error{File: d.file, Line: 1, Field: field, Msg: msg})
			return
		}
		at = parent(at)
	}
}

// object is a mapping of the format whose keys were checked.
type object struct {
	node *yaml.Node // the value as written, for the error's line
	vals map[string]*yaml.Node
}

// object reads n as a mapping of type t, the item'th of a list (-1 outside
// one): it reports keys that are not allowed (with the closest allowed
// one), duplicated keys and required keys that are missing, and records
// where each key is written. It returns nil when n is not a mapping.
func (d *decoder) object(n *yaml.Node, p fpath, t reflect.Type, item int) *object {
	kind, allowed := kindOf(t), keysOf(t)
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		d.fail(n, p, "expected a mapping with keys "+list(allowed)+", got "+describe(n))
		return nil
	}
	d.where[p.canon] = loc{p.written, n}
	o := &object{node: n, vals: map[string]*yaml.Node{}}
	keyLines := map[string]int{}
	for i := 0; i+1 < len(r.Content); i += 2 {
		k, v := r.Content[i], r.Content[i+1]
		name, ok := keyName(k)
		switch {
		case !ok:
			d.fail(k, p, "expected a key name, got "+describe(k))
			continue
		case name == "<<" && resolve(k).ShortTag() == "!!merge":
			d.fail(k, p.key(name), "YAML merge keys (<<) are not supported: values shared by many scenarios go in defaults.yaml")
			continue
		case !slices.Contains(allowed, name):
			msg := fmtf("unknown key %q:", name)
			if s := closest(name, allowed); s != "" {
				msg += " did you mean " + s + "?"
			}
			d.fail(k, p.key(name), msg+" allowed keys: "+list(allowed))
			continue
		}
		if line, dup := keyLines[name]; dup {
			d.fail(k, p.key(name), fmtf("duplicate key %s: already given at line %d", name, line))
			continue
		}
		keyLines[name] = k.Line
		o.vals[name] = v
		d.used[kind+"."+name] = true
		d.where[p.key(name).canon] = loc{p.key(name).written, v}
	}
	// Required keys first, then those required in a list's later items:
	// errors on one line keep this order.
	for _, later := range []bool{false, true} {
		for _, f := range fieldsOf(t) {
			need := f.required && !later || f.later && later && item > 0
			if need && o.get(f.key) == nil && !d.failed[p.key(f.key).canon] {
				d.fail(n, p.key(f.key), missing(kind, f.key))
			}
		}
	}
	return o
}

// get returns the value of key, or nil when it is absent or null.
func (o *object) get(key string) *yaml.Node {
	if v := o.vals[key]; v != nil && !isNull(v) {
		return v
	}
	return nil
}

// mapping reads n into v, a struct of scenario.go, key by key. It reports
// false when n is not a mapping.
func (d *decoder) mapping(v reflect.Value, n *yaml.Node, p fpath, item int) bool {
	o := d.object(n, p, v.Type(), item)
	if o == nil {
		return false
	}
	for _, f := range fieldsOf(v.Type()) {
		x := o.get(f.key)
		switch {
		case x == nil:
		case f.custom:
			v.Addr().Interface().(keyDecoder).decodeKey(d, f.key, x, p.key(f.key))
		default:
			d.value(v.Field(f.index), f, x, p.key(f.key))
		}
	}
	if h, ok := v.Addr().Interface().(finisher); ok {
		h.finish(o)
	}
	return true
}

// value reads n, written at p, into v as field f says.
func (d *decoder) value(v reflect.Value, f field, n *yaml.Node, p fpath) {
	if u, ok := units[f.unit]; ok {
		d.unit(v, f, u, n, p)
		return
	}
	switch f.unit {
	case "count":
		if x, ok := d.integer(n, p, 1, f.expected, f.hint); ok {
			v.SetInt(x)
		}
		return
	case "changes":
		v.SetFloat(d.screenRate(n, p))
		return
	case "seed":
		v.SetUint(d.seed(n, p))
		return
	}
	switch t := v.Type(); {
	case t.Kind() == reflect.String:
		s := d.str(n, p, f.expectedText())
		if f.nonempty && s == "" {
			d.fail(n, p, "empty "+f.key+": expected "+f.expectedText())
		}
		v.SetString(s)
	case t.Kind() == reflect.Bool:
		v.SetBool(d.boolean(n, p))
	case t == reflect.TypeFor[[]string]():
		v.Set(reflect.ValueOf(d.strList(n, p, f.expectedText())))
	case t.Kind() == reflect.Slice:
		nodes, paths := d.items(n, p, f.list, f.expectedText())
		for i, item := range nodes {
			e := reflect.New(t.Elem()).Elem()
			if h, ok := e.Addr().Interface().(nodeDecoder); ok {
				h.decodeNode(d, item, paths[i])
			} else {
				d.mapping(e, item, paths[i], i)
			}
			v.Set(reflect.Append(v, e))
		}
	case t.Kind() == reflect.Pointer:
		e := reflect.New(t.Elem())
		if d.structure(e.Elem(), n, p) {
			v.Set(e)
		}
	default:
		d.structure(v, n, p)
	}
}

// structure reads a struct, by its own decoder when it has one.
func (d *decoder) structure(v reflect.Value, n *yaml.Node, p fpath) bool {
	if h, ok := v.Addr().Interface().(nodeDecoder); ok {
		return h.decodeNode(d, n, p)
	}
	return d.mapping(v, n, p, -1)
}

// unit reads a value in the unit u and checks it against f's range.
func (d *decoder) unit(v reflect.Value, f field, u unitSpec, n *yaml.Node, p fpath) bool {
	x := reflect.New(u.typ)
	if err := x.Interface().(yaml.Unmarshaler).UnmarshalYAML(n); err != nil {
		d.fail(n, p, err.Error())
		return false
	}
	var num float64
	switch x := x.Elem(); x.Kind() {
	case reflect.Float64:
		num = x.Float()
	default:
		num = float64(x.Int())
	}
	if msg := u.check(f, resolve(n).Value, num); msg != "" {
		d.fail(n, p, msg)
		return false
	}
	v.Set(x.Elem().Convert(v.Type()))
	return true
}

// scalar returns n's text, or reports that n is not a scalar.
func (d *decoder) scalar(n *yaml.Node, p fpath, expected string) (string, bool) {
	s, err := scalarOf(n, expected)
	if err != nil {
		d.fail(n, p, err.Error())
		return "", false
	}
	return s, true
}

// str reads a string field.
func (d *decoder) str(n *yaml.Node, p fpath, expected string) string {
	s, _ := d.scalar(n, p, expected)
	return s
}

// boolean reads true or false; YAML 1.1's yes, no, on and off are refused
// because yaml.v3 reads them as strings and a reader would not know which.
func (d *decoder) boolean(n *yaml.Node, p fpath) bool {
	s, ok := d.scalar(n, p, "true or false")
	if !ok {
		return false
	}
	if resolve(n).ShortTag() != "!!bool" {
		d.fail(n, p, s+" is not a boolean: expected true or false")
		return false
	}
	return s == "true" || s == "True" || s == "TRUE"
}

// strList reads a list of strings.
func (d *decoder) strList(n *yaml.Node, p fpath, expected string) []string {
	r := resolve(n)
	if r.Kind != yaml.SequenceNode {
		d.fail(n, p, "expected "+expected+", got "+describe(n))
		return nil
	}
	var out []string
	for i, item := range r.Content {
		if s, ok := d.scalar(item, p.index(i), expected); ok {
			d.where[p.index(i).canon] = loc{p.index(i).written, item}
			out = append(out, s)
		}
	}
	return out
}

// items returns the elements of a list, or unless listOnly a mapping as a
// list of one (a single phase needs no list around it; its field names
// carry no index).
func (d *decoder) items(n *yaml.Node, p fpath, listOnly bool, expected string) ([]*yaml.Node, []fpath) {
	switch r := resolve(n); {
	case r.Kind == yaml.MappingNode && !listOnly:
		return []*yaml.Node{n}, []fpath{{p.canon + "[0]", p.written}}
	case r.Kind == yaml.SequenceNode:
		paths := make([]fpath, len(r.Content))
		for i := range r.Content {
			paths[i] = p.index(i)
		}
		return r.Content, paths
	}
	d.fail(n, p, "expected "+expected+", got "+describe(n))
	return nil, nil
}

// integer reads a plain whole number of at least lo.
func (d *decoder) integer(n *yaml.Node, p fpath, lo int64, expected, hint string) (int64, bool) {
	s, ok := d.scalar(n, p, expected)
	if !ok {
		return 0, false
	}
	v, err := parseInt(s, expected)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	if v < lo || v > math.MaxInt32 {
		d.fail(n, p, fmtf("%s out of range: expected %s from %d to %d%s", s, expected, lo, math.MaxInt32, hint))
		return 0, false
	}
	return v, true
}

// seed reads a seed: any uint64.
func (d *decoder) seed(n *yaml.Node, p fpath) uint64 {
	v, ok := d.scalar(n, p, "a whole number like 1")
	if !ok {
		return 0
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		d.fail(n, p, v+" is not a seed: expected a whole number from 0 to 18446744073709551615")
	}
	return seed
}

// screenRate reads how often a source changes: a plain number of changes
// (frames) per second, or the same with Hz.
func (d *decoder) screenRate(n *yaml.Node, p fpath) float64 {
	s, ok := d.scalar(n, p, "changes per second, like 30")
	if !ok {
		return 0
	}
	v, err := parseNumber(strings.TrimSuffix(s, "Hz"), "changes per second, like 30 or 30Hz")
	if err != nil {
		d.fail(n, p, err.Error())
		return 0
	}
	if !(v > 0) {
		d.fail(n, p, s+" out of range: expected changes per second above 0 (leave rate out for the source's own)")
		return 0
	}
	return v
}

// scenario reads the merged tree of a scenario file.
func (d *decoder) scenario(root *yaml.Node) *Scenario {
	s := &Scenario{File: d.file}
	d.where[""] = loc{"", root}
	d.mapping(reflect.ValueOf(s).Elem(), root, fpath{}, -1)
	return s
}

// The types whose shape is more than a mapping of their fields, and the
// defaults the loader fills in.

func (s *Scenario) finish(*object) {
	if s.Controller.Kind == "" {
		s.Controller.Kind = "fixed"
		if len(s.Controller.Steps) > 0 {
			s.Controller.Kind = "steps"
		}
	}
}

// decodeNode reads the two directions. `both` gives the same timeline to
// up and down; `up` or `down` replaces it for its direction, so defaults
// can set `both` and a scenario change one direction. `hops` replaces them
// all: given in the same file as any of them it is an error, and what
// the defaults give beside it is not used.
func (net *Network) decodeNode(d *decoder, n *yaml.Node, p fpath) bool {
	t := reflect.TypeFor[Network]()
	o := d.object(n, p, t, -1)
	if o == nil {
		return false
	}
	if hops := o.get("hops"); hops != nil {
		for _, k := range []string{"both", "up", "down", "up_mtu", "down_mtu"} {
			if v := o.get(k); v != nil && d.fileOf(v) == d.fileOf(hops) {
				d.fail(v, p.key(k), k+" and hops together: a path of hops gives each hop its own down and up; expected one or the other")
			}
		}
		d.value(reflect.ValueOf(&net.Hops).Elem(), fieldOf(t, "hops"), hops, p.key("hops"))
		return true
	}
	net.Up, net.Down, net.UpMTU, net.DownMTU = decodeDirections(d, o, p, t)
	return true
}

// decodeNode reads a hop: its name and its two directions, as a
// network's.
func (h *Hop) decodeNode(d *decoder, n *yaml.Node, p fpath) bool {
	t := reflect.TypeFor[Hop]()
	o := d.object(n, p, t, -1)
	if o == nil {
		return false
	}
	if v := o.get("name"); v != nil {
		d.value(reflect.ValueOf(&h.Name).Elem(), fieldOf(t, "name"), v, p.key("name"))
	}
	h.Up, h.Down, h.UpMTU, h.DownMTU = decodeDirections(d, o, p, t)
	return true
}

// decodeDirections reads the keys a network and a hop share, both, up,
// down, up_mtu and down_mtu, from o, an object of type t.
func decodeDirections(d *decoder, o *object, p fpath, t reflect.Type) (up, down []Phase, upMTU, downMTU int) {
	both, upNode, downNode := o.get("both"), o.get("up"), o.get("down")
	if both != nil && upNode != nil && downNode != nil && d.fileOf(both) == d.fileOf(upNode) && d.fileOf(both) == d.fileOf(downNode) {
		d.fail(both, p.key("both"), "both is never used: up and down are both given")
	}
	f := fieldOf(t, "up")
	dir := func(own *yaml.Node, name string) []Phase {
		at := p.key(name)
		if own == nil {
			if own = both; own == nil {
				return nil
			}
			at.written = p.key("both").written
		}
		var phases []Phase // an empty list is no impairments, like none
		d.value(reflect.ValueOf(&phases).Elem(), f, own, at)
		return phases
	}
	up, down = dir(upNode, "up"), dir(downNode, "down")
	for _, m := range []struct {
		key string
		to  *int
	}{{"up_mtu", &upMTU}, {"down_mtu", &downMTU}} {
		if v := o.get(m.key); v != nil {
			d.value(reflect.ValueOf(m.to).Elem(), fieldOf(t, m.key), v, p.key(m.key))
		}
	}
	return up, down, upMTU, downMTU
}

// finish gives a session flow's controller the kind the scenario's gets
// when it is left out.
func (f *Flow) finish(*object) {
	if c := f.Controller; c != nil && c.Kind == "" {
		c.Kind = "fixed"
		if len(c.Steps) > 0 {
			c.Kind = "steps"
		}
	}
}

func (j *Jitter) finish(o *object) {
	if o.get("distribution") == nil {
		j.Distribution = "uniform"
	}
}

// finish fills in tc's defaults for r and 1-h.
func (g *Gilbert) finish(o *object) {
	if o.get("1-h") == nil {
		g.OneMinusH = 1
	}
	if o.get("r") == nil {
		g.R = 1 - g.P
	}
	if g.R == 0 {
		g.R = 1 // p = 100% and r left out: tc's r = 1-p would be 0
	}
}

// decodeKey reads convert (gpu or cpu) and refine (off, or a mapping).
func (a *Agent) decodeKey(d *decoder, key string, n *yaml.Node, p fpath) {
	switch key {
	case "convert":
		switch s := d.str(n, p, "gpu or cpu"); s {
		case "gpu", "":
		case "cpu":
			a.ConvertOnCPU = true
		default:
			msg := fmtf("unknown conversion %q: expected gpu or cpu", s)
			if c := closest(s, []string{"gpu", "cpu"}); c != "" {
				msg = fmtf("unknown conversion %q: did you mean %s? expected gpu or cpu", s, c)
			}
			d.fail(n, p, msg)
		}
	case "refine":
		if r := resolve(n); r.Kind == yaml.ScalarNode {
			if r.Value == "off" {
				a.NoRefine = true
			} else {
				d.fail(n, p, r.Value+" is not a refinement: expected off or a mapping like {passes: 15, every: 100ms}")
			}
			return
		}
		var r refine
		if d.mapping(reflect.ValueOf(&r).Elem(), n, p, -1) {
			a.RefinePasses, a.RefineEvery = r.Passes, r.Every
		}
	}
}

// decodeNode reads a duration distribution: a constant ("130ms"), a
// normal ({mean, sd}, optionally clamped by min and max), a uniform
// ({min, max}) or a list replayed in order ([5ms, 7ms]).
func (dist *Dist) decodeNode(d *decoder, n *yaml.Node, p fpath) bool {
	f := fieldOf(reflect.TypeFor[Dist](), "mean")
	switch r := resolve(n); r.Kind {
	case yaml.ScalarNode:
		return d.unit(reflect.ValueOf(&dist.Mean).Elem(), f, units["duration"], n, p)
	case yaml.SequenceNode:
		if len(r.Content) == 0 {
			d.fail(n, p, "empty list: expected at least one duration, like [5ms, 7ms]")
			return false
		}
		dist.List = make([]time.Duration, len(r.Content))
		for i, item := range r.Content {
			d.unit(reflect.ValueOf(&dist.List[i]).Elem(), f, units["duration"], item, p.index(i))
		}
		return true
	}
	o := d.object(n, p, reflect.TypeFor[Dist](), -1)
	if o == nil {
		return false
	}
	for _, f := range fieldsOf(reflect.TypeFor[Dist]()) {
		if x := o.get(f.key); x != nil {
			d.value(reflect.ValueOf(dist).Elem().Field(f.index), f, x, p.key(f.key))
		}
	}
	mean, sd, lo, hi := o.get("mean"), o.get("sd"), o.get("min"), o.get("max")
	switch {
	case sd != nil && mean == nil:
		d.fail(n, p.key("mean"), "missing required field: a normal distribution needs mean with sd")
	case sd == nil && (lo != nil) != (hi != nil):
		d.fail(n, p, "min and max go together: expected {min, max} for a uniform distribution, or {mean, sd} for a normal one")
	case sd == nil && lo != nil && mean != nil:
		d.fail(n, p, "mean with min and max: add sd for a normal clamped to [min, max], or leave mean out for a uniform")
	case mean == nil && sd == nil && lo == nil && hi == nil:
		d.fail(n, p, "empty distribution: expected a duration like 3ms, {mean, sd}, {min, max} or a list")
	}
	return true
}

// decodeKey reads the initial bitrate, whose hint depends on the kind.
func (c *Controller) decodeKey(d *decoder, key string, n *yaml.Node, p fpath) {
	f := fieldOf(reflect.TypeFor[Controller](), key)
	f.hint = " (leave bitrate out for 4Mbit/s)"
	if c.Kind == "abr" || c.Kind == "gcc" {
		f.hint = " (leave bitrate out for the controller's default)"
	}
	d.unit(reflect.ValueOf(&c.Bitrate).Elem(), f, units["rate"], n, p)
}

// decodeKey reads an expectation's bounds in the measurement's unit, so
// that "max: 150" on a latency is refused rather than read as 150
// seconds, and its end, which may be written end.
func (e *Expectation) decodeKey(d *decoder, key string, n *yaml.Node, p fpath) {
	switch key {
	case "min", "max":
		m, known := LookupMeasurement(e.Measure)
		if !known {
			return
		}
		if x, ok := d.bound(n, p, m); ok {
			if key == "min" {
				e.Min = &x
			} else {
				e.Max = &x
			}
		}
	case "to":
		if s, ok := d.scalar(n, p, "a duration like 15s, or end"); ok && s != "end" {
			f := field{positive: true, hint: " (write end for the end of the scenario)"}
			d.unit(reflect.ValueOf(&e.To).Elem(), f, units["duration"], n, p)
		}
	}
}

func (e *Expectation) finish(o *object) { e.Line = o.node.Line }

// bound reads an expectation's bound in m's unit, in the Go units of
// Expectation: seconds, bits per second, a fraction, a count or a ratio.
func (d *decoder) bound(n *yaml.Node, p fpath, m Measurement) (float64, bool) {
	switch m.Unit {
	case UnitDuration:
		var v time.Duration
		ok := d.unit(reflect.ValueOf(&v).Elem(), field{}, units["duration"], n, p)
		return v.Seconds(), ok
	case UnitRate:
		var v Rate
		if err := v.UnmarshalYAML(n); err != nil {
			d.fail(n, p, err.Error())
			return 0, false
		}
		return float64(v), true
	case UnitFraction:
		var v float64
		ok := d.unit(reflect.ValueOf(&v).Elem(), field{}, units["percent"], n, p)
		return v, ok
	case UnitShare:
		var v float64
		ok := d.unit(reflect.ValueOf(&v).Elem(), field{}, shareUnit, n, p)
		return v, ok
	}
	what := "a plain number like 59.5"
	switch m.Unit {
	case UnitCount:
		what = "a plain whole number like 100"
	case UnitCorrelation:
		what = "a plain number from -1 to 1 like 0.8"
	}
	s, ok := d.scalar(n, p, what)
	if !ok {
		return 0, false
	}
	if mm := numberUnit.FindStringSubmatch(s); mm != nil && mm[2] != "" {
		d.fail(n, p, fmtf("%s has a unit, but %s is a %s: expected %s", s, m.Name, m.Unit, what))
		return 0, false
	}
	var v float64
	var err error
	if m.Unit == UnitCount {
		var i int64
		i, err = parseInt(s, what)
		v = float64(i)
	} else {
		v, err = parseNumber(s, what)
	}
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	switch {
	case m.Unit == UnitCorrelation && (v < -1 || v > 1):
		d.fail(n, p, s+" out of range: expected a correlation from -1 to 1")
		return 0, false
	case m.Unit != UnitCorrelation && v < 0:
		d.fail(n, p, s+" out of range: expected "+m.Name+" of 0 or more")
		return 0, false
	}
	return v, true
}

// shareUnit reads a share's bound: a percentage of 0% or more, which may
// exceed 100% (the video sent over a link's capacity).
var shareUnit = unitSpec{reflect.TypeFor[Share](), func(_ field, s string, v float64) string {
	if v < 0 {
		return s + " out of range: expected a percentage of 0% or more"
	}
	return ""
}}

// decodeNode reads a path: one word, the strategy (path: relay), or a
// mapping.
func (pa *Path) decodeNode(d *decoder, n *yaml.Node, p fpath) bool {
	if r := resolve(n); r.Kind == yaml.ScalarNode {
		pa.Connect = d.str(n, p, "a strategy: "+list(Paths)+", or a mapping with keys "+list(keysOf(reflect.TypeFor[Path]())))
		return true
	}
	return d.mapping(reflect.ValueOf(pa).Elem(), n, p, -1)
}

// decodeNode reads a trace: its path alone (trace: traces/x.down), or a
// mapping {file, offset, loop}, as path reads one word or a mapping. The
// path alone is also where the file's mistakes are placed: its field is
// trace, not trace.file.
func (tr *Trace) decodeNode(d *decoder, n *yaml.Node, p fpath) bool {
	if r := resolve(n); r.Kind == yaml.ScalarNode {
		f := fieldOf(reflect.TypeFor[Phase](), "trace")
		s, ok := d.scalar(n, p, f.expectedText())
		if !ok {
			return false
		}
		if s == "" {
			d.fail(n, p, "empty trace: expected "+f.expectedText())
			return false
		}
		tr.File = s
		d.where[p.key("file").canon] = loc{p.written, n}
		return true
	}
	return d.mapping(reflect.ValueOf(tr).Elem(), n, p, -1)
}

// decodeKey reads loop, which the ScreenPhase holds the other way round
// (NoLoop) so that its zero value is the default, a recording that plays
// again. Only a recording loops: written for another source, loop: true
// would leave no trace in the ScreenPhase for the validation to refuse,
// so it is refused here, as the validation words it.
func (ph *ScreenPhase) decodeKey(d *decoder, _ string, n *yaml.Node, p fpath) {
	if ph.Source != "" && slices.Contains(Sources, ph.Source) && !slices.Contains(sourceFields[ph.Source], "loop") {
		d.fail(n, p, fmtf("loop does not apply to %s: loop applies to %s", ph.Source, list(sourcesWith("loop"))))
		return
	}
	if loop := d.boolean(n, p); !d.failed[p.canon] {
		ph.NoLoop = !loop
	}
}

// decodeKey reads loop, which the Trace holds the other way round (NoLoop)
// so that its zero value is the default, a trace that wraps.
func (tr *Trace) decodeKey(d *decoder, _ string, n *yaml.Node, p fpath) {
	if loop := d.boolean(n, p); !d.failed[p.canon] {
		tr.NoLoop = !loop
	}
}
