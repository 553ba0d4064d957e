package scenarios

import (
	"math"
	"reflect"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// MarshalYAML writes s in the scenario format, so that yaml.Marshal(s)
// gives a file Parse reads back as s: every value in its unit, zero values
// left out, the same timeline for both directions written once under
// `both`. It walks the same tags as the loader. The round trip is what the
// tests and the fuzz test check; it also lets tools write scenarios they
// generate (sweeps).
func (s *Scenario) MarshalYAML() (any, error) {
	n := encodeMapping(reflect.ValueOf(s).Elem(), false)
	// The name, description, duration and seed are written even when
	// zero: a file always has them.
	for _, key := range []string{"name", "description", "duration", "seed"} {
		if lookup(n, key) == nil {
			f := fieldOf(reflect.TypeFor[Scenario](), key)
			n.Content = append(n.Content, str(key), encodeValue(reflect.ValueOf(s).Elem().Field(f.index), f))
		}
	}
	ordered := &yaml.Node{Kind: yaml.MappingNode}
	for _, key := range keysOf(reflect.TypeFor[Scenario]()) {
		if v := lookup(n, key); v != nil {
			ordered.Content = append(ordered.Content, str(key), v)
		}
	}
	return ordered, nil
}

// nodeEncoder is implemented by the types whose YAML shape is not only a
// mapping of their fields; nil leaves the value out.
type nodeEncoder interface {
	encodeNode() *yaml.Node
}

// keyEncoder writes a type's custom keys (nil: left out).
type keyEncoder interface {
	encodeKey(key string) *yaml.Node
}

// encodeMapping writes a struct of scenario.go key by key, leaving zero
// values out but for the required ones.
func encodeMapping(v reflect.Value, flow bool) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	if flow {
		m.Style = yaml.FlowStyle
	}
	for _, f := range fieldsOf(v.Type()) {
		var n *yaml.Node
		switch x := v.Field(f.index); {
		case f.custom:
			n = v.Addr().Interface().(keyEncoder).encodeKey(f.key)
		case x.IsZero() && !f.required && !f.later, x.Kind() == reflect.Slice && x.Len() == 0:
		default:
			n = encodeValue(x, f)
		}
		if n != nil && !(n.Kind == yaml.MappingNode && len(n.Content) == 0) {
			m.Content = append(m.Content, str(f.key), n)
		}
	}
	return m
}

// encodeValue writes one value as field f says.
func encodeValue(v reflect.Value, f field) *yaml.Node {
	if u, ok := units[f.unit]; ok {
		return str(v.Convert(u.typ).Interface().(fmtStringer).String())
	}
	switch f.unit {
	case "count":
		return plain(strconv.FormatInt(v.Int(), 10))
	case "seed":
		return plain(strconv.FormatUint(v.Uint(), 10))
	case "changes":
		return plain(fmtFloat(v.Float()))
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.CanAddr() {
		if h, ok := v.Addr().Interface().(nodeEncoder); ok {
			return h.encodeNode()
		}
	}
	switch v.Kind() {
	case reflect.String:
		return str(v.String())
	case reflect.Bool:
		return boolean(v.Bool())
	case reflect.Slice:
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		if v.Type().Elem().Kind() == reflect.String {
			seq.Style = yaml.FlowStyle
		}
		for i := range v.Len() {
			seq.Content = append(seq.Content, encodeValue(v.Index(i), field{flow: f.flow}))
		}
		return seq
	}
	return encodeMapping(v, f.flow)
}

// fmtStringer is the String of the typed units.
type fmtStringer interface{ String() string }

// encodeNode writes the same timeline for both directions once, under
// both, or the hops.
func (net *Network) encodeNode() *yaml.Node {
	t := reflect.TypeFor[Network]()
	if len(net.Hops) > 0 {
		return &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("hops"), encodeValue(reflect.ValueOf(net.Hops), fieldOf(t, "hops"))}}
	}
	return encodeDirections(&yaml.Node{Kind: yaml.MappingNode}, t, net.Up, net.Down, net.UpMTU, net.DownMTU)
}

// encodeNode writes a hop's name and its directions, as a network's.
func (h *Hop) encodeNode() *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("name"), str(h.Name)}}
	return encodeDirections(m, reflect.TypeFor[Hop](), h.Up, h.Down, h.UpMTU, h.DownMTU)
}

