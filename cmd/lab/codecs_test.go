package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec/bench"
)

// -codecs picks codecs by name, the per-tile-frame variant among them, and
// the report holds those only.
func TestCodecsSelectsCodecs(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := codecs([]string{"-run", "^key-solid-720p$", "-codecs", "^(hextile|" + bench.TilePerTile + ")$", "-iters", "1", "-warmup", "0", "-out", dir}, &out)
	require.NoError(t, err)
	rep, err := bench.ReadReport(filepath.Join(dir, bench.ReportJSON))
	require.NoError(t, err)
	require.Equal(t, []string{"hextile", bench.TilePerTile}, rep.Codecs)
	require.Len(t, rep.Results, 2)

	err = codecs([]string{"-codecs", "^nothing$", "-iters", "1", "-out", dir}, &out)
	require.ErrorContains(t, err, `no codec matches "^nothing$"`)
}

// -recordings runs the codecs on a folder's recorded desktops and writes
// their table; a folder without recordings, or a flag of the synthetic
// matrix beside it, is refused.
func TestCodecsOnRecordings(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	err := codecs([]string{"-recordings", "../../scenarios/testdata/recordings", "-codecs", "^(tile|hextile)$", "-iters", "1", "-warmup", "0", "-out", dir}, &out)
	require.NoError(t, err)
	md, err := os.ReadFile(filepath.Join(dir, "recorded.md"))
	require.NoError(t, err)
	require.Contains(t, string(md), "| recording | first keyframe bytes: tile / hextile |")
	require.Contains(t, string(md), "`lab codecs -recordings ../../scenarios/testdata/recordings -iters 1 -warmup 0`")
	require.Contains(t, out.String(), "tiny.labrec: ")

	err = codecs([]string{"-recordings", dir, "-iters", "1"}, &out)
	require.ErrorContains(t, err, "no recordings (*.labrec) there")
	err = codecs([]string{"-recordings", dir, "-run", "key"}, &out)
	require.ErrorContains(t, err, "-recordings takes -iters")
}
