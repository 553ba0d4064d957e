package main

import (
	"bytes"
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
