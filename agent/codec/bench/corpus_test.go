package bench

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
)

// writeChanges records a 160x96 screen of noise, then changes blocks
// of it at 20 instants (a block of new noise each), then redraws one
// unchanged: the frames written, in order.
func writeChanges(t *testing.T) (*recording.Recording, []*codec.Frame) {
	t.Helper()
	var written []*codec.Frame
	meta := recording.Meta{Width: 160, Height: 96, Refresh: 60, Kind: "blocks"}
	rec := recordingtest.Write(t, filepath.Join(t.TempDir(), "changes.labrec"), meta, func(add recordingtest.Add) {
		rng := rand.New(rand.NewPCG(3, 4))
		f := codec.NewFrame(160, 96)
		for i := range f.Pix {
			f.Pix[i] = rng.Uint32() & 0xffffff
		}
		written = append(written, f)
		add(0, f, nil)
		for k := 1; k <= 20; k++ {
			f = f.Clone()
			r := codec.Rect{X: 7 * k % 128, Y: 3 * k % 64, W: 32, H: 32}
			for y := r.Y; y < r.Y+r.H; y++ {
				for x := r.X; x < r.X+r.W; x++ {
					f.Pix[y*160+x] = rng.Uint32() & 0xffffff
				}
			}
			add(time.Duration(k)*100*time.Millisecond, f, []codec.Rect{r})
			written = append(written, f)
		}
		add(2500*time.Millisecond, f.Clone(), []codec.Rect{{W: 8, H: 8}})
		written = append(written, f)
	})
	return rec, written
}

// A recording's cases: its first and middle frames as keyframes, then
// eight of its twenty changes spread over them, each with the frame
// recorded before it; the redraw that changed nothing is never a case.
func TestRecordedPairs(t *testing.T) {
	rec, written := writeChanges(t)
	pairs, err := RecordedPairs(rec)
	require.NoError(t, err)
	var names []string
	for _, p := range pairs {
		names = append(names, p.Name)
		require.Equal(t, "blocks", p.Kind)
	}
	// Changes 1-20: the k-th of eight picks is change (2k+1)*20/16.
	require.Equal(t, []string{"blocks/key-first", "blocks/p-2", "blocks/p-4", "blocks/p-7", "blocks/p-9",
		"blocks/key-middle", "blocks/p-12", "blocks/p-14", "blocks/p-17", "blocks/p-19"}, names)
	require.Nil(t, pairs[0].Prev)
	require.Equal(t, written[0].Pix, pairs[0].Cur.Pix)
	require.Equal(t, written[11].Pix, pairs[5].Cur.Pix, "the middle frame (index 11 of 22)")
	for _, p := range pairs {
		if p.Key {
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(p.Name, "blocks/p-"))
		require.NoError(t, err)
		require.Equal(t, written[i-1].Pix, p.Prev.Pix, "%s: the frame before", p.Name)
		require.Equal(t, written[i].Pix, p.Cur.Pix, p.Name)
	}
}

// The codecs on a recording: every case measured by every codec (each
// output decoded back to the recorded frame by runFrames), the table's
// row with the figures' ratios.
func TestRunRecorded(t *testing.T) {
	rec, _ := writeChanges(t)
	cds := Codecs()
	rs, err := RunRecorded([]*recording.Recording{rec}, cds, 0, 2, nil)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Len(t, rs[0].Results, len(rs[0].Pairs))
	for i, res := range rs[0].Results {
		require.Len(t, res, len(cds), "case %d", i)
		for _, r := range res {
			require.Positive(t, r.Bytes, "%s %s", r.Case, r.Codec)
			require.Positive(t, r.Median, "%s %s", r.Case, r.Codec)
		}
	}
	// A keyframe of noise: Hextile falls back to Raw, 4 bytes a pixel
	// and a byte a 16x16 tile.
	hex, ok := rs[0].result(0, "hextile")
	require.True(t, ok)
	t.Logf("hextile on the noise keyframe: %d bytes", hex.Bytes)
	require.GreaterOrEqual(t, hex.Bytes, 10*6*(1+16*16*4))
	require.LessOrEqual(t, hex.Bytes, 10*6*(1+16*16*4)+16, "Raw tiles and a header")
	table := RecordedTable(rs, cds)
	require.Contains(t, table, "| blocks | ")
	require.Equal(t, 3, strings.Count(table, "\n"), table)
	b, d := rs[0].medians("zstd-of-nothing", false)
	require.Zero(t, b, "a codec not run has no median")
	require.Zero(t, d)
	// Eight changes: the nearest-rank median is the fourth smallest.
	var tiles []int
	for i, p := range rs[0].Pairs {
		if x, _ := rs[0].result(i, "tile"); !p.Key {
			tiles = append(tiles, x.Bytes)
		}
	}
	slices.Sort(tiles)
	require.Len(t, tiles, 8)
	got, _ := rs[0].medians("tile", false)
	require.Equal(t, tiles[3], got)
	require.True(t, slices.ContainsFunc(rs[0].Pairs, func(p RecordedPair) bool { return !p.Key }))
}
