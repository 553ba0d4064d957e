package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec/frames"
)

// Row is one finding of EvertyDesk's write-up set beside what this run
// measured.
type Row struct {
	ID         string `json:"id"`
	Documented string `json:"documented"`
	Lab        string `json:"lab"`
}

// lookup finds results by case and codec.
type lookup map[string]Result

func newLookup(results []Result) lookup {
	l := lookup{}
	for _, r := range results {
		l[r.Case+"/"+r.Codec] = r
	}
	return l
}

func (l lookup) get(caseName, codecName string) (Result, bool) {
	r, ok := l[caseName+"/"+codecName]
	return r, ok
}

// bytesRatio is a's bytes over b's for a case, and whether both exist.
func (l lookup) bytesRatio(caseName, a, b string) (float64, bool) {
	ra, oka := l.get(caseName, a)
	rb, okb := l.get(caseName, b)
	if !oka || !okb || rb.Bytes == 0 {
		return 0, false
	}
	return float64(ra.Bytes) / float64(rb.Bytes), true
}

// timeRatio is a's median time over b's for a case.
func (l lookup) timeRatio(caseName, a, b string) (float64, bool) {
	ra, oka := l.get(caseName, a)
	rb, okb := l.get(caseName, b)
	if !oka || !okb || rb.Median == 0 {
		return 0, false
	}
	return float64(ra.Median) / float64(rb.Median), true
}

var resolutions = []string{"720p", "1080p", "4K"}

// pframeCase names the P-frame case of a kind at a percentage.
func pframeCase(kind string, pct float64) string {
	if pct == 0 {
		return "p-static-0pct"
	}
	return fmt.Sprintf("p-%s-%gpct", kind, pct)
}

// changed are the percentages with something changed.
func changed() []float64 {
	var out []float64
	for _, p := range frames.Percentages {
		if p > 0 {
			out = append(out, p)
		}
	}
	return out
}

// ratioList formats a ratio per label, "31x (720p), 33x (1080p)".
func ratioList(labels []string, ratios []float64, unit string) string {
	parts := make([]string, 0, len(labels))
	for i, l := range labels {
		parts = append(parts, fmt.Sprintf("%s (%s)", fmtRatio(ratios[i], unit), l))
	}
	return strings.Join(parts, ", ")
}

func fmtRatio(r float64, unit string) string {
	switch {
	case r >= 10:
		return fmt.Sprintf("%.0f%s", r, unit)
	case r >= 1:
		return fmt.Sprintf("%.1f%s", r, unit)
	default:
		return fmt.Sprintf("%.2f%s", r, unit)
	}
}

