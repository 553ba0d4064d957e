package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/docregion"
	"github.com/nuvirahub/latencylab/internal/modroot"
)

// measurementTable is FORMAT.md's measurement table: a row for each
// measurement of the catalogue, in its order, its keys named before its
// description.
func measurementTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| measurement | unit | what |\n|---|---|---|\n")
	for _, m := range Measurements {
		require.NotContains(t, m.Doc, "|", "%s: a bar in its Doc would end the table's cell", m.Name)
		require.NotContains(t, m.Doc, "\n", "%s: a table's row is one line", m.Name)
		doc := m.Doc
		if len(m.Keys) > 0 {
			doc = "with `" + strings.Join(m.Keys, "` and `") + "`: " + doc
		}
		b.WriteString("| `" + m.Name + "` | " + string(m.Unit) + " | " + doc + " |\n")
	}
	return b.String()
}

// TestFormatMeasurementTable: FORMAT.md's measurement table is the one the
// catalogue gives, so that the two cannot drift. After a change to the
// catalogue:
//
//	go test ./scenarios -run TestFormatMeasurementTable -update
func TestFormatMeasurementTable(t *testing.T) {
	root, err := modroot.Find()
	require.NoError(t, err)
	region := docregion.Measurements
	want := measurementTable(t)
	if *update {
		require.NoError(t, region.Write(root, want))
	}
	doc, err := os.ReadFile(filepath.Join(root, region.File))
	require.NoError(t, err)
	i, j, err := region.Find(string(doc))
	require.NoError(t, err)
	require.Equal(t, "\n"+want, string(doc)[i:j],
		"%s's measurement table is generated from scenarios.Measurements: go test ./scenarios -run TestFormatMeasurementTable -update", region.File)
}
