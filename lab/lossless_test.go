package lab

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder/lossless"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/netem"
)

// movingWindow is a window of text, 40% x 40% of the screen, moved a step
// to the right every 250 ms for the session: each move repaints its old
// and its new place (about a fifth of the screen), the rest stays.
func movingWindow(d time.Duration) *screen.Config {
	const every = 250 * time.Millisecond
	var moves []screen.Change
	for i := range int(d / every) {
		x := 0.1 + 0.01*float64(i)
		moves = append(moves, screen.Change{
			At:         time.Duration(i) * every,
			Regions:    []screen.Rect{{X: x - 0.01, Y: 0.2, W: 0.4, H: 0.4}, {X: x, Y: 0.2, W: 0.4, H: 0.4}},
			Complexity: 0.5,
		})
	}
	return still(screen.Script{Changes: moves})
}

// Support mode: the real lossless codecs as the agent's encoder on the
// documented bad link (25 ms, 1% loss, 5 Mbit/s each way), a window moving
// on a text desktop. A lossless codec has no rate control, so the bytes it
// makes of each change are what the link has to carry, and the codec that
// writes more has the higher latency. On this content (two-colour text)
// that is the tile codec by far: its XOR+zstd spends about 3 bits a pixel
// of text, Hextile's subrectangles and ZRLE's packed palettes less than
// one. Measured with seed 1 (seeds 2 and 3 within 15%): tile about 156 kB
// a frame and a median of 720 ms, Hextile 26 kB and 94 ms, ZRLE 18 kB and
// 63 ms. Only the order is asserted.
func TestEncoderLosslessSupportMode(t *testing.T) {
	const d = 10 * time.Second
	type row struct {
		preset string
		bytes  int // mean bytes of a frame of new content, the first keyframe left out
		median time.Duration
	}
	var rows []row
	for _, p := range []string{lossless.PresetTile, lossless.PresetHextile, lossless.PresetZRLE} {
		s := Session{Seed: 1, Duration: d, Uplink: netem.DocumentedBadLink(), Downlink: netem.DocumentedBadLink(), Screen: movingWindow(d)}
		s.Agent.Software = preset(t, p)
		s.Agent.NoRefine = true // a lossless picture has nothing to refine: the passes would be empty frames
		res := run(t, s)
		require.Len(t, res.Probe, 1)
		require.Equal(t, p, res.Probe[0].Name)

		total, n := 0, 0
		for _, f := range res.Frames[1:] { // the first is the desktop's keyframe
			require.Zero(t, f.Pass)
			total += f.Bytes
			n++
		}
		require.Positive(t, n)
		lat := res.Latencies(2 * time.Second) // after the keyframe (up to 0.5 MB) has crossed
		require.NotEmpty(t, lat)
		r := row{preset: p, bytes: total / n, median: quantile.Median(lat)}
		rows = append(rows, r)
		t.Logf("%-16s keyframe %7d B, %2d frames of %7d B on average, median %v, worst %v, skipped %v",
			p, res.Frames[0].Bytes, n, r.bytes, r.median.Round(time.Millisecond), maxDur(lat).Round(time.Millisecond), res.Agent.Skipped)
	}
	slices.SortFunc(rows, func(a, b row) int { return a.bytes - b.bytes })
	for i := 1; i < len(rows); i++ {
		require.Greater(t, rows[i].median, rows[i-1].median,
			"%s writes more than %s (%d vs %d B a frame) and must wait longer for the link", rows[i].preset, rows[i-1].preset, rows[i].bytes, rows[i-1].bytes)
	}
}
