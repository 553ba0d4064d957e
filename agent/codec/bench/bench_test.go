package bench

import (
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Every codec round-trips every case of the matrix at its real size (Run
// decodes and compares), with one timed encode: the benchmark cannot
// report a figure for a codec that is wrong.
func TestEveryCodecOnEveryCase(t *testing.T) {
	if testing.Short() {
		t.Skip("the full matrix at 1080p and 4K takes a while; run without -short")
	}
	for _, c := range Cases() {
		if c.W > 1920 {
			continue // 4K keyframes are covered by the benchmark command
		}
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			checkCase(t, c)
		})
	}
}

// checkCase runs every codec on c at once (RunCase, which round-trips and
// compares each): the case's frames, a third of the test's CPU, are built
// once rather than once per codec.
func checkCase(t *testing.T, c Case) {
	cds := Codecs()
	rs, err := RunCase(c, cds, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(cds) {
		t.Fatalf("%s: %d results for %d codecs", c.Name, len(rs), len(cds))
	}
	for i, r := range rs {
		if r.Codec != cds[i].Name || r.Bytes <= 0 || r.Median <= 0 {
			t.Fatalf("%s/%s: %+v", c.Name, cds[i].Name, r)
		}
	}
}

// BenchmarkCodecs is the matrix as go test -bench cases (benchstat-friendly):
// go test ./agent/codec/bench -run '^$' -bench . -benchtime 200x
// A case's frames are built only when one of its codecs runs, so that a
// CPU profile of a few cases (-bench 'Codecs/^p-points-10pct$/^tile$'
// -cpuprofile) shows the codecs, not the building of every case's frames.
func BenchmarkCodecs(b *testing.B) {
	for _, c := range Cases() {
		b.Run(c.Name, func(b *testing.B) {
			prev, cur := c.Frames()
			for _, cd := range Codecs() {
				b.Run(cd.Name, func(b *testing.B) {
					enc, _, err := cd.New()
					if err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(c.W * c.H * 4))
					var out []byte
					rects := runDetect(prev, cur, nil)
					for b.Loop() {
						rects = runDetect(prev, cur, rects[:0])
						if out, err = enc.Encode(out[:0], prev, cur, rects); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(out)), "bytes/frame")
				})
			}
		})
	}
}

