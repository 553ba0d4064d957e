package reports

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab"
)

// SCHEMA.md names every JSON field of the three formats: a field added to
// a type and not to the document fails here.
func TestSchemaDocumentsEveryField(t *testing.T) {
	doc, err := os.ReadFile("SCHEMA.md")
	require.NoError(t, err)
	seen := map[reflect.Type]bool{}
	var fields []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || seen[ty] || ty.PkgPath() == "time" {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			fields = append(fields, name)
			walk(f.Type)
		}
	}
	for _, v := range []any{lab.ScenarioResult{}, Suite{}, Baseline{}} {
		walk(reflect.TypeOf(v))
	}
	require.Greater(t, len(fields), 100)
	for _, f := range fields {
		require.Contains(t, string(doc), "`"+f+"`", "SCHEMA.md does not document %q", f)
	}
	for _, s := range []string{lab.ResultSchema, SuiteSchema, BaselineSchema} {
		require.Contains(t, string(doc), "## `"+s+"`")
	}
}
