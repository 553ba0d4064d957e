package reports

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/schematest"
)

// SCHEMA.md names every JSON field of three formats: a field added to
// a type and not to the document fails here.
func TestSchemaDocumentsEveryField(t *testing.T) {
	doc, err := os.ReadFile("SCHEMA.md")
	require.NoError(t, err)
	fields := schematest.Fields(result.Run{}, Suite{}, Baseline{})
	require.Greater(t, len(fields), 100)
	for _, f := range fields {
		require.Contains(t, string(doc), "`"+f+"`", "SCHEMA.md does not document %q", f)
	}
	for _, s := range []string{result.Version, SuiteSchema, BaselineSchema} {
		require.Contains(t, string(doc), "## `"+s+"`")
	}
}
