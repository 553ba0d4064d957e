package scenarios

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder turns a merged node tree into a Scenario. It checks what only
// the file can tell (syntax of values, units, keys, an explicit 0 where 0
// makes no sense, since in the Scenario 0 means "none"); validate checks
// the rest on the Scenario, and the decoder's record of where each field
// was written gives those errors their lines.
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
	kind string
	node *yaml.Node // the mapping, aliases resolved
	at   *yaml.Node // the value as written, for the error's line
	vals map[string]*yaml.Node
}

// object reads n as a mapping of kind: it reports keys that are not
// allowed (with the closest allowed one), duplicated keys and required
// keys that are missing, and records where each key is written. It returns
// nil when n is not a mapping.
func (d *decoder) object(n *yaml.Node, p fpath, kind string) *object {
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		d.fail(n, p, "expected a mapping with keys "+list(objects[kind])+", got "+describe(n))
		return nil
	}
	d.where[p.canon] = loc{p.written, n}
	o := &object{kind: kind, node: r, at: n, vals: map[string]*yaml.Node{}}
	keyLines := map[string]int{}
	allowed := objects[kind]
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
	for _, key := range required[kind] {
		if o.get(key) == nil && !d.failed[p.key(key).canon] {
			d.fail(n, p.key(key), missing(kind, key))
		}
	}
	return o
}

// get returns the value of key, or nil when it is absent or null. Asking
// for a key the object does not allow is a bug in the decoder.
func (o *object) get(key string) *yaml.Node {
	if !slices.Contains(objects[o.kind], key) {
		panic("scenarios: decoder asks for key " + key + " not in objects[" + o.kind + "]")
	}
	if v := o.vals[key]; v != nil && !isNull(v) {
		return v
	}
	return nil
}

// scalar returns n's text, or reports that n is not a scalar.
func (d *decoder) scalar(n *yaml.Node, p fpath, expected string) (string, bool) {
	r := resolve(n)
	if r.Kind != yaml.ScalarNode {
		d.fail(n, p, "expected "+expected+", got "+describe(n))
		return "", false
	}
	return r.Value, true
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

// items returns the elements of a list, or a mapping as a list of one
// (a single phase needs no list around it; its field names carry no
// index).
func (d *decoder) items(n *yaml.Node, p fpath, expected string) ([]*yaml.Node, []fpath) {
	switch r := resolve(n); r.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{n}, []fpath{{p.canon + "[0]", p.written}}
	case yaml.SequenceNode:
		paths := make([]fpath, len(r.Content))
		for i := range r.Content {
			paths[i] = p.index(i)
		}
		return r.Content, paths
	}
	d.fail(n, p, "expected "+expected+", got "+describe(n))
	return nil, nil
}

// Units. Each helper reads a scalar in its unit, applies the field's range
// and returns ok=false, after reporting, when it cannot.

// dur reads a duration of 0 or more.
func (d *decoder) dur(n *yaml.Node, p fpath) (time.Duration, bool) {
	s, ok := d.scalar(n, p, "a duration like "+durationUnits.example)
	if !ok {
		return 0, false
	}
	v, err := ParseDuration(s)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	if v < 0 {
		d.fail(n, p, s+" out of range: expected a duration of 0s or more")
		return 0, false
	}
	return v, true
}

// signedDur reads a duration that may be negative (a clock offset).
func (d *decoder) signedDur(n *yaml.Node, p fpath) (time.Duration, bool) {
	s, ok := d.scalar(n, p, "a duration like "+durationUnits.example)
	if !ok {
		return 0, false
	}
	v, err := ParseDuration(s)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	return v, true
}

// posDur reads a duration above 0; zero gets hint, which says what to
// write instead.
func (d *decoder) posDur(n *yaml.Node, p fpath, hint string) (time.Duration, bool) {
	v, ok := d.dur(n, p)
	if ok && v == 0 {
		d.fail(n, p, resolve(n).Value+" out of range: expected a duration above 0s"+hint)
		return 0, false
	}
	return v, ok
}

