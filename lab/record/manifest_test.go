package record

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/modroot"
)

// maxCorpus bounds the corpus's files together, so that a clone stays
// small.
const maxCorpus = 40 << 20

// The corpus's manifest says what its files say: every file listed exists
// and every recording is listed, and each entry's size, refresh, frames,
// duration, bytes and metadata are its file's own. The folder stays under
// 40 MB, and every kind has a recording.
func TestManifest(t *testing.T) {
	root, err := modroot.Find()
	require.NoError(t, err)
	dir := filepath.Join(root, "testdata", "recordings")
	m, err := ReadManifest(dir)
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(dir, "*.labrec"))
	require.NoError(t, err)
	var listed, kinds []string
	var total int64
	for _, e := range m.Recordings {
		listed = append(listed, e.File)
		kinds = append(kinds, e.Kind)
		got, err := EntryOf(filepath.Join(dir, e.File))
		require.NoError(t, err, "%s is listed", e.File)
		require.Equal(t, got, e, "%s: the manifest's entry differs from the file", e.File)
		total += got.Bytes
	}
	for _, f := range files {
		require.Contains(t, listed, filepath.Base(f), "%s is not in %s", f, ManifestFile)
	}
	require.Equal(t, total, m.TotalBytes)
	var all int64
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		all += info.Size()
	}
	require.Less(t, all, int64(maxCorpus), "the corpus folder is %d bytes", all)
	for _, k := range Kinds() {
		require.True(t, slices.Contains(kinds, k.Name), "no recording of %s", k.Name)
	}
}