func TestTableShowsBytesTimeAndThroughput(t *testing.T) {
	cases := []Case{{Name: "key-solid-720p"}}
	cds := []Codec{{Name: "tile"}}
	got := Table(cases, cds, []Result{{Case: "key-solid-720p", Codec: "tile", Bytes: 592, Median: 2217 * time.Microsecond, MBps: 1663}})
	want := "| case | tile bytes | tile time |\n|---|---|---|\n| key-solid-720p | 592 | 2.217ms (1663 MB/s) |\n"
	if got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

// synthetic is a small hand-made run: every codec on every case, with
// bytes and times chosen so that each reproduction row has a known answer.
func synthetic() *Report {
	rep := &Report{Schema: ReportSchema, Iters: 1, Cases: Cases()}
	for _, cd := range Codecs() {
		rep.Codecs = append(rep.Codecs, cd.Name)
	}
	for _, c := range rep.Cases {
		for i, cd := range rep.Codecs {
			b := 1000 * (i + 1) // tile 1000, tile-carry 2000, hextile 3000, zrle 4000, tile-pertile 5000
			rep.Results = append(rep.Results, Result{Case: c.Name, Codec: cd, Bytes: b, Median: time.Duration(b) * time.Microsecond})
		}
		if !c.Key {
			rep.Detector = append(rep.Detector, DetectorResult{Case: c.Name, Detect: 300 * time.Microsecond, BytesEqual: 200 * time.Microsecond, Dirty: 7})
		}
	}
	rep.Rows = Reproduce(rep.Results, rep.Detector)
	return rep
}

func TestReproduceComputesTheWriteUpsRatios(t *testing.T) {
	rows := map[string]Row{}
	for _, r := range synthetic().Rows {
		rows[r.ID] = r
	}
	require.Len(t, rows, 7, "E5-E8 and E10-E12")
	// Hextile writes 3000 and tile 1000 bytes everywhere: 3x, and 3000
	// bytes over the 3600 16x16 tiles of 720p.
	require.Contains(t, rows["E5"].Lab, "Hextile/tile 3.0x (720p), 3.0x (1080p), 3.0x (4K)")
	require.Contains(t, rows["E5"].Lab, "per 16x16 tile 0.83 /")
	require.Contains(t, rows["E7"].Lab, "tile/Hextile bytes 0.33-0.33")
	require.Contains(t, rows["E10"].Lab, "the detector alone 300 us, bytes.Equal over the same frames 200 us (detector 1.50x)")
	require.Contains(t, rows["E11"].Lab, "points: 1% 3.0x faster")
	// The per-tile-frame variant is in every row that compares the tile
	// codec with Hextile: 5000 bytes against Hextile's 3000, and 5000 over
	// the 40x23 tiles of 720p is 5.4 bytes a tile.
	require.Contains(t, rows["E5"].Lab, "Hextile/tile-pertile 0.60x (720p), 0.60x (1080p), 0.60x (4K); tile-pertile bytes per 32x32 tile 5.4 /")
	require.Contains(t, rows["E6"].Lab, "Hextile/tile-pertile 0.60x (720p)")
	require.Contains(t, rows["E7"].Lab, "noise-block: tile-pertile/Hextile bytes 1.67-1.67")
	require.Contains(t, rows["E8"].Lab, "tile/Hextile on blocks 0.33x (tile-pertile 1.7x)")
	require.Contains(t, rows["E10"].Lab, "tile-pertile 5000 us")
	require.Contains(t, rows["E11"].Lab, "tile-pertile vs Hextile, points: 1% 1.7x slower")
}

// A run of an older report, without the per-tile-frame variant, keeps its
// rows as they were: the variant's parts are added only when it ran.
func TestReproduceWithoutTheVariant(t *testing.T) {
	rep := synthetic()
	var keep []Result
	for _, r := range rep.Results {
		if r.Codec != TilePerTile {
			keep = append(keep, r)
		}
	}
	rows := Reproduce(keep, rep.Detector)
	require.Len(t, rows, 7)
	for _, r := range rows {
		require.NotContains(t, r.Lab, TilePerTile, r.ID)
	}
}

func TestSelectCodecs(t *testing.T) {
	var names []string
	for _, cd := range SelectCodecs(regexp.MustCompile("^tile")) {
		names = append(names, cd.Name)
	}
	require.Equal(t, []string{"tile", "tile-carry", TilePerTile}, names)
	require.Len(t, SelectCodecs(regexp.MustCompile("")), len(Codecs()))
}

func TestReportRoundTripsAndDrawsPlots(t *testing.T) {
	dir := t.TempDir()
	rep := synthetic()
	require.NoError(t, WriteReport(dir, rep))
	back, err := ReadReport(filepath.Join(dir, ReportJSON))
	require.NoError(t, err)
	require.Equal(t, rep.Rows, back.Rows)
	require.Equal(t, rep.Results, back.Results)
	for _, name := range []string{KeyframesPlot, PframeBytesPlot, PframeTimePlot} {
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		// Not blank: the lines put many colours on the white page.
		colours := map[color.Color]bool{}
		b := img.Bounds()
		for y := b.Min.Y; y < b.Max.Y; y += 3 {
			for x := b.Min.X; x < b.Max.X; x += 3 {
				colours[img.At(x, y)] = true
			}
		}
		require.Greater(t, len(colours), 20, "%s looks blank", name)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportMarkdown))
	require.NoError(t, err)
	require.Contains(t, string(md), "| E5 |")
}

func TestReadReportRefusesAnotherSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"schema":"latencylab.codecs/v0"}`), 0o644))
	_, err := ReadReport(path)
	require.ErrorIs(t, err, ErrSchema)
	require.ErrorContains(t, err, `"latencylab.codecs/v0"`)
}

// The detector and bytes.Equal see the same frames: on the static case the
// detector finds nothing, on a changed one something.
func TestRunDetector(t *testing.T) {
	for _, c := range Cases() {
		switch c.Name {
		case "p-static-0pct":
			require.Zero(t, RunDetector(c, 0, 1).Dirty)
		case "p-blocks-1pct":
			require.NotZero(t, RunDetector(c, 0, 1).Dirty)
		}
	}
}

// A run of some cases only (-run) leaves panels empty: the report still
// draws, saying so, rather than panicking on log axes with no data.
func TestReportOfSomeCasesDraws(t *testing.T) {
	rep := synthetic()
	var keep []Result
	for _, r := range rep.Results {
		if r.Case == "p-static-0pct" {
			keep = append(keep, r)
		}
	}
	rep.Results = keep
	require.NoError(t, WriteReport(t.TempDir(), rep))
}

// RunCase takes the codecs in turn and gives each the bytes and a time it
// would get alone: one result per codec, in their order.
func TestRunCaseInterleaves(t *testing.T) {
	c := Cases()[0] // key-solid-720p
	cds := Codecs()
	rs, err := RunCase(c, cds, 1, 3)
	require.NoError(t, err)
	require.Len(t, rs, len(cds))
	for i, cd := range cds {
		alone, err := Run(c, cd, 0, 1)
		require.NoError(t, err)
		require.Equal(t, cd.Name, rs[i].Codec)
		require.Equal(t, c.Name, rs[i].Case)
		require.Equal(t, alone.Bytes, rs[i].Bytes, cd.Name)
		require.Positive(t, rs[i].Median, cd.Name)
	}
}
