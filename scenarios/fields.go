package scenarios

import (
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
)

// field is one key of the format, as the tags of a struct field in
// scenario.go describe it. The loader, the writer, the schema and the
// checks of FORMAT.md all read the format from these.
type field struct {
	key   string
	index int // in the struct
	typ   reflect.Type
	// unit and the flags come from the format tag.
	unit                                              string
	required, later, positive, nonempty, list, custom bool
	// flow writes the value's mappings on one line.
	flow bool
	// hint, missing and expected are the tags of the same names; names
	// is the key of nameLists.
	hint, missing, expected, names string
}

var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf returns the keys of a mapping type, in the order of its fields,
// which is the order the loader reads them, the writer writes them and the
// messages list them.
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		key, opts, _ := strings.Cut(tag, ",")
		f := field{key: key, index: i, typ: sf.Type, flow: opts == "flow",
			hint: sf.Tag.Get("hint"), missing: sf.Tag.Get("missing"),
			expected: sf.Tag.Get("expected"), names: sf.Tag.Get("names")}
		format := strings.Split(sf.Tag.Get("format"), ",")
		f.unit = format[0]
		for _, flag := range format[1:] {
			switch flag {
			case "required":
				f.required = true
			case "later":
				f.later = true
			case "positive":
				f.positive = true
			case "nonempty":
				f.nonempty = true
			case "list":
				f.list = true
			case "custom":
				f.custom = true
			default:
				panic("scenarios: unknown format flag " + flag + " on " + t.Name() + "." + sf.Name)
			}
		}
		if f.unit == "" && sf.Type == reflect.TypeFor[time.Duration]() {
			f.unit = "duration"
		}
		fs = append(fs, f)
	}
	fieldCache.Store(t, fs)
	return fs
}

// keysOf lists the keys of a mapping type.
func keysOf(t reflect.Type) []string {
	var keys []string
	for _, f := range fieldsOf(t) {
		keys = append(keys, f.key)
	}
	return keys
}

// fieldOf returns the field of t written as key.
func fieldOf(t reflect.Type, key string) field {
	for _, f := range fieldsOf(t) {
		if f.key == key {
			return f
		}
	}
	panic("scenarios: no key " + key + " in " + t.Name())
}

// kindOf names a mapping type the way the messages' kinds and the schema's
// $defs do: ScreenPhase is screen_phase.
func kindOf(t reflect.Type) string {
	var b strings.Builder
	for i, r := range t.Name() {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// mappingForms are the mapping types of custom keys, whose struct field
// holds something else: agent.refine is refine: off or a refine mapping,
// held flat in Agent.
var mappingForms = map[string]reflect.Type{"agent.refine": reflect.TypeFor[refine]()}

// kinds maps the kind of every mapping of the format to its type, from
// Scenario down.
var kinds = sync.OnceValue(func() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[struct{}]() || out[kindOf(t)] != nil {
			return
		}
		out[kindOf(t)] = t
		for _, f := range fieldsOf(t) {
			if m, ok := mappingForms[kindOf(t)+"."+f.key]; ok {
				walk(m)
			}
			walk(f.typ)
		}
	}
	walk(reflect.TypeFor[Scenario]())
	return out
})

// nameLists are the lists of names a string takes, by its names tag: the
// messages list them, the schema makes them its enums.
var nameLists = map[string]func() []string{
	"groups":        func() []string { return Groups },
	"sources":       func() []string { return Sources },
	"distributions": func() []string { return JitterDistributions },
	"cakes":         func() []string { return CakeModes },
	"kinds":         func() []string { return ControllerKinds },
	"paths":         func() []string { return Paths },
	"nats":          func() []string { return NATs },
	"encoders":      SoftwarePresets,
	"hardware":      HardwarePresets,
	"measurements":  measureNames,
	"flows":         func() []string { return FlowKinds },
	"directions":    func() []string { return Directions },
	"framesizes":    func() []string { return FrameSizes },
	"congestions":   func() []string { return Congestions },
	"ecns":          func() []string { return ECNs },
	"sessionecns":   func() []string { return SessionECNs },
	"policies":      func() []string { return ViewerPolicies },
}

// measureNames lists the names of Measurements.
func measureNames() []string {
	names := make([]string, len(Measurements))
	for i, m := range Measurements {
		names[i] = m.Name
	}
	return names
}

// expectedText is what the field's value should be, for messages: its
// expected tag with {names} replaced by its list of names.
func (f field) expectedText() string {
	if f.names == "" || !strings.Contains(f.expected, "{names}") {
		return f.expected
	}
	return strings.ReplaceAll(f.expected, "{names}", list(nameLists[f.names]()))
}

// missing is the message for a required field that is not there.
func missing(kind, key string) string {
	if t, ok := kinds()[kind]; ok {
		for _, f := range fieldsOf(t) {
			if f.key == key && f.missing != "" {
				return "missing required field: expected " + f.missing
			}
		}
	}
	return "missing required field"
}
