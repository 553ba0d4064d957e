package modroot

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFindFromASubfolder(t *testing.T) {
	root, err := Find()
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.Equal(t, "internal", filepath.Base(filepath.Dir(mustGetwd(t))), "the test runs in internal/modroot")
	require.Equal(t, filepath.Dir(filepath.Dir(mustGetwd(t))), root)
}

func TestFindOutsideAModule(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := Find()
	require.ErrorIs(t, err, ErrNotFound)
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}
