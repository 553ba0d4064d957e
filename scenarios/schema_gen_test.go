package scenarios

// scenario.schema.json is generated from the types of scenario.go, their
// tags and doc comments, by the test below. After a change to the format:
//
//	go test ./scenarios -run TestSchemaFile -update

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "write the generated scenario.schema.json and FORMAT.md regions")

// TestSchemaFile: the committed schema is the one the types give.
func TestSchemaFile(t *testing.T) {
	got := generateSchema(t)
	if *update {
		require.NoError(t, os.WriteFile("scenario.schema.json", got, 0o644))
	}
	want, err := os.ReadFile("scenario.schema.json")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "scenario.schema.json is generated: go test ./scenarios -run TestSchemaFile -update")
}

// obj is a JSON object that keeps its keys in the order they were set, so
// that the schema lists keys in the format's order.
type obj struct {
	keys []string
	vals map[string]any
}

func newObj(kv ...any) *obj {
	o := &obj{vals: map[string]any{}}
	for i := 0; i+1 < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1])
	}
	return o
}

func (o *obj) set(k string, v any) *obj {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
	return o
}

func (o *obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func ref(def string) *obj { return newObj("$ref", "#/$defs/"+def) }

// The unit strings' patterns: what the parsers read, ranges aside
// (TestSchemaUnitPatterns holds them to the parsers).
const number = `([0-9]+(\.[0-9]*)?|\.[0-9]+)`

var unitDefs = []struct{ name, pattern, desc string }{
	{"duration", `^(` + number + `(ns|us|µs|μs|ms|s|m|h))+$`, "A duration of 0 or more: a number and its unit, no space: 25ms, 1.5s, 500us (or 500µs), 2m, 1h, or a sum such as 1m30s."},
	{"signed_duration", `^[-+]?(` + number + `(ns|us|µs|μs|ms|s|m|h))+$`, "A duration that may be negative, like -1s or 3s."},
	{"rate", `^` + number + `(bit/s|kbit/s|Mbit/s|Gbit/s)$`, "A bit rate above 0 in decimal SI units (k = 1000, M = 1000000, G = 1000000000): 5Mbit/s, 500kbit/s, 1Gbit/s, 64000bit/s."},
	{"percentage", `^(100(\.0*)?|[0-9]{1,2}(\.[0-9]*)?|\.[0-9]+)%$`, "A percentage from 0% to 100%, with its % sign: 1%, 0.1%. A bare number is an error."},
	{"percentage_any", `^` + number + `%$`, "A percentage of 0% or more that may exceed 100% (an increase of 150% multiplies by 2.5), with its % sign: 15%, 150%."},
	{"size", `^` + number + `(B|KB|KiB|MB|MiB|GB|GiB)$`, "A size in bytes, binary units (KB = KiB = 1024 B, MB = MiB = 1024 KB, GB = GiB): 28B, 256KB, 1MB."},
	{"frequency", `^` + number + `Hz$`, "A frequency above 0Hz and at most 1000Hz: 60Hz, 59.94Hz."},
	{"ppm", `^[-+]?` + number + `ppm$`, "A clock drift in parts per million, from -1000ppm to 1000ppm: 50ppm, -20ppm."},
}

// unitRefs maps a format tag's unit to its schema.
var unitRefs = map[string]func() *obj{
	"duration": func() *obj { return ref("duration") },
	"signed":   func() *obj { return ref("signed_duration") },
	"percent":  func() *obj { return ref("percentage") },
	"decrease": func() *obj { return ref("percentage_any") },
	"increase": func() *obj { return ref("percentage_any") },
	"rate":     func() *obj { return ref("rate") },
	"size":     func() *obj { return ref("size") },
	"hz":       func() *obj { return ref("frequency") },
	"ppm":      func() *obj { return ref("ppm") },
	"count":    func() *obj { return newObj("type", "integer", "minimum", 1) },
	"seed":     func() *obj { return newObj("type", "integer", "minimum", 0) },
	"changes": func() *obj {
		return newObj("oneOf", []any{newObj("type", "number", "exclusiveMinimum", 0),
			newObj("type", "string", "pattern", `^`+number+`(Hz)?$`)})
	},
}

// extra holds what a key's tags cannot say: patterns and the shapes of
// custom keys.
var extra = map[string]func(s *obj){
	"scenario.name":        func(s *obj) { s.set("pattern", "^"+strings.Trim(namePattern.String(), "^$")+"$") },
	"scenario.description": func(s *obj) { s.set("minLength", 1) },
	"scenario.findings": func(s *obj) {
		s.set("uniqueItems", true).set("items", newObj("type", "string", "pattern", findingID.String()))
	},
	"scenario.groups":    func(s *obj) { s.set("uniqueItems", true) },
	"agent.convert":      func(s *obj) { s.set("type", "string").set("enum", []string{"gpu", "cpu"}) },
	"agent.refine":       func(s *obj) { s.set("oneOf", []any{newObj("const", "off"), ref("refine")}) },
	"controller.bitrate": func(s *obj) { s.set("$ref", "#/$defs/rate") },
	"expectation.to":     func(s *obj) { s.set("oneOf", []any{ref("duration"), newObj("const", "end")}) },
	"trace.loop":         func(s *obj) { s.set("type", "boolean") },
	"flow.name": func(s *obj) {
		s.set("pattern", "^"+strings.Trim(namePattern.String(), "^$")+"$").set("not", newObj("const", MainFlow))
	},
}

// docs reads the doc comments of scenario.go's types and fields: "Type" and
// "Type.Field". A field without its own comment shares the one above it
// (Min and Max documented together).
func docs(t *testing.T) map[string]string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "scenario.go", nil, parser.ParseComments)
	require.NoError(t, err)
	out := map[string]string{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, spec := range g.Specs {
			ts := spec.(*ast.TypeSpec)
			out[ts.Name.Name] = sentence(ts.Name.Name, g.Doc.Text())
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			prev := ""
			for _, fl := range st.Fields.List {
				text := fl.Doc.Text()
				if text == "" {
					text = fl.Comment.Text()
				}
				if text == "" {
					text = prev
				}
				prev = text
				for _, name := range fl.Names {
					out[ts.Name.Name+"."+name.Name] = sentence(name.Name, text)
				}
			}
		}
	}
	return out
}

