package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/quantile"
)

// The codec lab on real content: the same codecs, detector and timing as
// the synthetic matrix, over frames of recorded desktops
// (agent/screen/recording, the corpus in testdata/recordings). The write-up
// measured E5, E6 and E11 on synthetic screens, and the lab's figures
// differ from its by up to ten times; real screens say which figures are
// the test images' doing.

// RecordedPair is one case of a recording: a keyframe (Prev nil) or a
// recorded change, the frame before it and the frame after.
type RecordedPair struct {
	// Name is the case's name: the recording's kind, then "key-first",
	// "key-middle" or "p-N" (N the frame's index in the recording).
	Name string
	// Kind is the recording's content kind (its Meta.Kind).
	Kind      string
	Key       bool
	Prev, Cur *codec.Frame
}

// PairsPerRecording is how many recorded changes RecordedPairs takes from
// a recording, spread evenly over its changes.
const PairsPerRecording = 8

// RecordedPairs decodes rec and returns its cases: its first frame and its
// middle frame as keyframes (the whole screen, nothing to diff against),
// then up to PairsPerRecording of its changes (frames whose pixels changed,
// Changed above 0), spread evenly over them, each with the frame before.
func RecordedPairs(rec *recording.Recording) ([]RecordedPair, error) {
	var changed []int
	for i, f := range rec.Frames {
		if i > 0 && f.Changed > 0 {
			changed = append(changed, i)
		}
	}
	want := map[int]bool{}
	for k := range min(PairsPerRecording, len(changed)) {
		// The k-th of n evenly spread picks, the middle of its share.
		want[changed[(2*k+1)*len(changed)/(2*min(PairsPerRecording, len(changed)))]] = true
	}
	middle := len(rec.Frames) / 2
	play, err := rec.Play()
	if err != nil {
		return nil, err
	}
	defer play.Close()
	kind := rec.Meta.Kind
	var out []RecordedPair
	var prev *codec.Frame
	for {
		i, f, err := play.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rec.Path, err)
		}
		switch {
		case i == 0:
			out = append(out, RecordedPair{Name: kind + "/key-first", Kind: kind, Key: true, Cur: f})
		case i == middle:
			out = append(out, RecordedPair{Name: kind + "/key-middle", Kind: kind, Key: true, Cur: f})
		}
		if want[i] {
			out = append(out, RecordedPair{Name: fmt.Sprintf("%s/p-%d", kind, i), Kind: kind, Prev: prev, Cur: f})
		}
		prev = f // the player's frames are the caller's to keep
	}
	return out, nil
}

// RecordedResults are the codecs on one recording's cases, in the order of
// RecordedPairs.
type RecordedResults struct {
	// Recording is the file's name, Kind its content kind.
	Recording, Kind string
	Pairs           []RecordedPair
	// Results are, case by case, each codec's result in the codecs' order.
	Results [][]Result
}

// RunRecorded measures codecs on every case of every recording (warmup
// and iters as RunCase), a progress line per recording when progress is
// not nil. Every encoded frame is decoded and compared with the recorded
// one, as in the synthetic matrix.
func RunRecorded(recs []*recording.Recording, cds []Codec, warmup, iters int, progress io.Writer) ([]RecordedResults, error) {
	var out []RecordedResults
	for _, rec := range recs {
		began := time.Now()
		pairs, err := RecordedPairs(rec)
		if err != nil {
			return nil, err
		}
		rr := RecordedResults{Recording: filepath.Base(rec.Path), Kind: rec.Meta.Kind, Pairs: pairs}
		for _, p := range pairs {
			rs, err := runFrames(p.Name, p.Prev, p.Cur, cds, warmup, iters)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rec.Path, err)
			}
			rr.Results = append(rr.Results, rs)
		}
		out = append(out, rr)
		if progress != nil {
			fmt.Fprintf(progress, "%s: %d cases in %v\n", rr.Recording, len(pairs), time.Since(began).Round(time.Second))
		}
	}
	return out, nil
}

// result is codec's result on case i, and false when it was not run.
func (r RecordedResults) result(i int, codec string) (Result, bool) {
	for _, x := range r.Results[i] {
		if x.Codec == codec {
			return x, true
		}
	}
	return Result{}, false
}

// medians are a codec's median bytes and median encode time (the lab's
// nearest-rank median, internal/quantile) over the recording's keyframes
// (key) or its changes; zero when the codec was not run.
func (r RecordedResults) medians(codec string, key bool) (bytes int, t time.Duration) {
	var bs []int
	var ts []time.Duration
	for i, p := range r.Pairs {
		if x, ok := r.result(i, codec); ok && p.Key == key {
			bs, ts = append(bs, x.Bytes), append(ts, x.Median)
		}
	}
	return quantile.Median(bs), quantile.Median(ts)
}

// ratio writes a/b as "1.23x", or "-" when either was not measured.
func ratio[T int | time.Duration](a, b T) string {
	if a <= 0 || b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// count writes a byte count, or "-" for none measured.
func count(n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// RecordedTable is the codecs on real content as Markdown, a row per
// recording: its first keyframe's bytes per codec with the write-up's
// ratio, Hextile's bytes over the tile codec's (E5, E6), and one zstd
// frame per tile's; the median bytes of its changes per codec; and the
// median encode times of the tile codec against Hextile's, on the
// keyframes and on the changes (E11: above 1, the tile codec is slower).
// A codec not run shows as "-".
func RecordedTable(rs []RecordedResults, cds []Codec) string {
	var b strings.Builder
	names := make([]string, len(cds))
	for i, cd := range cds {
		names[i] = cd.Name
	}
	b.WriteString("| recording | first keyframe bytes: " + strings.Join(names, " / ") +
		" | Hextile / tile | Hextile / tile-pertile | changes, median bytes: " + strings.Join(names, " / ") +
		" | changes: Hextile / tile | time tile / Hextile: keyframes | changes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		first := map[string]int{}
		changes := map[string]int{}
		var firstCol, changeCol []string
		for _, n := range names {
			if x, ok := r.result(0, n); ok {
				first[n] = x.Bytes
			}
			changes[n], _ = r.medians(n, false)
			firstCol, changeCol = append(firstCol, count(first[n])), append(changeCol, count(changes[n]))
		}
		_, tileKey := r.medians("tile", true)
		_, hexKey := r.medians("hextile", true)
		_, tileP := r.medians("tile", false)
		_, hexP := r.medians("hextile", false)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Kind, strings.Join(firstCol, " / "),
			ratio(first["hextile"], first["tile"]), ratio(first["hextile"], first[TilePerTile]),
			strings.Join(changeCol, " / "), ratio(changes["hextile"], changes["tile"]),
			ratio(tileKey, hexKey), ratio(tileP, hexP))
	}
	return b.String()
}