// percent reads a percentage as a fraction.
func (d *decoder) percent(n *yaml.Node, p fpath) (float64, bool) {
	s, ok := d.scalar(n, p, "a percentage like "+percentUnits.example)
	if !ok {
		return 0, false
	}
	v, err := ParsePercent(s)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	return v, true
}

// posPercent reads a percentage above 0%.
func (d *decoder) posPercent(n *yaml.Node, p fpath, hint string) (float64, bool) {
	v, ok := d.percent(n, p)
	if ok && v == 0 {
		d.fail(n, p, resolve(n).Value+" out of range: expected a percentage above 0%"+hint)
		return 0, false
	}
	return v, ok
}

// share reads a percentage that may lie outside 0%-100% and checks it
// against r, the field's range; hint is added when the value is 0%, which a
// Scenario reads as "the default".
func (d *decoder) share(n *yaml.Node, p fpath, r shareRange, hint string) (float64, bool) {
	s, ok := d.scalar(n, p, "a percentage like "+percentUnits.example)
	if !ok {
		return 0, false
	}
	v, err := parseShare(s)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	if !r.in(v) {
		if v != 0 {
			hint = ""
		}
		d.fail(n, p, s+" out of range: expected "+r.what+hint)
		return 0, false
	}
	return v, true
}

// rate reads a bit rate above 0.
func (d *decoder) rate(n *yaml.Node, p fpath, hint string) (int64, bool) {
	s, ok := d.scalar(n, p, "a rate like "+rateUnits.example)
	if !ok {
		return 0, false
	}
	v, err := ParseRate(s)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	if v == 0 {
		d.fail(n, p, s+" out of range: expected a rate above 0bit/s"+hint)
		return 0, false
	}
	return v, true
}

// bytes reads a size; zero only when allowZero.
func (d *decoder) bytes(n *yaml.Node, p fpath, allowZero bool, hint string) (int, bool) {
	s, ok := d.scalar(n, p, "a size like "+byteUnits.example)
	if !ok {
		return 0, false
	}
	v, err := ParseBytes(s)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	if v == 0 && !allowZero {
		d.fail(n, p, s+" out of range: expected a size above 0B"+hint)
		return 0, false
	}
	return v, true
}

