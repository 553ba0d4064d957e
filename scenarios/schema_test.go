package scenarios

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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

// TestSchemaKeys: the schema and the loader accept the same keys. Every
// mapping of the format is a $defs entry of the same name as in objects
// (the root is "scenario"), with exactly the loader's keys and no others.
func TestSchemaKeys(t *testing.T) {
	s := schema(t)
	require.Equal(t, "https://json-schema.org/draft/2020-12/schema", s["$schema"])
	defs := dig(t, s, "$defs").(map[string]any)

	found := map[string]bool{}
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"]; ok && v["type"] == "object" {
				kind, isDef := strings.CutPrefix(at, "$defs/")
				if at == "" {
					kind, isDef = "scenario", true
				}
				require.True(t, isDef, "schema: the object at %q is not a $defs entry: give it one, named after its objects kind", at)
				if kind == "dist_object" {
					kind = "dist"
				}
				want, ok := objects[kind]
				require.True(t, ok, "schema: $defs/%s has properties, but the loader has no object %s", kind, kind)
				require.Equal(t, sorted(want), jsonKeys(props), "keys of %s", kind)
				require.Equal(t, false, v["additionalProperties"], "%s must refuse other keys", kind)
				for _, f := range fieldsOf(kinds()[kind]) {
					if f.required && (kind != "scenario" || f.key != "duration") { // duration may come from defaults.yaml
						require.Contains(t, strings_(v["required"]), f.key, "%s.%s is required", kind, f.key)
					}
				}
				found[kind] = true
			}
			for k, x := range v {
				next := k
				if at != "" {
					next = at + "/" + k
				}
				if at == "" && k != "$defs" {
					next = "root/" + k
				}
				walk(next, x)
			}
		case []any:
			for _, x := range v {
				walk(at+"/[]", x)
			}
		}
	}
	walk("", s)
	for kind := range objects {
		require.True(t, found[kind], "schema: no $defs/%s for the loader's object %s", kind, kind)
	}
	_ = defs
}

// TestSchemaNames: the names the schema offers are the loader's.
func TestSchemaNames(t *testing.T) {
	s := schema(t)
	def := func(path ...string) []string { return strings_(dig(t, s, append([]string{"$defs"}, path...)...)) }
	require.Equal(t, Sources, def("screen_phase", "properties", "source", "enum"))
	require.Equal(t, JitterDistributions, def("jitter", "properties", "distribution", "enum"))
	require.Equal(t, ControllerKinds, def("controller", "properties", "kind", "enum"))
	require.Equal(t, sorted(SoftwarePresets()), sorted(def("agent", "properties", "encoder", "enum")))
	require.Equal(t, sorted(HardwarePresets()), sorted(def("hardware_preset", "enum")))
	require.Equal(t, Groups, strings_(dig(t, s, "properties", "groups", "items", "enum")))
	require.Equal(t, Paths, strings_(dig(t, s, "properties", "path", "oneOf").([]any)[0].(map[string]any)["enum"]))
	require.Equal(t, Paths, def("path", "properties", "connect", "enum"))
	require.Equal(t, NATs, def("nat", "enum"))
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
		UnitDuration: map[string]any{"$ref": "#/$defs/duration"},
		UnitRate:     map[string]any{"$ref": "#/$defs/rate"},
		UnitFraction: map[string]any{"$ref": "#/$defs/percentage"},
		UnitCount:    map[string]any{"type": "integer", "minimum": 0.0},
		UnitRatio:    map[string]any{"type": "number", "minimum": 0.0},
	}
	seen := map[string]bool{}
	for _, rule := range dig(t, s, "$defs", "expectation", "allOf").([]any) {
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
// names every key and every measurement.
func TestFormatDoc(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	require.NoError(t, err)
	example, err := os.ReadFile("testdata/good/every-key.yaml")
	require.NoError(t, err)
	body := string(example)[strings.Index(string(example), "name: "):]
	require.True(t, strings.Contains(string(doc), "```yaml\n"+body+"```"), "FORMAT.md's complete example is testdata/good/every-key.yaml")
	// Every key appears in a code span of the text before the example.
	text := string(doc)[:strings.Index(string(doc), "## Complete example")]
	words := map[string]bool{}
	for _, span := range regexp.MustCompile("`[^`]*`").FindAllString(text, -1) {
		for _, w := range regexp.MustCompile(`[a-z0-9_-]+`).FindAllString(span, -1) {
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