// sentence turns a doc comment into a description: "Loss is independent
// random loss" becomes "Independent random loss".
func sentence(name, doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if rest, ok := strings.CutPrefix(doc, name+" is "); ok {
		doc = rest
	} else if rest, ok := strings.CutPrefix(doc, name+" are "); ok {
		doc = rest
	}
	r := []rune(doc)
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}

// generateSchema writes the JSON Schema of the format.
func generateSchema(t *testing.T) []byte {
	doc := docs(t)
	defs := newObj()
	for _, u := range unitDefs {
		defs.set(u.name, newObj("type", "string", "pattern", u.pattern, "description", u.desc))
	}
	defs.set("distribution", newObj("description", doc["Dist"], "oneOf", []any{ref("duration"), ref("dist"),
		newObj("type", "array", "minItems", 1, "items", ref("duration"), "description", doc["Dist.List"])}))
	defs.set("phases", newObj("description", "A direction's timeline: a list of phases, or a single phase (at 0s).",
		"oneOf", []any{ref("phase"), newObj("type", "array", "items", ref("phase"))}))

	var value func(kind string, f field) *obj
	value = func(kind string, f field) *obj {
		s := newObj()
		t := f.typ
		switch {
		case unitRefs[f.unit] != nil && !f.custom:
			s = unitRefs[f.unit]()
		case t == reflect.TypeFor[Dist]() || t == reflect.TypeFor[*Dist]():
			s = ref("distribution")
		case t == reflect.TypeFor[Path]():
			s.set("oneOf", []any{newObj("type", "string", "enum", Paths), ref("path")})
		case t == reflect.TypeFor[*Trace]():
			s.set("oneOf", []any{newObj("type", "string", "minLength", 1), ref("trace")})
		case t == reflect.TypeFor[[]Phase]():
			s = ref("phases")
		case f.custom:
		case t.Kind() == reflect.String:
			s.set("type", "string")
			if f.names != "" {
				s.set("enum", nameLists[f.names]())
			}
			if f.nonempty {
				s.set("minLength", 1)
			}
		case t.Kind() == reflect.Bool:
			s.set("type", "boolean")
		case t == reflect.TypeFor[[]string]():
			items := newObj("type", "string")
			if f.names != "" {
				items.set("enum", nameLists[f.names]())
			}
			s.set("type", "array").set("items", items)
		case t.Kind() == reflect.Slice && f.list:
			s.set("type", "array").set("minItems", 1).set("items", ref(kindOf(t.Elem())))
		case t.Kind() == reflect.Slice:
			s.set("oneOf", []any{ref(kindOf(t.Elem())), newObj("type", "array", "items", ref(kindOf(t.Elem())))})
		case t.Kind() == reflect.Pointer:
			s = ref(kindOf(t.Elem()))
		default:
			s = ref(kindOf(t))
		}
		if x := extra[kind+"."+f.key]; x != nil {
			x(s)
		}
		return s
	}
	object := func(t reflect.Type) *obj {
		kind := kindOf(t)
		props := newObj()
		var req []string
		for _, f := range fieldsOf(t) {
			s := value(kind, f)
			if d := doc[t.Name()+"."+t.Field(f.index).Name]; d != "" {
				s.set("description", d)
			}
			props.set(f.key, s)
			if f.required && !(kind == "scenario" && f.key == "duration") { // duration may come from defaults.yaml
				req = append(req, f.key)
			}
		}
		o := newObj("type", "object", "description", doc[t.Name()], "additionalProperties", false, "properties", props)
		if req != nil {
			o.set("required", req)
		}
		return o
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range kinds() {
			if !yield(k) {
				return
			}
		}
	})
	for _, kind := range names {
		if kind != "scenario" {
			defs.set(kind, object(kinds()[kind]))
		}
	}
	// network and hop: both, up and down are each a timeline.
	for _, kind := range []string{"network", "hop"} {
		defs.vals[kind].(*obj).vals["properties"].(*obj).vals["both"].(*obj).set("$ref", "#/$defs/phases")
	}
	// A controller kind takes only its own keys.
	var kindRules []any
	for _, k := range ControllerKinds {
		refused := newObj()
		for _, key := range keysOf(reflect.TypeFor[Controller]()) {
			if key != "kind" && !slices.Contains(kindFields[k], key) {
				refused.set(key, false)
			}
		}
		kindRules = append(kindRules, newObj("if", newObj("required", []string{"kind"}, "properties", newObj("kind", newObj("const", k))),
			"then", newObj("properties", refused)))
	}
	defs.vals["controller"].(*obj).set("allOf", kindRules)
	// A flow's kind takes only its own keys; cbr needs its rate.
	var flowRules []any
	for _, k := range FlowKinds {
		refused := newObj()
		for _, key := range keysOf(reflect.TypeFor[Flow]()) {
			if !slices.Contains([]string{"name", "kind", "start", "stop"}, key) && !slices.Contains(flowFields[k], key) {
				refused.set(key, false)
			}
		}
		then := newObj("properties", refused)
		if k == "cbr" {
			then.set("required", []string{"rate"})
		}
		flowRules = append(flowRules, newObj("if", newObj("required", []string{"kind"}, "properties", newObj("kind", newObj("const", k))),
			"then", then))
	}
	defs.vals["flow"].(*obj).set("allOf", flowRules)
	// An expectation's bounds are in its measurement's unit.
	byUnit := map[Unit]*obj{
		UnitDuration: ref("duration"), UnitRate: ref("rate"), UnitFraction: ref("percentage"),
		UnitCount: newObj("type", "integer", "minimum", 0), UnitRatio: newObj("type", "number", "minimum", 0),
		UnitShare: ref("percentage_any"), UnitCorrelation: newObj("type", "number", "minimum", -1, "maximum", 1),
	}
	var unitRules []any
	for _, u := range []Unit{UnitDuration, UnitCount, UnitRate, UnitFraction, UnitRatio, UnitShare, UnitCorrelation} {
		var ms []string
		for _, m := range Measurements {
			if m.Unit == u {
				ms = append(ms, m.Name)
			}
		}
		unitRules = append(unitRules, newObj("if", newObj("properties", newObj("measure", newObj("enum", ms))),
			"then", newObj("properties", newObj("min", byUnit[u], "max", byUnit[u]))))
	}
	// A measurement that reads keys of its own requires them (and one
	// taken at an instant has no window); a key is refused beside the
	// measurements that do not read it.
	dependent := newObj()
	for _, m := range Measurements {
		keys := MeasurementKeys(m.Name)
		if len(keys) == 0 {
			continue
		}
		then := newObj("required", keys)
		if slices.Contains(keys, "at") {
			then.set("properties", newObj("from", false, "to", false))
		}
		unitRules = append(unitRules, newObj("if", newObj("required", []string{"measure"}, "properties", newObj("measure", newObj("const", m.Name))),
			"then", then))
	}
	for _, key := range []string{"latency", "at", "every", "flow"} {
		dependent.set(key, newObj("properties", newObj("measure", newObj("enum", measurementsWith(key)))))
	}
	defs.vals["expectation"].(*obj).set("anyOf", []any{newObj("required", []string{"min"}), newObj("required", []string{"max"})}).
		set("allOf", unitRules).set("dependentSchemas", dependent)

	root := object(reflect.TypeFor[Scenario]())
	abrOff := newObj()
	for _, sw := range abrSwitches {
		abrOff.set(sw, false)
	}
	others := slices.DeleteFunc(slices.Clone(ControllerKinds), func(k string) bool { return k == "abr" })
	s := newObj("$schema", "https://json-schema.org/draft/2020-12/schema",
		"$id", "https://github.com/nuvirahub/latencylab/scenarios/scenario.schema.json",
		"title", "Latency lab scenario",
		"description", "One scenario of the latency lab (scenarios/FORMAT.md), generated from the types of scenarios/scenario.go. Values a defaults.yaml beside the file gives may be left out here; the loader (scenarios.Parse) is stricter than this schema: it also checks ranges, the order of timelines and fields that cannot go together.")
	for _, k := range root.keys {
		if k != "description" {
			s.set(k, root.vals[k])
		}
	}
	s.set("allOf", []any{newObj(
		"if", newObj("required", []string{"controller"}, "properties", newObj("controller",
			newObj("required", []string{"kind"}, "properties", newObj("kind", newObj("enum", others))))),
		"then", newObj("properties", newObj("switches", newObj("properties", abrOff))))})
	s.set("$defs", defs)
	out, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	// Readable arrows and ampersands: json escapes them for HTML.
	out = []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(out)))
	return append(out, '\n')
}