// hz reads a display refresh: above 0, at most 1000Hz (the screen model's
// limit).
func (d *decoder) hz(n *yaml.Node, p fpath, hint string) (float64, bool) {
	s, ok := d.scalar(n, p, "a frequency like 60Hz")
	if !ok {
		return 0, false
	}
	v, err := ParseHz(s)
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	if !(v > 0 && v <= maxRefresh) {
		d.fail(n, p, s+" out of range: expected a frequency above 0Hz and at most 1000Hz"+hint)
		return 0, false
	}
	return v, true
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

// The format's mappings, one function each, in the order of FORMAT.md.

func (d *decoder) scenario(root *yaml.Node) *Scenario {
	s := &Scenario{File: d.file}
	p := fpath{}
	d.where[""] = loc{"", root}
	o := d.object(root, p, "scenario")
	if o == nil {
		return s
	}
	if n := o.get("name"); n != nil {
		s.Name = d.str(n, p.key("name"), "a name like lan-animation")
	}
	if n := o.get("description"); n != nil {
		s.Description = d.str(n, p.key("description"), "a sentence or two")
	}
	if n := o.get("findings"); n != nil {
		s.Findings = d.strList(n, p.key("findings"), "a list of finding IDs like [N3, N20]")
	}
	if n := o.get("groups"); n != nil {
		s.Groups = d.strList(n, p.key("groups"), "a list of groups like [lan, pipeline]")
	}
	if n := o.get("duration"); n != nil {
		s.Duration, _ = d.posDur(n, p.key("duration"), "")
	}
	if n := o.get("seed"); n != nil {
		if v, ok := d.scalar(n, p.key("seed"), "a whole number like 1"); ok {
			seed, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				d.fail(n, p.key("seed"), v+" is not a seed: expected a whole number from 0 to 18446744073709551615")
			}
			s.Seed = seed
		}
	}
	if n := o.get("network"); n != nil {
		s.Network = d.network(n, p.key("network"))
	}
	if n := o.get("screen"); n != nil {
		nodes, paths := d.items(n, p.key("screen"), "a list of screen phases like [{at: 0s, source: animation}]")
		for i, item := range nodes {
			s.Screen = append(s.Screen, d.screenPhase(item, paths[i], i == 0))
		}
	}
	if n := o.get("agent"); n != nil {
		s.Agent = d.agent(n, p.key("agent"))
	}
	if n := o.get("viewer"); n != nil {
		s.Viewer = d.viewer(n, p.key("viewer"))
	}
	if n := o.get("clocks"); n != nil {
		if c := d.object(n, p.key("clocks"), "clocks"); c != nil {
			s.Clocks.Agent = d.clock(c.get("agent"), p.key("clocks").key("agent"))
			s.Clocks.Viewer = d.clock(c.get("viewer"), p.key("clocks").key("viewer"))
		}
	}
	if n := o.get("controller"); n != nil {
		s.Controller = d.controller(n, p.key("controller"))
	}
	if s.Controller.Kind == "" {
		s.Controller.Kind = "fixed"
		if len(s.Controller.Steps) > 0 {
			s.Controller.Kind = "steps"
		}
	}
	if n := o.get("switches"); n != nil {
		if w := d.object(n, p.key("switches"), "switches"); w != nil {
			sw := p.key("switches")
			dsts := []*bool{&s.Switches.OldWaitForFrame, &s.Switches.OldCaptureFirst,
				&s.Switches.OldShowEveryFrame, &s.Switches.OldRestartOnBitrateChange,
				&s.Switches.OldABRTotalLatency, &s.Switches.OldABRIgnoresUtilisation,
				&s.Switches.OldABRSinglePeaks}
			for i, key := range objects["switches"] {
				if v := w.get(key); v != nil {
					*dsts[i] = d.boolean(v, sw.key(key))
				}
			}
		}
	}
	if n := o.get("path"); n != nil {
		s.Path = d.path(n, p.key("path"))
	}
	if n := o.get("expect"); n != nil {
		nodes, paths := d.items(n, p.key("expect"), "a list of expectations like [{measure: latency.median, max: 150ms}]")
		for i, item := range nodes {
			if e, ok := d.expectation(item, paths[i]); ok {
				s.Expect = append(s.Expect, e)
			}
		}
	}
	return s
}

// network reads the two directions. `both` gives the same timeline to up
// and down; `up` or `down` replaces it for its direction, so defaults can
// set `both` and a scenario change one direction.
func (d *decoder) network(n *yaml.Node, p fpath) Network {
	var net Network
	o := d.object(n, p, "network")
	if o == nil {
		return net
	}
	both, up, down := o.get("both"), o.get("up"), o.get("down")
	if both != nil && up != nil && down != nil && d.fileOf(both) == d.fileOf(up) && d.fileOf(both) == d.fileOf(down) {
		d.fail(both, p.key("both"), "both is never used: up and down are both given")
	}
	dir := func(own *yaml.Node, name string) []Phase {
		at := p.key(name)
		if own == nil {
			if own = both; own == nil {
				return nil
			}
			at.written = p.key("both").written
		}
		nodes, paths := d.items(own, at, "a phase (a mapping) or a list of phases")
		var phases []Phase // an empty list is no impairments, like none
		for i, item := range nodes {
			phases = append(phases, d.phase(item, paths[i], i == 0))
		}
		return phases
	}
	net.Up, net.Down = dir(up, "up"), dir(down, "down")
	return net
}

