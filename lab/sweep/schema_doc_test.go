package sweep

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/reports/schematest"
)

// reports/SCHEMA.md documents every JSON field of a part: a field added to
// the types and not to the document fails here.
func TestSchemaDocumentsThePart(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "reports", "SCHEMA.md"))
	require.NoError(t, err)
	require.Contains(t, string(doc), "## `"+PartSchema+"`")
	fields := schematest.Fields(Part{})
	require.Greater(t, len(fields), 25)
	for _, f := range fields {
		require.Contains(t, string(doc), "`"+f+"`", "SCHEMA.md does not document %q", f)
	}
	for _, m := range Measures {
		require.Contains(t, string(doc), "`"+m+"`")
	}
}
