package grafana

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The set-up written anywhere is this folder's files, byte for byte; a
// second write changes nothing, and a team's edit is refused unless asked.
func TestWriteSetUp(t *testing.T) {
	dir := t.TempDir()
	wrote, err := WriteSetUp(dir, false)
	require.NoError(t, err)
	for _, f := range []string{"compose.yaml", "prometheus.yml", "dashboards/latency.json", "dashboards/abr.json", "dashboards/link.json",
		"provisioning/dashboards/lab.yaml", "provisioning/datasources/prometheus.yaml"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		require.Contains(t, wrote, p)
		have, err := os.ReadFile(p)
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.FromSlash(f))
		require.NoError(t, err)
		require.Equal(t, string(want), string(have), f)
	}
	require.DirExists(t, filepath.Join(dir, "import"), "the folder compose.yaml mounts")

	wrote, err = WriteSetUp(dir, false)
	require.NoError(t, err)
	require.Empty(t, wrote, "nothing differs: nothing written")

	edited := filepath.Join(dir, "dashboards", "latency.json")
	require.NoError(t, os.WriteFile(edited, []byte(`{"edited": true}`), 0o644))
	_, err = WriteSetUp(dir, false)
	require.ErrorIs(t, err, ErrWouldOverwrite)
	have, _ := os.ReadFile(edited)
	require.Equal(t, `{"edited": true}`, string(have), "refused: the edit kept")
	wrote, err = WriteSetUp(dir, true)
	require.NoError(t, err)
	require.Equal(t, []string{edited}, wrote)
}