func (d *decoder) phase(n *yaml.Node, p fpath, first bool) Phase {
	var ph Phase
	o := d.object(n, p, "phase")
	if o == nil {
		return ph
	}
	if v := o.get("at"); v != nil {
		ph.At, _ = d.dur(v, p.key("at"))
	} else if !first {
		d.fail(n, p.key("at"), missing("phase", "at"))
	}
	if v := o.get("delay"); v != nil {
		ph.Delay, _ = d.dur(v, p.key("delay"))
	}
	if v := o.get("jitter"); v != nil {
		ph.Jitter = d.jitter(v, p.key("jitter"))
	}
	if v := o.get("loss"); v != nil {
		ph.Loss, _ = d.percent(v, p.key("loss"))
	}
	if v := o.get("gilbert"); v != nil {
		ph.Gilbert = d.gilbert(v, p.key("gilbert"))
	}
	if v := o.get("duplicate"); v != nil {
		ph.Duplicate, _ = d.percent(v, p.key("duplicate"))
	}
	if v := o.get("corrupt"); v != nil {
		ph.Corrupt, _ = d.percent(v, p.key("corrupt"))
	}
	if v := o.get("rate"); v != nil {
		ph.Rate, _ = d.rate(v, p.key("rate"), " (leave rate out, or null, for no cap)")
	}
	if v := o.get("overhead"); v != nil {
		ph.Overhead, _ = d.bytes(v, p.key("overhead"), true, "")
	}
	if v := o.get("trace"); v != nil {
		ph.Trace = d.str(v, p.key("trace"), "a trace file path from the repository's root, or shared:NAME")
		if ph.Trace == "" {
			d.fail(v, p.key("trace"), "empty trace: expected a trace file path from the repository's root, or shared:NAME")
		}
	}
	if v := o.get("queue"); v != nil {
		ph.Queue = d.queue(v, p.key("queue"))
	}
	if v := o.get("spikes"); v != nil {
		ph.Spikes = d.spikes(v, p.key("spikes"))
	}
	if v := o.get("outages"); v != nil {
		ph.Outages = d.outages(v, p.key("outages"))
	}
	if v := o.get("block_udp"); v != nil {
		ph.BlockUDP = d.boolean(v, p.key("block_udp"))
	}
	return ph
}

func (d *decoder) jitter(n *yaml.Node, p fpath) *Jitter {
	o := d.object(n, p, "jitter")
	if o == nil {
		return nil
	}
	j := &Jitter{Distribution: "uniform"}
	if v := o.get("spread"); v != nil {
		j.Spread, _ = d.posDur(v, p.key("spread"), " (leave jitter out for none)")
	}
	if v := o.get("distribution"); v != nil {
		j.Distribution = d.str(v, p.key("distribution"), "a distribution: "+list(JitterDistributions))
	}
	if v := o.get("correlation"); v != nil {
		j.Correlation, _ = d.percent(v, p.key("correlation"))
	}
	if v := o.get("reorder"); v != nil {
		j.Reorder = d.boolean(v, p.key("reorder"))
	}
	return j
}

// gilbert reads tc netem's gemodel. Left out, r is 1-p and 1-h is 100%,
// as in tc; the Scenario holds the values the model runs with. An explicit
// 0% for r or 1-h is refused: netem reads 0 as "left out", and a model
// that never leaves, or never loses in, the bad state is not a loss model.
func (d *decoder) gilbert(n *yaml.Node, p fpath) *Gilbert {
	o := d.object(n, p, "gilbert")
	if o == nil {
		return nil
	}
	g := &Gilbert{OneMinusH: 1}
	if v := o.get("p"); v != nil {
		g.P, _ = d.posPercent(v, p.key("p"), " (a link that never enters the bad state loses nothing: leave gilbert out)")
	}
	g.R = 1 - g.P
	if v := o.get("r"); v != nil {
		g.R, _ = d.posPercent(v, p.key("r"), " (the link would never leave the bad state)")
	}
	if v := o.get("1-h"); v != nil {
		g.OneMinusH, _ = d.posPercent(v, p.key("1-h"), " (the bad state would lose nothing)")
	}
	if v := o.get("1-k"); v != nil {
		g.OneMinusK, _ = d.percent(v, p.key("1-k"))
	}
	if g.R == 0 {
		g.R = 1 // p = 100% and r left out: tc's r = 1-p would be 0
	}
	return g
}

func (d *decoder) queue(n *yaml.Node, p fpath) Queue {
	var q Queue
	o := d.object(n, p, "queue")
	if o == nil {
		return q
	}
	if v := o.get("bytes"); v != nil {
		q.Bytes, _ = d.bytes(v, p.key("bytes"), false, " (a queue of 0 bytes holds nothing; leave bytes out for no limit)")
	}
	if v := o.get("packets"); v != nil {
		n, _ := d.integer(v, p.key("packets"), 1, "a number of packets", " (a queue of 0 packets holds nothing; leave packets out for no limit)")
		q.Packets = int(n)
	}
	if v := o.get("delay"); v != nil {
		q.Delay, _ = d.posDur(v, p.key("delay"), " (leave delay out for no limit)")
	}
	if v := o.get("codel"); v != nil {
		q.CoDel = d.boolean(v, p.key("codel"))
	}
	return q
}