// encodeDirections appends the keys a network and a hop (of type t)
// share to m: one timeline under both when the two are the same.
func encodeDirections(m *yaml.Node, t reflect.Type, up, down []Phase, upMTU, downMTU int) *yaml.Node {
	f := fieldOf(t, "up")
	switch {
	case len(up) > 0 && reflect.DeepEqual(up, down):
		m.Content = append(m.Content, str("both"), encodeValue(reflect.ValueOf(down), f))
	default:
		for _, d := range []struct {
			key    string
			phases []Phase
		}{{"up", up}, {"down", down}} {
			if len(d.phases) > 0 {
				m.Content = append(m.Content, str(d.key), encodeValue(reflect.ValueOf(d.phases), f))
			}
		}
	}
	for _, d := range []struct {
		key string
		mtu int
	}{{"up_mtu", upMTU}, {"down_mtu", downMTU}} {
		if d.mtu != 0 {
			m.Content = append(m.Content, str(d.key), encodeValue(reflect.ValueOf(d.mtu), fieldOf(t, d.key)))
		}
	}
	return m
}

// encodeNode writes a constant as one duration, a list as a list, and
// only the fields of its form otherwise.
func (d *Dist) encodeNode() *yaml.Node {
	switch {
	case d.List != nil:
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, x := range d.List {
			seq.Content = append(seq.Content, str(FormatDuration(x)))
		}
		return seq
	case d.SD == 0 && d.Min == 0 && d.Max == 0:
		return str(FormatDuration(d.Mean))
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	add := func(key string, v time.Duration) { m.Content = append(m.Content, str(key), str(FormatDuration(v))) }
	if d.SD != 0 {
		add("mean", d.Mean)
		add("sd", d.SD)
	}
	if d.Min != 0 || d.Max != 0 {
		add("min", d.Min)
		add("max", d.Max)
	}
	return m
}

// encodeNode writes a path as one word when only the strategy is set, as
// a mapping otherwise, and not at all when it is the default.
func (p *Path) encodeNode() *yaml.Node {
	if *p == (Path{Connect: p.Connect}) {
		if p.Connect == "" {
			return nil
		}
		return str(p.Connect)
	}
	return encodeMapping(reflect.ValueOf(p).Elem(), false)
}

// encodeNode writes a trace from the start that wraps as its path alone,
// a mapping otherwise.
func (tr *Trace) encodeNode() *yaml.Node {
	if tr.Offset == 0 && !tr.NoLoop {
		return str(tr.File)
	}
	return encodeMapping(reflect.ValueOf(tr).Elem(), true)
}

func (tr *Trace) encodeKey(string) *yaml.Node {
	if !tr.NoLoop {
		return nil
	}
	return boolean(false)
}

func (ph *ScreenPhase) encodeKey(string) *yaml.Node {
	if !ph.NoLoop {
		return nil
	}
	return boolean(false)
}

func (a *Agent) encodeKey(key string) *yaml.Node {
	switch {
	case key == "convert" && a.ConvertOnCPU:
		return str("cpu")
	case key == "refine" && a.NoRefine:
		return str("off")
	case key == "refine":
		return encodeMapping(reflect.ValueOf(refine{a.RefinePasses, a.RefineEvery}), true)
	}
	return nil
}

func (c *Controller) encodeKey(string) *yaml.Node {
	if c.Bitrate == 0 {
		return nil
	}
	return str(FormatRate(c.Bitrate))
}

func (e *Expectation) encodeKey(key string) *yaml.Node {
	m, _ := LookupMeasurement(e.Measure)
	switch {
	case key == "min" && e.Min != nil:
		return plain(fmtValue(m, *e.Min))
	case key == "max" && e.Max != nil:
		return plain(fmtValue(m, *e.Max))
	case key == "to" && e.To != 0:
		return str(FormatDuration(e.To))
	}
	return nil
}

// str is a string scalar; the emitter quotes what would otherwise read as
// another type ("off", "1").
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// plain is a number, written without quotes.
func plain(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func boolean(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

// fmtFloat writes a plain number as short as it reads back.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// fmtValue writes an expectation's bound in its measurement's unit.
func fmtValue(m Measurement, v float64) string {
	switch m.Unit {
	case UnitDuration:
		if math.Abs(v) < 9e9 { // within time.Duration
			return FormatDuration(time.Duration(math.Round(v * 1e9)))
		}
	case UnitRate:
		if math.Abs(v) < 9e18 && v == math.Trunc(v) {
			return FormatRate(int64(v))
		}
	case UnitFraction, UnitShare:
		return FormatPercent(v)
	}
	return fmtFloat(v)
}

func itoa(i int) string { return strconv.Itoa(i) }