// Reproduce computes the rows E5-E12 from a run's results: who wins where
// and by how much, in the terms the write-up used. Rows whose cases are
// missing from results are left out.
func Reproduce(results []Result, detector []DetectorResult) []Row {
	l := newLookup(results)
	var rows []Row

	// E5: solid keyframes, Hextile over tile, and Hextile's bytes per
	// 16x16 tile, which a per-tile structural cost keeps constant.
	if row, ok := keyframeRow(l, "E5", "1.8x at all three resolutions (a per-tile structural cost)", frames.Solid); ok {
		rows = append(rows, row)
	}
	if row, ok := keyframeRow(l, "E6", "tile codec smaller by 10x (720p), 14x (1080p), 22x (4K); Hextile falls back to Raw", frames.Gradient); ok {
		rows = append(rows, row)
	}

	// E7: noise P-frames, each tile variant's bytes over Hextile's.
	var noise []string
	for _, tv := range tileVariants {
		for _, kind := range []string{frames.NoisePts, frames.NoiseBlock} {
			if row, ok := noiseRange(l, tv, kind); ok {
				noise = append(noise, row)
			}
		}
	}
	if len(noise) > 0 {
		rows = append(rows, Row{"E7", "noise P-frames: tile codec smaller by ~16%", strings.Join(noise, "; ") + " over 1-90% changed (below 1: the tile codec is smaller)"})
	}

	// E8: single-colour edits; Hextile blocks vs points, and who wins on
	// blocks.
	var e8 []string
	for _, p := range []float64{1, 10, 50, 90} {
		pts, ok1 := l.get(pframeCase(frames.Points, p), "hextile")
		blk, ok2 := l.get(pframeCase(frames.Blocks, p), "hextile")
		tb, ok3 := l.bytesRatio(pframeCase(frames.Blocks, p), "tile", "hextile")
		if ok1 && ok2 && ok3 {
			part := fmt.Sprintf("%g%%: Hextile points %s vs blocks %s (%s), tile/Hextile on blocks %s", p, kb(pts.Bytes), kb(blk.Bytes), fmtRatio(float64(pts.Bytes)/float64(blk.Bytes), "x"), fmtRatio(tb, "x"))
			if r, ok := l.bytesRatio(pframeCase(frames.Blocks, p), TilePerTile, "hextile"); ok {
				part += fmt.Sprintf(" (%s %s)", TilePerTile, fmtRatio(r, "x"))
			}
			e8 = append(e8, part)
		}
	}
	if len(e8) > 0 {
		rows = append(rows, Row{"E8", "solid blocks vs scattered points change Hextile's size enormously; EVRTCK loses on size on solid edit blocks", strings.Join(e8, "; ")})
	}

	// E10: the static frame costs every codec the detector's scan.
	if row, ok := staticRow(l, detector); ok {
		rows = append(rows, row)
	}

	// E11: encode time, Hextile over each tile variant: above 1 the tile
	// codec is faster. Ratios of one run only: the machine's load moves
	// between runs, not within a case's interleaved codecs.
	var e11 []string
	for _, tv := range tileVariants {
		var kinds []string
		for _, kind := range []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock} {
			var parts []string
			for _, p := range []float64{1, 10, 90} {
				if r, ok := l.timeRatio(pframeCase(kind, p), "hextile", tv); ok {
					parts = append(parts, fmt.Sprintf("%g%% %s", p, speed(r)))
				}
			}
			if len(parts) > 0 {
				kinds = append(kinds, kind+": "+strings.Join(parts, ", "))
			}
		}
		if len(kinds) > 0 {
			name := "tile codec"
			if tv != "tile" {
				name = tv
			}
			e11 = append(e11, name+" vs Hextile, "+strings.Join(kinds, "; "))
		}
	}
	if len(e11) > 0 {
		rows = append(rows, Row{"E11", "tile codec 1.5-3x faster on structured content; up to 13x slower at 90% noise", strings.Join(e11, ". ")})
	}
	return append(rows, e12Rows(l)...)
}

// tileVariants are the framings of the tile codec the rows compare with
// Hextile: one zstd stream per frame, and one zstd frame per tile.
var tileVariants = []string{"tile", TilePerTile}

// noiseRange is E7 for one tile variant and noise kind: the range of its
// bytes over Hextile's across the percentages changed.
func noiseRange(l lookup, tv, kind string) (string, bool) {
	var lo, hi float64
	n := 0
	for _, p := range changed() {
		r, ok := l.bytesRatio(pframeCase(kind, p), tv, "hextile")
		if !ok {
			continue
		}
		if n == 0 || r < lo {
			lo = r
		}
		if n == 0 || r > hi {
			hi = r
		}
		n++
	}
	if n == 0 {
		return "", false
	}
	name := "tile"
	if tv != "tile" {
		name = tv
	}
	return fmt.Sprintf("%s: %s/Hextile bytes %.2f-%.2f", kind, name, lo, hi), true
}

// e12Rows is E12 when its cases ran: carry-forward on solid blocks, and
// ZRLE beside the others.
func e12Rows(l lookup) []Row {
	var rows []Row
	var e12 []string
	for _, p := range []float64{10, 50, 90} {
		c := pframeCase(frames.Blocks, p)
		t, ok1 := l.get(c, "tile")
		tc, ok2 := l.get(c, "tile-carry")
		h, ok3 := l.get(c, "hextile")
		z, ok4 := l.get(c, "zrle")
		if ok1 && ok2 && ok3 && ok4 {
			e12 = append(e12, fmt.Sprintf("blocks %g%%: tile %s, tile-carry %s, Hextile %s, ZRLE %s", p, kb(t.Bytes), kb(tc.Bytes), kb(h.Bytes), kb(z.Bytes)))
		}
	}
	if r, ok := l.bytesRatio("key-gradient-1080p", "zrle", "tile"); ok {
		e12 = append(e12, "gradient keyframe 1080p: ZRLE/tile "+fmtRatio(r, "x"))
	}
	if len(e12) > 0 {
		rows = append(rows, Row{"E12", "backlog: carry-forward of single-colour adjacent dirty tiles; the comparison against ZRLE", strings.Join(e12, "; ")})
	}
	return rows
}

