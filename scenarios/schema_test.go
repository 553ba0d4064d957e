package scenarios

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// schema reads scenario.schema.json as plain JSON.
func schema(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("scenario.schema.json")
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(data, &s))
	return s
}

func jsonKeys(m any) []string {
	return slices.Sorted(maps.Keys(m.(map[string]any)))
}

func sorted(list []string) []string { return slices.Sorted(slices.Values(list)) }

func strings_(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// dig follows a path of keys through the schema.
func dig(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		require.True(t, ok, "schema: %v is not an object at %s", path, p)
		v, ok = m[p]
		require.True(t, ok, "schema: no %s in %v", p, path)
	}
	return v
}

// TestSchemaValidates: a real validator accepts every library and testdata
// scenario as written, and refuses the broken files whose mistake a schema
// can see.
func TestSchemaValidates(t *testing.T) {
	data, err := os.ReadFile("scenario.schema.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("scenario.schema.json", doc))
	sch, err := c.Compile("scenario.schema.json")
	require.NoError(t, err)
	validate := func(file string) error {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var v any
		require.NoError(t, yaml.Unmarshal(data, &v), file)
		j, err := json.Marshal(v)
		require.NoError(t, err, file)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		require.NoError(t, err, file)
		return sch.Validate(inst)
	}
	lib, _ := filepath.Glob("library/*.yaml")
	good, _ := filepath.Glob("testdata/good/*.yaml")
	require.NotEmpty(t, lib)
	for _, file := range append(lib, good...) {
		if filepath.Base(file) != DefaultsFile {
			require.NoError(t, validate(file), file)
		}
	}
	for _, file := range []string{"unknown-key", "missing-unit", "wrong-unit", "loss-out-of-range", "negative-rate",
		"missing-name", "unknown-measurement", "expect-wrong-unit", "unknown-finding", "abr-key-on-fixed",
		"abr-switch-with-fixed", "queue-packets-zero", "expect-missing-key", "expect-key-not-read", "trace-unknown-key"} {
		require.Error(t, validate("testdata/broken/"+file+".yaml"), file)
	}
}

// TestSchemaNames: the names the schema offers are the loader's.
func TestSchemaNames(t *testing.T) {
	s := schema(t)
	def := func(path ...string) []string { return strings_(dig(t, s, append([]string{"$defs"}, path...)...)) }
	require.Equal(t, Sources, def("screen_phase", "properties", "source", "enum"))
	require.Equal(t, JitterDistributions, def("jitter", "properties", "distribution", "enum"))
	require.Equal(t, ControllerKinds, def("controller", "properties", "kind", "enum"))
	require.Equal(t, sorted(SoftwarePresets()), sorted(def("agent", "properties", "encoder", "enum")))
	require.Equal(t, sorted(HardwarePresets()), sorted(def("agent", "properties", "hardware", "items", "enum")))
	require.Equal(t, Groups, strings_(dig(t, s, "properties", "groups", "items", "enum")))
	require.Equal(t, Paths, strings_(dig(t, s, "properties", "path", "oneOf").([]any)[0].(map[string]any)["enum"]))
	require.Equal(t, Paths, def("path", "properties", "connect", "enum"))
	require.Equal(t, NATs, def("path", "properties", "agent_nat", "enum"))
	require.Equal(t, "^"+strings.Trim(namePattern.String(), "^$")+"$", dig(t, s, "properties", "name", "pattern"))
	require.Equal(t, findingID.String(), dig(t, s, "properties", "findings", "items", "pattern"))
	require.Len(t, FindingIDs(), 34)
	for _, id := range FindingIDs() {
		require.Regexp(t, findingID, id)
	}
	for _, id := range []string{"N0", "N21", "E0", "E15", "n3", "N03", "F1", ""} {
		require.NotRegexp(t, findingID, id)
	}

	var names []string
	for _, m := range Measurements {
		names = append(names, m.Name)
	}
	require.Equal(t, names, def("expectation", "properties", "measure", "enum"))

	// Each measurement's bounds are checked in its unit.
	want := map[Unit]any{
		UnitDuration:    map[string]any{"$ref": "#/$defs/duration"},
		UnitRate:        map[string]any{"$ref": "#/$defs/rate"},
		UnitFraction:    map[string]any{"$ref": "#/$defs/percentage"},
		UnitCount:       map[string]any{"type": "integer", "minimum": 0.0},
		UnitRatio:       map[string]any{"type": "number", "minimum": 0.0},
		UnitShare:       map[string]any{"$ref": "#/$defs/percentage_any"},
		UnitCorrelation: map[string]any{"type": "number", "minimum": -1.0, "maximum": 1.0},
	}
	seen := map[string]bool{}
	for _, rule := range dig(t, s, "$defs", "expectation", "allOf").([]any) {
		if _, keyRule := dig(t, rule, "if", "properties", "measure").(map[string]any)["const"]; keyRule {
			continue // TestSchemaMeasurementKeys
		}
		ms := strings_(dig(t, rule, "if", "properties", "measure", "enum"))
		for _, name := range ms {
			m, ok := LookupMeasurement(name)
			require.True(t, ok, name)
			require.False(t, seen[name], "%s in two rules", name)
			seen[name] = true
			require.Equal(t, want[m.Unit], dig(t, rule, "then", "properties", "min"), name)
			require.Equal(t, want[m.Unit], dig(t, rule, "then", "properties", "max"), name)
		}
	}
	require.Len(t, seen, len(Measurements))
}

// TestSchemaMeasurementKeys: the schema requires the keys a measurement
// reads (latency, at, every), refuses from and to beside one taken at an
// instant, and refuses each key beside the measurements that do not read
// it, as the loader does.
func TestSchemaMeasurementKeys(t *testing.T) {
	s := schema(t)
	required := map[string][]string{}
	for _, rule := range dig(t, s, "$defs", "expectation", "allOf").([]any) {
		name, keyRule := dig(t, rule, "if", "properties", "measure").(map[string]any)["const"].(string)
		if !keyRule {
			continue
		}
		require.Equal(t, []any{"measure"}, dig(t, rule, "if", "required"))
		require.NotContains(t, required, name, "%s in two rules", name)
		keys := strings_(dig(t, rule, "then", "required"))
		required[name] = keys
		if slices.Contains(keys, "at") {
			require.Equal(t, map[string]any{"from": false, "to": false}, dig(t, rule, "then", "properties"), name)
		}
	}
	want := map[string][]string{}
	for _, m := range Measurements {
		if keys := MeasurementKeys(m.Name); len(keys) > 0 {
			want[m.Name] = keys
		}
	}
	require.Equal(t, want, required)
	dependent := dig(t, s, "$defs", "expectation", "dependentSchemas").(map[string]any)
	require.Equal(t, []string{"at", "every", "flow", "latency"}, jsonKeys(dependent))
	for key, sch := range dependent {
		var readers []string
		for name, keys := range want {
			if slices.Contains(keys, key) {
				readers = append(readers, name)
			}
		}
		require.Equal(t, sorted(readers), sorted(strings_(dig(t, sch, "properties", "measure", "enum"))), key)
	}
}

// TestSchemaControllerKinds: where a controller's kind is written, the
// schema refuses the keys that kind does not read, as the loader does, and
// the ABR's switches beside another kind.
func TestSchemaControllerKinds(t *testing.T) {
	s := schema(t)
	seen := map[string]bool{}
	for _, rule := range dig(t, s, "$defs", "controller", "allOf").([]any) {
		require.Equal(t, []any{"kind"}, dig(t, rule, "if", "required"))
		kind := dig(t, rule, "if", "properties", "kind", "const").(string)
		require.Contains(t, ControllerKinds, kind)
		require.False(t, seen[kind], "%s in two rules", kind)
		seen[kind] = true
		var refused []string
		for _, key := range objects["controller"] {
			if key != "kind" && !slices.Contains(kindFields[kind], key) {
				refused = append(refused, key)
			}
		}
		then := dig(t, rule, "then", "properties").(map[string]any)
		require.Equal(t, sorted(refused), jsonKeys(then), "keys refused for kind %s", kind)
		for key, v := range then {
			require.Equal(t, false, v, "%s with kind %s", key, kind)
		}
	}
	require.Len(t, seen, len(ControllerKinds))

	rules := dig(t, s, "allOf").([]any)
	require.Len(t, rules, 1)
	require.Equal(t, []any{"controller"}, dig(t, rules[0], "if", "required"))
	require.Equal(t, []any{"kind"}, dig(t, rules[0], "if", "properties", "controller", "required"))
	others := slices.DeleteFunc(slices.Clone(ControllerKinds), func(k string) bool { return k == "abr" })
	require.Equal(t, others, strings_(dig(t, rules[0], "if", "properties", "controller", "properties", "kind", "enum")))
	then := dig(t, rules[0], "then", "properties", "switches", "properties").(map[string]any)
	require.Equal(t, sorted(abrSwitches), jsonKeys(then))
	for key, v := range then {
		require.Equal(t, false, v, key)
	}
}

// TestSchemaFlowKinds: where a flow's kind is written, the schema refuses
// the keys that kind does not read, as the loader does, and requires a
// cbr flow's rate.
func TestSchemaFlowKinds(t *testing.T) {
	s := schema(t)
	seen := map[string]bool{}
	for _, rule := range dig(t, s, "$defs", "flow", "allOf").([]any) {
		require.Equal(t, []any{"kind"}, dig(t, rule, "if", "required"))
		kind := dig(t, rule, "if", "properties", "kind", "const").(string)
		require.Contains(t, FlowKinds, kind)
		require.False(t, seen[kind], "%s in two rules", kind)
		seen[kind] = true
		var refused []string
		for _, key := range objects["flow"] {
			if !slices.Contains([]string{"name", "kind", "start", "stop"}, key) && !slices.Contains(flowFields[kind], key) {
				refused = append(refused, key)
			}
		}
		require.Equal(t, sorted(refused), jsonKeys(dig(t, rule, "then", "properties").(map[string]any)), "keys refused for kind %s", kind)
		if kind == "cbr" {
			require.Equal(t, []any{"rate"}, dig(t, rule, "then", "required"))
		}
	}
	require.Len(t, seen, len(FlowKinds))
	require.Equal(t, FlowKinds, strings_(dig(t, s, "$defs", "flow", "properties", "kind", "enum")))
	require.Equal(t, Directions, strings_(dig(t, s, "$defs", "flow", "properties", "direction", "enum")))
	require.Equal(t, Congestions, strings_(dig(t, s, "$defs", "flow", "properties", "congestion", "enum")))
}

// TestSchemaUnitPatterns: the schema's unit patterns accept what the
// parsers accept, on the ways people write values (the ranges beyond a
// pattern's reach are the loader's to check).
func TestSchemaUnitPatterns(t *testing.T) {
	s := schema(t)
	pattern := func(def string) *regexp.Regexp {
		return regexp.MustCompile(dig(t, s, "$defs", def, "pattern").(string))
	}
	ok := func(err error) bool { return err == nil }
	for _, tc := range []struct {
		def     string
		parses  func(string) bool
		samples []string
	}{
		{"duration", func(v string) bool { d, err := ParseDuration(v); return ok(err) && d >= 0 },
			[]string{"25ms", "1.5s", "500us", "500µs", "500μs", "2m", "1h", "1m30s", ".5s", "0s", "25", "0", "25 ms", "25sec", "-1s", "5%", "1e3ms", ""}},
		{"signed_duration", func(v string) bool { return ok(second(ParseDuration(v))) },
			[]string{"3s", "-1s", "+1s", "-1.5ms", "-1", "1 s", "1Hz"}},
		{"rate", func(v string) bool { return ok(second(ParseRate(v))) },
			[]string{"5Mbit/s", "500kbit/s", "1Gbit/s", "64000bit/s", "3.2Mbit/s", "5Mbps", "5MB/s", "5", "-5Mbit/s", "5 Mbit/s"}},
		{"percentage", func(v string) bool { return ok(second(ParsePercent(v))) },
			[]string{"1%", "0.1%", "100%", "100.0%", "0%", "99.99%", ".5%", "120%", "100.1%", "-1%", "1", "1 %", "1pct"}},
		{"percentage_any", func(v string) bool { f, err := parseShare(v); return ok(err) && f >= 0 },
			[]string{"15%", "150%", "100%", "0%", "1000.5%", ".5%", "-15%", "15", "15 %", "0.15"}},
		{"size", func(v string) bool { return ok(second(ParseBytes(v))) },
			[]string{"28B", "256KB", "256KiB", "1MB", "1MiB", "1GB", "1.5KB", "256kb", "256", "-1KB", "1 KB"}},
		{"frequency", func(v string) bool { return ok(second(ParseHz(v))) },
			[]string{"60Hz", "59.94Hz", "60", "60hz", "-60Hz", "60 Hz"}},
		{"ppm", func(v string) bool { return ok(second(ParsePPM(v))) },
			[]string{"50ppm", "-20ppm", "+5ppm", "0.5ppm", "50", "50 ppm", "50PPM"}},
	} {
		re := pattern(tc.def)
		for _, v := range tc.samples {
			require.Equal(t, tc.parses(v), re.MatchString(v), "%s %q: parser and schema disagree", tc.def, v)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestFormatDoc: FORMAT.md shows the complete example the tests load, and
// its key tables and key lists are the format's keys (those of the types
// in scenario.go), so that they fail this test when they drift: each
// table lists exactly its mapping's keys, each mapping described inline
// lists its keys in order, and the measurement table is Measurements.
func TestFormatDoc(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	require.NoError(t, err)
	example, err := os.ReadFile("testdata/good/every-key.yaml")
	require.NoError(t, err)
	body := string(example)[strings.Index(string(example), "name: "):]
	require.True(t, strings.Contains(string(doc), "```yaml\n"+body+"```"), "FORMAT.md's complete example is testdata/good/every-key.yaml")
	text := string(doc)[:strings.Index(string(doc), "## Complete example")]

	// The key tables: a section's table against its mapping, the keys
	// prefixed where one table holds several.
	sections := map[string]string{}
	for _, sec := range strings.Split(text, "\n### ")[1:] {
		title, rest, _ := strings.Cut(sec, "\n")
		sections[title] = rest
	}
	span := regexp.MustCompile("`([^`]*)`") // empty spans pair the fences' backticks
	tableKeys := func(section string) []string {
		var keys []string
		for _, line := range strings.Split(sections[section], "\n") {
			if !strings.HasPrefix(line, "| `") {
				continue
			}
			cell := strings.Split(line, "|")[1]
			for _, m := range span.FindAllStringSubmatch(cell, -1) {
				keys = append(keys, m[1])
			}
		}
		return sorted(keys)
	}
	prefixed := func(prefix string, keys []string) []string {
		var out []string
		for _, k := range keys {
			out = append(out, prefix+k)
		}
		return out
	}
	for section, want := range map[string][]string{
		"Top level":      objects["scenario"],
		"network":        objects["phase"],
		"agent":          objects["agent"],
		"controller":     objects["controller"],
		"switches":       objects["switches"],
		"path":           objects["path"],
		"traffic":        objects["flow"],
		"viewer, clocks": append(prefixed("viewer.", objects["viewer"]), prefixed("clocks.", objects["clocks"])...),
		"screen":         {"complexity", "rate", "region", "file", "offset", "loop"}, // at and source are in the text above it
	} {
		require.Equal(t, sorted(want), tableKeys(section), "FORMAT.md's table in %q", section)
	}
	// The mappings described inline, as {key, key, ...}.
	for _, kind := range []string{"jitter", "gilbert", "queue", "spikes", "screen_phase", "region", "refine",
		"clock", "step", "expectation", "window", "trace", "object_sizes"} {
		require.Contains(t, text, "{"+strings.Join(objects[kind], ", ")+"}", "FORMAT.md lists the keys of %s", kind)
	}
	// The rest (network, outages, dist) name every key somewhere.
	words := map[string]bool{}
	for _, m := range span.FindAllString(text, -1) {
		for _, w := range regexp.MustCompile(`[a-z0-9_-]+`).FindAllString(m, -1) {
			words[w] = true
		}
	}
	for kind, keys := range objects {
		for _, key := range keys {
			require.True(t, words[key], "FORMAT.md does not name %s.%s", kind, key)
		}
	}
	for _, m := range Measurements {
		require.True(t, strings.Contains(string(doc), "| `"+m.Name+"` | "+string(m.Unit)+" |"), "FORMAT.md's measurement table lacks %s", m.Name)
	}
}