func (d *decoder) spikes(n *yaml.Node, p fpath) *Spikes {
	o := d.object(n, p, "spikes")
	if o == nil {
		return nil
	}
	s := &Spikes{}
	if v := o.get("min"); v != nil {
		s.Min, _ = d.dur(v, p.key("min"))
	}
	if v := o.get("max"); v != nil {
		s.Max, _ = d.posDur(v, p.key("max"), " (spikes of 0s add nothing: leave spikes out)")
	}
	if v := o.get("every"); v != nil {
		s.Every, _ = d.posDur(v, p.key("every"), "")
	}
	if v := o.get("duration"); v != nil {
		s.Duration, _ = d.posDur(v, p.key("duration"), "")
	}
	if v := o.get("offset"); v != nil {
		s.Offset, _ = d.dur(v, p.key("offset"))
	}
	if v := o.get("random"); v != nil {
		s.Random = d.boolean(v, p.key("random"))
	}
	return s
}

func (d *decoder) outages(n *yaml.Node, p fpath) *Outages {
	o := d.object(n, p, "outages")
	if o == nil {
		return nil
	}
	out := &Outages{}
	if v := o.get("every"); v != nil {
		out.Every, _ = d.posDur(v, p.key("every"), "")
	}
	if v := o.get("duration"); v != nil {
		out.Duration, _ = d.posDur(v, p.key("duration"), "")
	}
	if v := o.get("offset"); v != nil {
		out.Offset, _ = d.dur(v, p.key("offset"))
	}
	if v := o.get("windows"); v != nil {
		r := resolve(v)
		if r.Kind != yaml.SequenceNode {
			d.fail(v, p.key("windows"), "expected a list of windows like [{start: 10s, duration: 2s}], got "+describe(v))
		} else {
			for i, item := range r.Content {
				wp := p.key("windows").index(i)
				w := d.object(item, wp, "window")
				if w == nil {
					continue
				}
				var win Window
				if x := w.get("start"); x != nil {
					win.Start, _ = d.dur(x, wp.key("start"))
				}
				if x := w.get("duration"); x != nil {
					win.Duration, _ = d.posDur(x, wp.key("duration"), "")
				}
				out.Windows = append(out.Windows, win)
			}
		}
	}
	if v := o.get("hold"); v != nil {
		out.Hold = d.boolean(v, p.key("hold"))
	}
	return out
}

func (d *decoder) screenPhase(n *yaml.Node, p fpath, first bool) ScreenPhase {
	var ph ScreenPhase
	o := d.object(n, p, "screen_phase")
	if o == nil {
		return ph
	}
	if v := o.get("at"); v != nil {
		ph.At, _ = d.dur(v, p.key("at"))
	} else if !first {
		d.fail(n, p.key("at"), missing("phase", "at"))
	}
	if v := o.get("source"); v != nil {
		ph.Source = d.str(v, p.key("source"), "a source: "+list(Sources))
	}
	if v := o.get("complexity"); v != nil {
		ph.Complexity, _ = d.posPercent(v, p.key("complexity"), " (leave complexity out for the source's own)")
	}
	if v := o.get("rate"); v != nil {
		ph.Rate, _ = d.screenRate(v, p.key("rate"))
	}
	if v := o.get("region"); v != nil {
		if r := d.object(v, p.key("region"), "region"); r != nil {
			ph.Region = &Region{}
			dsts := []*float64{&ph.Region.X, &ph.Region.Y, &ph.Region.W, &ph.Region.H}
			for i, key := range objects["region"] {
				dst := dsts[i]
				if x := r.get(key); x != nil {
					if key == "w" || key == "h" {
						*dst, _ = d.posPercent(x, p.key("region").key(key), "")
					} else {
						*dst, _ = d.percent(x, p.key("region").key(key))
					}
				}
			}
		}
	}
	return ph
}

