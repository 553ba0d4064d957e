package paint

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

// oneKind is a screen of four versions, each the whole screen made by one
// kind of source at one complexity, half a second apart.
type oneKind struct {
	kind string
	c    float64
}

const oneKindVersions = 4

func (o oneKind) Version(v uint64) (screen.Image, []screen.Region, bool) {
	if v == 0 || v > oneKindVersions {
		return screen.Image{}, nil, false
	}
	return screen.Image{Version: v, At: time.Duration(v) * 500 * time.Millisecond},
		[]screen.Region{{X0: 0, Y0: 0, X1: screen.Cols, Y1: screen.Rows, Complexity: o.c, Source: o.kind, Phase: 0}}, true
}

// Which kinds paint a complexity as themselves: text below
// frames.PhotoDetail (a picture's detail is at least a photo's there),
// pictures from it (text's is at most just below it).
var (
	textKinds    = []string{screen.SourceDesktop, "typing", "scrolling"}
	pictureKinds = []string{"animation", "video", "photo"}
)

// paintedDetail is the mean detail (recording.DetailLuma) of the whole
// screen painted at 1280x720 by the kinds that paint complexity c, over
// seeds 1 to 3 and four versions.
func paintedDetail(t *testing.T, c float64) float64 {
	kinds := textKinds
	if c >= frames.PhotoDetail {
		kinds = pictureKinds
	}
	var mu sync.Mutex
	var sum float64
	var wg sync.WaitGroup
	for _, kind := range kinds {
		for seed := uint64(1); seed <= 3; seed++ {
			wg.Go(func() {
				p, err := New(seed, oneKind{kind, c}, Config{})
				require.NoError(t, err)
				var s float64
				for v := uint64(1); v <= oneKindVersions; v++ {
					pic, err := p.Paint(v)
					require.NoError(t, err)
					s += recording.DetailLuma(pic.Y, pic.W, pic.H, []codec.Rect{{W: pic.W, H: pic.H}})
				}
				mu.Lock()
				sum += s
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return sum / float64(len(kinds)*3*oneKindVersions)
}

// TestDetailTable measures the painter's detail at complexities 0, 0.1,
// ..., 1 again and checks the screen model's table from detail to
// complexity (screen.DetailComplexity) against it: a change to the
// painter that moves a point by more than 0.3 of detail (a hundredth of
// complexity on the text's slope) fails here, and the log prints the
// table to paste into agent/screen/recorded.go.
func TestDetailTable(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short: paints 99 screens at 720p (about 4 s)")
	}
	var measured [][2]float64
	var b strings.Builder
	b.WriteString("var detailTable = []detailPoint{\n")
	best := -1.0
	for i := 0; i <= 10; i++ {
		c := float64(i) / 10
		d := paintedDetail(t, c)
		t.Logf("complexity %.1f: detail %.2f", c, d)
		// Only the points that rise above every point before.
		if d > best {
			best = d
			measured = append(measured, [2]float64{d, c})
			fmt.Fprintf(&b, "\t{%.2f, %.1f},\n", d, c)
		}
	}
	b.WriteString("}")
	t.Logf("the table (agent/screen/recorded.go):\n%s", b.String())
	table := screen.DetailTable()
	require.Len(t, table, len(measured), "the points kept differ: the table is\n%s", b.String())
	for i, p := range table {
		require.Equal(t, measured[i][1], p[1], "point %d's complexity", i)
		require.InDelta(t, measured[i][0], p[0], 0.3, "point %d (complexity %.1f): the painter's detail moved", i, p[1])
	}
	// The table rises, so the mapping does; it is clamped at both ends.
	for i := 1; i < len(table); i++ {
		require.Greater(t, table[i][0], table[i-1][0])
		require.Greater(t, table[i][1], table[i-1][1])
	}
	require.Equal(t, 0.0, screen.DetailComplexity(0))
	require.Equal(t, 1.0, screen.DetailComplexity(219))
	for _, p := range table {
		require.InDelta(t, p[1], screen.DetailComplexity(p[0]), 1e-9)
	}
	require.False(t, math.IsNaN(screen.DetailComplexity(math.NaN())))
}
