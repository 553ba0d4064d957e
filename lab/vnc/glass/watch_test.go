package glass_test

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/lab/vnc"
	"github.com/nuvirahub/latencylab/lab/vnc/glass"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// display starts a bare Xvfb of w x h for the test, or skips without one
// (LAB_REQUIRE_VNC=1, as in CI, makes that a failure).
func display(t *testing.T, w, h int) string {
	t.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		if os.Getenv("LAB_REQUIRE_VNC") == "1" {
			t.Fatalf("LAB_REQUIRE_VNC=1 but Xvfb is not installed: %v", err)
		}
		t.Skipf("skipping: Xvfb is not installed (%s; LAB_REQUIRE_VNC=1 makes this a failure)", vnc.InstallHint)
	}
	d, err := vnc.StartDisplay(t.Context(), w, h, nil)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d.Display
}

// presented is one marker drawn by the test's presenter: it began its
// requests at Began, and the X server had carried them out by Done.
type presented struct {
	version     uint32
	began, done time.Time
}

// present draws markers 2..n+1 at the top left of a w x h display, one
// every interval at the soonest and each once the watch has seen the one
// before (seen receives each sighting's version: explicit synchronisation,
// so that a loaded machine that reads late never sees two drawings as
// one), and returns when each was drawn.
func present(t *testing.T, name string, n int, interval time.Duration, seen <-chan uint32) []presented {
	t.Helper()
	x, err := xscreen.Open(name)
	require.NoError(t, err)
	defer x.Close()
	w, h := x.Size()
	f := codec.NewFrame(w, h)
	marker := []codec.Rect{{W: screendrive.MarkerWidth, H: screendrive.MarkerHeight}}
	var out []presented
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for v := range uint32(n) {
		<-tick.C
		screendrive.Stamp(f, v+2)
		began := time.Now()
		require.NoError(t, x.Put(f, marker))
		require.NoError(t, x.Sync())
		out = append(out, presented{version: v + 2, began: began, done: time.Now()})
		select {
		case got := <-seen:
			require.Equal(t, v+2, got, "the watch saw another version than the one drawn")
		case <-t.Context().Done():
			t.Fatalf("the watch never saw version %d", v+2)
		}
	}
	return out
}

// TestWatchSeesEveryVersionWithinItsBounds checks the watch's attribution on a
// real X display: markers drawn by another client, one every 10 ms or once
// the one before was seen, are each seen once, in order, read right, and each sighting brackets the
// drawing: the read that saw a version was answered after its drawing
// began, and the read before it, which did not see it, was asked before
// the drawing was done. So the presentation lies between PrevAsked and At,
// and Error bounds the measurement's own lateness, whatever the machine's
// load.
func TestWatchSeesEveryVersionWithinItsBounds(t *testing.T) {
	name := display(t, 640, 360)
	x, err := xscreen.Open(name)
	require.NoError(t, err)
	f := codec.NewFrame(640, 360)
	screendrive.Stamp(f, 1)
	require.NoError(t, x.Put(f, []codec.Rect{{W: 640, H: 360}}))
	require.NoError(t, x.Sync())
	x.Close()

	d, err := glass.Open(name)
	require.NoError(t, err)
	defer d.Close()
	require.True(t, d.SHM(), "Xvfb offers MIT-SHM to a client on its host")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	p, v, err := d.Locate(ctx, []float64{screendrive.MarkerBlock}, 10*time.Millisecond, func(v uint32) bool { return v == 1 })
	require.NoError(t, err)
	require.Equal(t, uint32(1), v)
	require.Equal(t, glass.Placement{X: 0, Y: 0, Block: screendrive.MarkerBlock}, p)

	const nDrawn = 100
	last := uint32(nDrawn + 1)
	var (
		seen  []glass.Sighting
		stats glass.WatchStats
		werr  error
		wg    sync.WaitGroup
		all   = make(chan struct{})
	)
	wctx, wstop := context.WithCancel(ctx)
	versions := make(chan uint32, nDrawn)
	wg.Go(func() {
		stats, werr = d.Watch(wctx, p, time.Millisecond, func(s glass.Sighting) {
			seen = append(seen, s)
			versions <- s.Version
			if s.Version == last {
				close(all)
			}
		})
	})
	drawn := present(t, name, nDrawn, 10*time.Millisecond, versions)
	select {
	case <-all:
	case <-ctx.Done():
	}
	wstop()
	wg.Wait()
	require.NoError(t, werr)
	require.Len(t, seen, nDrawn, "every version seen once")
	var maxErr time.Duration
	for i, s := range seen {
		dr := drawn[i]
		require.Equal(t, dr.version, s.Version, "in order, read right")
		require.True(t, s.At.After(dr.began), "version %d seen at %v, before it was drawn from %v", s.Version, s.At, dr.began)
		require.True(t, s.PrevAsked.Before(dr.done), "version %d: the read before its sighting was asked at %v, after it was drawn by %v", s.Version, s.PrevAsked, dr.done)
		require.Positive(t, s.Error())
		maxErr = max(maxErr, s.Error())
	}
	require.Zero(t, stats.Unreadable, "the presenter draws the marker in one request")
	t.Logf("%d reads, longest gap %v, largest error bound %v", stats.Reads, stats.MaxGap, maxErr)
}

// BenchmarkGrab720p reads a whole 720p display through MIT-SHM, as Locate
// does, and the marker's rectangle alone, as Watch does: the whole display
// at least 120 times a second is the glass-to-glass run's need.
//
//	go test ./lab/vnc/glass -run '^$' -bench Grab720p
func BenchmarkGrab720p(b *testing.B) {
	if _, err := exec.LookPath("Xvfb"); err != nil {
		b.Skipf("skipping: Xvfb is not installed (%s)", vnc.InstallHint)
	}
	d, err := vnc.StartDisplay(b.Context(), 1280, 720, nil)
	require.NoError(b, err)
	defer d.Close()
	g, err := glass.Open(d.Display)
	require.NoError(b, err)
	defer g.Close()
	require.True(b, g.SHM(), "MIT-SHM on a local Xvfb")
	for _, r := range []struct {
		name string
		rect codec.Rect
	}{{"display", g.Whole()}, {"marker", glass.Placement{Block: screendrive.MarkerBlock}.Rect()}} {
		b.Run(r.name, func(b *testing.B) {
			f := &codec.Frame{}
			for b.Loop() {
				require.NoError(b, g.Grab(r.rect, f))
			}
			require.Equal(b, r.rect.W*r.rect.H, len(f.Pix), "the grab read the rectangle it names")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grabs/s")
		})
	}
}