// screenRate reads how often a source changes: a plain number of changes
// (frames) per second, or the same with Hz.
func (d *decoder) screenRate(n *yaml.Node, p fpath) (float64, bool) {
	s, ok := d.scalar(n, p, "changes per second, like 30")
	if !ok {
		return 0, false
	}
	v, err := parseNumber(strings.TrimSuffix(s, "Hz"), "changes per second, like 30 or 30Hz")
	if err != nil {
		d.fail(n, p, err.Error())
		return 0, false
	}
	if !(v > 0) {
		d.fail(n, p, s+" out of range: expected changes per second above 0 (leave rate out for the source's own)")
		return 0, false
	}
	return v, true
}

func (d *decoder) agent(n *yaml.Node, p fpath) Agent {
	var a Agent
	o := d.object(n, p, "agent")
	if o == nil {
		return a
	}
	if v := o.get("encoder"); v != nil {
		a.Encoder = d.str(v, p.key("encoder"), "a software encoder preset: "+list(SoftwarePresets()))
	}
	if v := o.get("encode_time"); v != nil {
		a.EncodeTime = d.dist(v, p.key("encode_time"))
	}
	if v := o.get("hardware"); v != nil {
		a.Hardware = d.strList(v, p.key("hardware"), "a list of hardware presets like [quicksync, nvenc]")
	}
	if v := o.get("absent"); v != nil {
		a.Absent = d.strList(v, p.key("absent"), "a list of hardware presets like [quicksync]")
	}
	if v := o.get("failing"); v != nil {
		a.Failing = d.strList(v, p.key("failing"), "a list of hardware presets like [nvenc]")
	}
	if v := o.get("refresh"); v != nil {
		a.Refresh, _ = d.hz(v, p.key("refresh"), " (leave refresh out for 60Hz)")
	}
	if v := o.get("convert"); v != nil {
		switch s := d.str(v, p.key("convert"), "gpu or cpu"); s {
		case "gpu", "":
		case "cpu":
			a.ConvertOnCPU = true
		default:
			msg := fmtf("unknown conversion %q: expected gpu or cpu", s)
			if c := closest(s, []string{"gpu", "cpu"}); c != "" {
				msg = fmtf("unknown conversion %q: did you mean %s? expected gpu or cpu", s, c)
			}
			d.fail(v, p.key("convert"), msg)
		}
	}
	if v := o.get("send_cap"); v != nil {
		a.SendCap, _ = d.bytes(v, p.key("send_cap"), false, " (nothing could be sent; leave send_cap out for 256KB)")
	}
	if v := o.get("refine"); v != nil {
		rp := p.key("refine")
		if r := resolve(v); r.Kind == yaml.ScalarNode {
			if r.Value == "off" {
				a.NoRefine = true
			} else {
				d.fail(v, rp, r.Value+" is not a refinement: expected off or a mapping like {passes: 15, every: 100ms}")
			}
		} else if ro := d.object(v, rp, "refine"); ro != nil {
			if x := ro.get("passes"); x != nil {
				n, _ := d.integer(x, rp.key("passes"), 1, "a number of passes", " (write refine: off for none)")
				a.RefinePasses = int(n)
			}
			if x := ro.get("every"); x != nil {
				a.RefineEvery, _ = d.posDur(x, rp.key("every"), "")
			}
		}
	}
	return a
}

// dist reads a duration distribution: a constant ("130ms"), a normal
// ({mean, sd}, optionally clamped by min and max), a uniform ({min, max})
// or a list replayed in order ([5ms, 7ms]).
func (d *decoder) dist(n *yaml.Node, p fpath) *Dist {
	switch r := resolve(n); r.Kind {
	case yaml.ScalarNode:
		v, ok := d.dur(n, p)
		if !ok {
			return nil
		}
		return &Dist{Mean: v}
	case yaml.SequenceNode:
		if len(r.Content) == 0 {
			d.fail(n, p, "empty list: expected at least one duration, like [5ms, 7ms]")
			return nil
		}
		out := &Dist{List: []time.Duration{}}
		for i, item := range r.Content {
			v, _ := d.dur(item, p.index(i))
			out.List = append(out.List, v)
		}
		return out
	}
	o := d.object(n, p, "dist_object")
	if o == nil {
		return nil
	}
	out := &Dist{}
	mean, sd, lo, hi := o.get("mean"), o.get("sd"), o.get("min"), o.get("max")
	if mean != nil {
		out.Mean, _ = d.dur(mean, p.key("mean"))
	}
	if sd != nil {
		out.SD, _ = d.posDur(sd, p.key("sd"), " (leave sd out for a constant)")
	}
	if lo != nil {
		out.Min, _ = d.dur(lo, p.key("min"))
	}
	if hi != nil {
		out.Max, _ = d.dur(hi, p.key("max"))
	}
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
	return out
}

