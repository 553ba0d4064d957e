package screenstats

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

var reportDir = flag.String("screenstats.report", "", "measure the painter's kinds and every recording of testdata/recordings at 720p and write content.md into this folder")

// painted are the painter's kinds, each a whole timeline of its source.
var painted = []struct {
	kind string
	src  screen.Source
}{
	{"animation", screen.Animation{}}, {"typing", screen.Typing{}}, {"scrolling", screen.Scrolling{}},
	{"video", screen.Video{}}, {"photo", screen.Photo{}}, {"still", screen.Still{}},
}

// TestContentReport sets the painter's kinds beside the recorded desktops
// with -screenstats.report DIR (content.md).
func TestContentReport(t *testing.T) {
	if *reportDir == "" {
		t.Skip("skipping: -screenstats.report DIR measures the painter and the corpus (go test ./agent/screen/screenstats -run TestContentReport -screenstats.report $PWD/testdata/calibrate/recorded -v -timeout 30m)")
	}
	const length = 20 * time.Second
	var b strings.Builder
	b.WriteString("| screen | kind | changes a second | share changed | detail | predictable by a shift |\n|---|---|---|---|---|---|\n")
	row := func(name, kind string, s Stats) {
		fmt.Fprintf(&b, "| %s | %s | %.1f | %.2f%% | %.1f | %.0f%% |\n", name, kind, s.ChangesPerSecond, 100*s.Changed, s.Detail, 100*s.Predictable)
		t.Logf("%s: %v", name, s)
	}
	for _, p := range painted {
		s, err := Painted(p.src, 1, 1280, 720, length)
		require.NoError(t, err)
		row("painted", p.kind, s)
	}
	files, err := filepath.Glob("../../../testdata/recordings/*.labrec")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recordings in testdata/recordings")
	for _, f := range files {
		rec, err := recording.Open(f)
		require.NoError(t, err)
		s, err := Recorded(rec, length)
		require.NoError(t, err)
		row(filepath.Base(f), rec.Meta.Kind, s)
	}
	require.NoError(t, os.MkdirAll(*reportDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(*reportDir, "content.md"), []byte(b.String()), 0o644))
}
