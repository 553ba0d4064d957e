package reports

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

// A scenario with a trace beside it has one fingerprint wherever its
// folder is checked out (the loader writes the trace's path absolute),
// and another when the trace it names is another.
func TestFingerprintOfATraceBesideTheFile(t *testing.T) {
	load := func(dir, trace string) string {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "traces"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "traces", trace), []byte("0\n5\n10\n"), 0o644))
		yaml := "name: beside\ndescription: d\nduration: 2s\nnetwork:\n  down: {delay: 10ms, trace: traces/" + trace + "}\n"
		t.Chdir(filepath.Dir(dir))
		sc, err := scenarios.Parse(filepath.Join(filepath.Base(dir), "s.yaml"), []byte(yaml), nil)
		require.NoError(t, err)
		return Fingerprint(sc)
	}
	here := load(filepath.Join(t.TempDir(), "team"), "cell.down")
	there := load(filepath.Join(t.TempDir(), "checkout"), "cell.down")
	require.Equal(t, here, there, "the same folder checked out at two paths")
	require.NotEqual(t, here, load(filepath.Join(t.TempDir(), "team"), "other.down"), "another trace")
}