func (d *decoder) viewer(n *yaml.Node, p fpath) Viewer {
	var v Viewer
	o := d.object(n, p, "viewer")
	if o == nil {
		return v
	}
	if x := o.get("decode"); x != nil {
		v.Decode = d.dist(x, p.key("decode"))
	}
	if x := o.get("refresh"); x != nil {
		v.Refresh, _ = d.hz(x, p.key("refresh"), " (leave refresh out to present frames as soon as they are decoded)")
	}
	if x := o.get("present"); x != nil {
		v.Present, _ = d.dur(x, p.key("present"))
	}
	return v
}

func (d *decoder) clock(n *yaml.Node, p fpath) Clock {
	var c Clock
	if n == nil {
		return c
	}
	o := d.object(n, p, "clock")
	if o == nil {
		return c
	}
	if v := o.get("offset"); v != nil {
		c.Offset, _ = d.signedDur(v, p.key("offset"))
	}
	if v := o.get("drift"); v != nil {
		if s, ok := d.scalar(v, p.key("drift"), "a drift like 50ppm"); ok {
			ppm, err := ParsePPM(s)
			if err != nil {
				d.fail(v, p.key("drift"), err.Error())
			}
			c.DriftPPM = ppm
		}
	}
	return c
}

func (d *decoder) controller(n *yaml.Node, p fpath) Controller {
	var c Controller
	o := d.object(n, p, "controller")
	if o == nil {
		return c
	}
	if v := o.get("kind"); v != nil {
		c.Kind = d.str(v, p.key("kind"), "a controller kind: "+list(ControllerKinds))
	}
	// Zero is each parameter's "left out": the controller's default.
	dflt := func(key string) string { return " (leave " + key + " out for the controller's default)" }
	if v := o.get("bitrate"); v != nil {
		hint := " (leave bitrate out for 4Mbit/s)"
		if c.Kind == "abr" || c.Kind == "gcc" {
			hint = dflt("bitrate")
		}
		c.Bitrate, _ = d.rate(v, p.key("bitrate"), hint)
	}
	if v := o.get("steps"); v != nil {
		nodes, paths := d.items(v, p.key("steps"), "a list of steps like [{at: 5s, bitrate: 3.2Mbit/s}]")
		for i, item := range nodes {
			so := d.object(item, paths[i], "step")
			if so == nil {
				continue
			}
			var st Step
			if x := so.get("at"); x != nil {
				st.At, _ = d.dur(x, paths[i].key("at"))
			}
			if x := so.get("bitrate"); x != nil {
				st.Bitrate, _ = d.rate(x, paths[i].key("bitrate"), "")
			}
			c.Steps = append(c.Steps, st)
		}
	}
	if v := o.get("min"); v != nil {
		c.Min, _ = d.rate(v, p.key("min"), dflt("min"))
	}
	if v := o.get("max"); v != nil {
		c.Max, _ = d.rate(v, p.key("max"), dflt("max"))
	}
	for _, f := range []struct {
		key string
		dst *time.Duration
	}{{"window", &c.Window}, {"baseline", &c.Baseline}, {"threshold", &c.Threshold},
		{"sustain", &c.Sustain}, {"close", &c.Close}, {"hold", &c.Hold}} {
		if v := o.get(f.key); v != nil {
			*f.dst, _ = d.posDur(v, p.key(f.key), dflt(f.key))
		}
	}
	if v := o.get("decrease"); v != nil {
		c.Decrease, _ = d.share(v, p.key("decrease"), decreaseRange, dflt("decrease"))
	}
	if v := o.get("increase"); v != nil {
		c.Increase, _ = d.share(v, p.key("increase"), increaseRange, dflt("increase"))
	}
	if v := o.get("guard"); v != nil {
		c.Guard, _ = d.posPercent(v, p.key("guard"),
			" (for no guard, write switches: {old_abr_ignores_utilisation: true}; leave guard out for the controller's default)")
	}
	return c
}

