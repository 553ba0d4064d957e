package scenarios

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The embedded library loads without a single error, and every scenario in
// it names at least one group (so a go test entry point runs it).
func TestLibraryLoads(t *testing.T) {
	lib, err := Library()
	require.NoError(t, err)
	require.NotEmpty(t, lib)
	for _, sc := range lib {
		require.NotEmpty(t, sc.Groups, sc.Name)
		require.NotEmpty(t, sc.Expect, "%s: a library scenario says what it must show", sc.Name)
	}
}

// Every bound of the library says what kind it is, so that its failure
// can: a band measured from the scenario's runs (make bounds), a
// requirement naming what requires it, or an expected failure (a
// criterion the product misses today).
func TestLibraryBoundsSayTheirKind(t *testing.T) {
	lib, err := Library()
	require.NoError(t, err)
	for _, sc := range lib {
		for i, e := range sc.Expect {
			require.True(t, e.Band || e.Required != "" || e.ExpectedFailure != "",
				"%s:%d: expect[%d] (%s) is neither a band (band: true, set by make bounds) nor a requirement (required: what requires it)", sc.File, e.Line, i, e.Measure)
		}
	}
}