// keyframeRow is E5 or E6: Hextile over tile at each resolution, then, when
// it ran, over the per-tile-frame variant, with what that variant spends
// per 32x32 tile (constant if its cost is per tile, as E5 says EVRTCK's is).
func keyframeRow(l lookup, id, documented, kind string) (Row, bool) {
	var ratios []float64
	var perTile []string
	for _, res := range resolutions {
		c := fmt.Sprintf("key-%s-%s", kind, res)
		r, ok := l.bytesRatio(c, "hextile", "tile")
		if !ok {
			return Row{}, false
		}
		ratios = append(ratios, r)
		h, _ := l.get(c, "hextile")
		w, hh := dims(res)
		tiles := ((w + 15) / 16) * ((hh + 15) / 16)
		perTile = append(perTile, fmt.Sprintf("%.2f", float64(h.Bytes)/float64(tiles)))
	}
	lab := "Hextile/tile " + ratioList(resolutions, ratios, "x") + "; Hextile bytes per 16x16 tile " + strings.Join(perTile, " / ")
	var ptRatios []float64
	var ptBytes []string
	for _, res := range resolutions {
		c := fmt.Sprintf("key-%s-%s", kind, res)
		r, ok := l.bytesRatio(c, "hextile", TilePerTile)
		if !ok {
			return Row{id, documented, lab}, true
		}
		ptRatios = append(ptRatios, r)
		pt, _ := l.get(c, TilePerTile)
		w, hh := dims(res)
		tiles := ((w + 31) / 32) * ((hh + 31) / 32)
		ptBytes = append(ptBytes, fmt.Sprintf("%.1f", float64(pt.Bytes)/float64(tiles)))
	}
	lab += "; Hextile/" + TilePerTile + " " + ratioList(resolutions, ptRatios, "x") + "; " + TilePerTile + " bytes per 32x32 tile " + strings.Join(ptBytes, " / ")
	return Row{id, documented, lab}, true
}

func dims(res string) (w, h int) {
	switch res {
	case "720p":
		return frames.Width720p, frames.Height720p
	case "1080p":
		return frames.Width1080p, frames.Height1080p
	default:
		return frames.Width4K, frames.Height4K
	}
}

// staticRow is E10: every codec's time on the static frame beside the
// detector's alone.
func staticRow(l lookup, detector []DetectorResult) (Row, bool) {
	var det *DetectorResult
	for i := range detector {
		if detector[i].Case == "p-static-0pct" {
			det = &detector[i]
		}
	}
	var parts []string
	for _, cd := range []string{"tile", "tile-carry", "hextile", "zrle", TilePerTile} {
		if r, ok := l.get("p-static-0pct", cd); ok {
			parts = append(parts, fmt.Sprintf("%s %s", cd, us(r.Median)))
		}
	}
	if len(parts) == 0 || det == nil {
		return Row{}, false
	}
	lab := fmt.Sprintf("static 1080p: %s; the detector alone %s, bytes.Equal over the same frames %s (detector %.2fx)", strings.Join(parts, ", "), us(det.Detect), us(det.BytesEqual), det.Ratio())
	return Row{"E10", "before the fix 0.1 us (Hextile handed the dirty list) vs 892 us; after it both pay the scan", lab}, true
}

// speed says how much faster (ratio > 1) or slower the tile codec is.
func speed(hextileOverTile float64) string {
	if hextileOverTile >= 1 {
		return fmtRatio(hextileOverTile, "x") + " faster"
	}
	return fmtRatio(1/hextileOverTile, "x") + " slower"
}

func kb(n int) string {
	if n < 10000 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.0f kB", float64(n)/1000)
}

func us(d time.Duration) string {
	return fmt.Sprintf("%.0f us", float64(d)/float64(time.Microsecond))
}