// expectation reads a bound on a measurement; its values are read in the
// measurement's unit, so that "max: 150" on a latency is refused rather
// than read as 150 seconds.
func (d *decoder) expectation(n *yaml.Node, p fpath) (Expectation, bool) {
	e := Expectation{Line: n.Line}
	o := d.object(n, p, "expectation")
	if o == nil {
		return e, false
	}
	if v := o.get("measure"); v != nil {
		e.Measure = d.str(v, p.key("measure"), "a measurement name like latency.median")
	}
	m, known := LookupMeasurement(e.Measure)
	for _, key := range []string{"min", "max"} {
		dst := &e.Min
		if key == "max" {
			dst = &e.Max
		}
		if v := o.get(key); v != nil && known {
			if x, ok := d.value(v, p.key(key), m); ok {
				*dst = &x
			}
		}
	}
	if v := o.get("from"); v != nil {
		e.From, _ = d.dur(v, p.key("from"))
	}
	if v := o.get("to"); v != nil {
		if s, ok := d.scalar(v, p.key("to"), "a duration like 15s, or end"); ok && s != "end" {
			e.To, _ = d.posDur(v, p.key("to"), " (write end for the end of the scenario)")
		}
	}
	return e, true
}

// value reads an expectation's bound in m's unit, in the Go units of
// Expectation: seconds, bits per second, a fraction, a count or a ratio.
func (d *decoder) value(n *yaml.Node, p fpath, m Measurement) (float64, bool) {
	switch m.Unit {
	case UnitDuration:
		v, ok := d.dur(n, p)
		return v.Seconds(), ok
	case UnitRate:
		s, ok := d.scalar(n, p, "a rate like "+rateUnits.example)
		if !ok {
			return 0, false
		}
		v, err := ParseRate(s)
		if err != nil {
			d.fail(n, p, err.Error())
			return 0, false
		}
		return float64(v), true
	case UnitFraction:
		return d.percent(n, p)
	}
	what := "a plain number like 59.5"
	if m.Unit == UnitCount {
		what = "a plain whole number like 100"
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
	if v < 0 {
		d.fail(n, p, s+" out of range: expected "+m.Name+" of 0 or more")
		return 0, false
	}
	return v, true
}

// path is either one word, the strategy (path: relay), or a mapping.
func (d *decoder) path(n *yaml.Node, p fpath) Path {
	if r := resolve(n); r.Kind == yaml.ScalarNode {
		return Path{Connect: d.str(n, p, "a strategy: "+list(Paths)+", or a mapping with keys "+list(objects["path"]))}
	}
	var out Path
	o := d.object(n, p, "path")
	if o == nil {
		return out
	}
	if v := o.get("connect"); v != nil {
		out.Connect = d.str(v, p.key("connect"), "a strategy: "+list(Paths))
	}
	if v := o.get("agent_nat"); v != nil {
		out.AgentNAT = d.str(v, p.key("agent_nat"), "a router: "+list(NATs))
	}
	if v := o.get("viewer_nat"); v != nil {
		out.ViewerNAT = d.str(v, p.key("viewer_nat"), "a router: "+list(NATs))
	}
	if v := o.get("same_router"); v != nil {
		out.SameRouter = d.boolean(v, p.key("same_router"))
	}
	if v := o.get("relay_delay"); v != nil {
		out.RelayDelay, _ = d.dur(v, p.key("relay_delay"))
	}
	if v := o.get("ignore_lan_candidates"); v != nil {
		out.IgnoreLANCandidates = d.boolean(v, p.key("ignore_lan_candidates"))
	}
	if v := o.get("force_relay"); v != nil {
		out.ForceRelay = d.boolean(v, p.key("force_relay"))
	}
	return out
}
