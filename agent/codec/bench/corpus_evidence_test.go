package bench

import (
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/evidence"
	"github.com/nuvirahub/latencylab/internal/quantile"
)

// TestCorpusKeyframeEvidence encodes the first frame of every recording of
// the corpus (testdata/recordings) with the tile codec, Hextile and one
// zstd frame per tile, each output decoded back to the frame, and pins the
// ratios E5's and E6's evidence quote: bytes only, the same at every run.
func TestCorpusKeyframeEvidence(t *testing.T) {
	files, err := filepath.Glob("../../../testdata/recordings/*.labrec")
	require.NoError(t, err)
	require.Len(t, files, 10, "the corpus's ten recordings")
	cds := SelectCodecs(regexp.MustCompile("^(tile|hextile|" + TilePerTile + ")$"))
	var perTile, perFrame []float64
	var photo, photoPerPixel float64
	for _, f := range files {
		rec, err := recording.Open(f)
		require.NoError(t, err)
		play, err := rec.Play()
		require.NoError(t, err)
		_, first, err := play.Next()
		require.NoError(t, err)
		require.NoError(t, play.Close())
		rs, err := runFrames(rec.Meta.Kind, nil, first, cds, 0, 1)
		require.NoError(t, err)
		bytes := map[string]float64{}
		for _, r := range rs {
			bytes[r.Codec] = float64(r.Bytes)
		}
		perFrame = append(perFrame, bytes["hextile"]/bytes["tile"])
		perTile = append(perTile, bytes["hextile"]/bytes[TilePerTile])
		t.Logf("%s: tile %.0f, hextile %.0f, tile-pertile %.0f bytes", rec.Meta.Kind, bytes["tile"], bytes["hextile"], bytes[TilePerTile])
		if rec.Meta.Kind == "photo" {
			photo = bytes["hextile"] / bytes["tile"]
			photoPerPixel = bytes["hextile"] / float64(first.W*first.H)
		}
	}
	e5 := evidence.For(t, "E5", "go test ./agent/codec/bench -run TestCorpusKeyframeEvidence -v")
	e5.Figure(`Hextile/tile ([\d.]+)-([\d.]+)x, median ([\d.]+)x`, slices.Min(perFrame), slices.Max(perFrame), quantile.Median(perFrame))
	e5.Figure(`frame per tile ([\d.]+)-([\d.]+)x, median ([\d.]+)x`, slices.Min(perTile), slices.Max(perTile), quantile.Median(perTile))
	e5.Figure(`\((\d+)p`, float64(720))
	require.NoError(t, e5.Err())
	e6 := evidence.For(t, "E6", "go test ./agent/codec/bench -run TestCorpusKeyframeEvidence -v")
	e6.Figure(`Hextile/tile ([\d.]+)-([\d.]+)x, median ([\d.]+)x`, slices.Min(perFrame), slices.Max(perFrame), quantile.Median(perFrame))
	e6.Figure(`the photos' ([\d.]+)x with Hextile at ([\d.]+) bytes a pixel`, photo, photoPerPixel)
	e6.Figure(`frame per tile ([\d.]+)-([\d.]+)x`, slices.Min(perTile), slices.Max(perTile))
	e6.Figure(`\((\d+)p`, float64(720))
	require.NoError(t, e6.Err())
	// The README's sentence on the same figures, beside the write-up's.
	readme := evidence.Doc(t, "README.md", "On the first frames of ten recorded real", "above all of them.")
	readme.Figure(`Hextile is ([\d.]+)-([\d.]+)x the tile codec's bytes, median ([\d.]+)x`, slices.Min(perFrame), slices.Max(perFrame), quantile.Median(perFrame))
	readme.Figure(`write-up's ([\d.]+)x lies`, 1.8) // E5's documented figure
	readme.Figure(`its (\d+)-(\d+)x above`, 10, 22) // E6's, at 720p and 4K
	require.NoError(t, readme.Err())
}
