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
