package docregion

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var r = Region{File: "doc.md", Begin: "<!-- t:begin -->", End: "<!-- t:end -->"}

func TestReplaceKeepsTheProseAround(t *testing.T) {
	out, err := r.Replace("intro\n<!-- t:begin -->\nold\n<!-- t:end -->\nafter\n", "new")
	require.NoError(t, err)
	require.Equal(t, "intro\n<!-- t:begin -->\nnew\n<!-- t:end -->\nafter\n", out)
}

func TestFindNamesTheFileAndTheMarker(t *testing.T) {
	for doc, want := range map[string]string{
		"no markers": `doc.md: marker "<!-- t:begin -->" appears 0 times, want once`,
		"<!-- t:begin --> <!-- t:begin --> <!-- t:end -->": `doc.md: marker "<!-- t:begin -->" appears 2 times, want once`,
		"<!-- t:end --> <!-- t:begin -->":                  `doc.md: marker "<!-- t:end -->" comes before "<!-- t:begin -->"`,
	} {
		_, _, err := r.Find(doc)
		require.EqualError(t, err, want)
	}
}

func TestCheckThenWrite(t *testing.T) {
	root := t.TempDir()
	require.ErrorContains(t, r.Check(root), "doc.md: open")
	path := filepath.Join(root, "doc.md")
	require.NoError(t, os.WriteFile(path, []byte("<!-- t:begin -->\n<!-- t:end -->\n"), 0o644))
	require.NoError(t, r.Check(root))
	require.NoError(t, r.Write(root, "table\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "<!-- t:begin -->\ntable\n<!-- t:end -->\n", string(b))
}

// Every region of the project names its file and what writes it.
func TestAllRegions(t *testing.T) {
	require.Len(t, All, 7)
	for _, r := range All {
		require.NotEmpty(t, r.File)
		require.Contains(t, r.Begin, "generated")
	}
}
