package screen

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/agent/screen/recording/recordingtest"
)

// smallRecording writes a 160x90 recording at 60 Hz: a flat screen with a
// striped bar at 0 s; at 100 ms a checkerboard in a box (damage
// {16,9,32,18}); at 200 ms the same box damaged again, unchanged; at
// 500 ms two boxes of stripes. It lasts 500 ms and a refresh.
func smallRecording(t *testing.T) *recording.Recording {
	t.Helper()
	const w, h = 160, 90
	meta := recording.Meta{Width: w, Height: h, Refresh: 60, Kind: "test"}
	rec := recordingtest.Write(t, filepath.Join(t.TempDir(), "small.labrec"), meta, func(add recordingtest.Add) {
		f := codec.NewFrame(w, h)
		for i := range f.Pix {
			f.Pix[i] = 0x404040
		}
		for y := 80; y < 90; y++ {
			for x := 0; x < w; x += 2 {
				f.Pix[y*w+x] = 0xffffff
			}
		}
		add(0, f, nil)
		box := codec.Rect{X: 16, Y: 9, W: 32, H: 18}
		g := f.Clone()
		for y := box.Y; y < box.Y+box.H; y++ {
			for x := box.X; x < box.X+box.W; x++ {
				if (x+y)%2 == 0 {
					g.Pix[y*w+x] = 0xffffff
				} else {
					g.Pix[y*w+x] = 0
				}
			}
		}
		add(100*time.Millisecond, g, []codec.Rect{box})
		add(200*time.Millisecond, g.Clone(), []codec.Rect{box})
		k := g.Clone()
		two := []codec.Rect{{X: 80, Y: 45, W: 40, H: 20}, {X: 0, Y: 0, W: 10, H: 10}}
		for _, r := range two {
			for y := r.Y; y < r.Y+r.H; y++ {
				for x := r.X; x < r.X+r.W; x += 4 {
					k.Pix[y*w+x] = 0xc0c0c0
				}
			}
		}
		add(500*time.Millisecond, k, two)
	})
	require.Len(t, rec.Frames, 4)
	require.Zero(t, rec.Frames[2].Changed, "the box drawn again unchanged")
	return rec
}

// changes draws a source's changes up to until (from the phase's start).
func changes(t *testing.T, src Source, until time.Duration) []Change {
	t.Helper()
	next, err := src.Start(Env{Refresh: 60})
	require.NoError(t, err)
	var out []Change
	for {
		c, ok := next()
		if !ok || c.At > until {
			return out
		}
		out = append(out, c)
	}
}

func TestRecordingChanges(t *testing.T) {
	rec := smallRecording(t)
	span := 500*time.Millisecond + time.Second/60
	require.Equal(t, span, rec.Duration())
	whole := []Rect{{0, 0, 1, 1}}
	box := []Rect{{X: 16.0 / 160, Y: 9.0 / 90, W: 32.0 / 160, H: 18.0 / 90}}
	two := []Rect{{X: 0.5, Y: 0.5, W: 0.25, H: 20.0 / 90}, {X: 0, Y: 0, W: 10.0 / 160, H: 10.0 / 90}}
	c0, c1, c3 := DetailComplexity(rec.Frames[0].Detail), DetailComplexity(rec.Frames[1].Detail), DetailComplexity(rec.Frames[3].Detail)
	require.Equal(t, 1.0, c1, "a checkerboard is beyond the painter's noisiest picture")
	require.Greater(t, c0, 0.0)
	require.Less(t, c0, c1)
	// Every pixel of the box changes; a quarter of the two boxes' do
	// (every fourth column): 10x20 and 3x10 of 40x20 and 10x10 pixels.
	f1, f3 := RecordedFill(&rec.Frames[1], rec.Meta), RecordedFill(&rec.Frames[3], rec.Meta)
	require.Equal(t, 1.0, f1)
	require.InDelta(t, 230.0/900, f3, 1e-12)

	t.Run("loop", func(t *testing.T) {
		// The frame redrawn unchanged at 200 ms is no change; at the end
		// the recording plays again from its first frame, the whole
		// screen.
		require.Equal(t, []Change{
			{At: 0, Regions: whole, Complexity: c0},
			{At: 100 * time.Millisecond, Regions: box, Complexity: c1, Fill: f1},
			{At: 500 * time.Millisecond, Regions: two, Complexity: c3, Fill: f3},
			{At: span, Regions: whole, Complexity: c0},
			{At: span + 100*time.Millisecond, Regions: box, Complexity: c1, Fill: f1},
			{At: span + 500*time.Millisecond, Regions: two, Complexity: c3, Fill: f3},
			{At: 2 * span, Regions: whole, Complexity: c0},
		}, changes(t, Recording{Recording: rec}, 2*span))
	})
	t.Run("once", func(t *testing.T) {
		require.Equal(t, []Change{
			{At: 0, Regions: whole, Complexity: c0},
			{At: 100 * time.Millisecond, Regions: box, Complexity: c1, Fill: f1},
			{At: 500 * time.Millisecond, Regions: two, Complexity: c3, Fill: f3},
		}, changes(t, Recording{Recording: rec, Once: true}, time.Hour))
	})
	t.Run("offset", func(t *testing.T) {
		// From 150 ms: the screen with the checkerboard, whose detail
		// weighs its box's share of the screen, then the two boxes, then
		// the recording from its start.
		got := changes(t, Recording{Recording: rec, Offset: 150 * time.Millisecond}, span)
		require.Len(t, got, 4)
		require.Equal(t, Change{At: 350 * time.Millisecond, Regions: two, Complexity: c3, Fill: f3}, got[1])
		require.Equal(t, Change{At: span - 150*time.Millisecond, Regions: whole, Complexity: c0}, got[2])
		require.Equal(t, Change{At: span - 50*time.Millisecond, Regions: box, Complexity: c1, Fill: f1}, got[3])
		require.Equal(t, whole, got[0].Regions)
		require.Zero(t, got[0].At)
		// The box covers 32x18 of 160x90 pixels: 11x7 of the 48x27 cells
		// (its edges fall inside cells, which count whole).
		d := rec.Frames[0].Detail + (rec.Frames[1].Detail-rec.Frames[0].Detail)*float64(11*7)/float64(48*27)
		require.InDelta(t, DetailComplexity(d), got[0].Complexity, 1e-9)
		require.Greater(t, got[0].Complexity, c0)
		require.Less(t, got[0].Complexity, c1)
	})
	t.Run("frames", func(t *testing.T) {
		r := Recording{Recording: rec}
		for _, c := range []struct {
			t    time.Duration
			want int
		}{{0, 0}, {99 * time.Millisecond, 0}, {100 * time.Millisecond, 1}, {250 * time.Millisecond, 2},
			{500 * time.Millisecond, 3}, {span - 1, 3}, {span, 0}, {span + 120*time.Millisecond, 1}} {
			i, ok := r.Frame(c.t)
			require.True(t, ok)
			require.Equal(t, c.want, i, "at %v", c.t)
		}
		_, ok := r.Frame(-1)
		require.False(t, ok)
		i, _ := Recording{Recording: rec, Once: true}.Frame(10 * span)
		require.Equal(t, 3, i, "played once, the last frame stays")
		i, _ = Recording{Recording: rec, Offset: 150 * time.Millisecond}.Frame(350 * time.Millisecond)
		require.Equal(t, 3, i)
	})
	t.Run("bad", func(t *testing.T) {
		for _, r := range []Recording{{}, {Recording: rec, Offset: span}, {Recording: rec, Offset: -1}} {
			_, err := r.Start(Env{Refresh: 60})
			require.Error(t, err, "%+v", r)
		}
	})
}

// A recorded change that a shift of the frame before explains (a window
// dragged) is motion; new content (the window's first showing) is not,
// and the screen's deltas carry the motion's kind.
func TestRecordingMotion(t *testing.T) {
	rec := recordingtest.Drag(t, filepath.Join(t.TempDir(), "drag.labrec"), time.Second/60, 3)
	require.Zero(t, rec.Frames[1].Moved, "the window's first showing is new")
	require.Greater(t, rec.Frames[2].Moved, MotionShare)
	var kinds []string
	for _, c := range changes(t, Recording{Recording: rec, Once: true}, time.Second) {
		kinds = append(kinds, c.Kind)
	}
	require.Equal(t, []string{"", "", SourceRecordingMotion, SourceRecordingMotion, SourceRecordingMotion}, kinds)

	m, err := New(1, Config{Timeline: []Phase{{Source: Recording{Recording: rec, Once: true}}}})
	require.NoError(t, err)
	require.Len(t, m.Changes(time.Second), 5)
	_, regions, ok := m.Version(3)
	require.True(t, ok)
	require.Equal(t, SourceRecordingMotion, regions[0].Source)
	img, _, _ := m.Version(3)
	_, d := m.Since(2, img.At)
	require.Equal(t, SourceRecordingMotion, d.Kinds[0].Kind)
	require.Positive(t, d.Kinds[0].Changed)
	_, regions, _ = m.Version(2)
	require.Equal(t, SourceRecording, regions[0].Source)
}

// A moving change over most of the screen is a page scrolled; over a part
// of it, a window dragged; a change that no shift explains is neither.
func TestRecordedKind(t *testing.T) {
	meta := recording.Meta{Width: 100, Height: 100}
	for _, c := range []struct {
		moved  float64
		damage []codec.Rect
		want   string
	}{
		{0.9, []codec.Rect{{W: 100, H: 100}}, SourceRecordingScroll},
		{0.9, []codec.Rect{{W: 100, H: 50}, {Y: 50, W: 100, H: 40}}, SourceRecordingScroll},
		{0.9, []codec.Rect{{W: 100, H: 89}}, SourceRecordingMotion},
		{0.5, []codec.Rect{{W: 10, H: 10}}, SourceRecordingMotion},
		{0.49, []codec.Rect{{W: 100, H: 100}}, SourceRecording},
		{0, []codec.Rect{{W: 10, H: 10}}, SourceRecording},
	} {
		f := recording.Frame{Moved: c.moved, Damage: c.damage, Changed: 0.1}
		require.Equal(t, c.want, RecordedKind(&f, meta), "%+v", c)
	}
}

// TestRecordingOnTheScreen: a timeline replays the recording at its
// instants, presented at the refresh after each, and tells a painter the
// recorded frame of every version, the phase's last when the next phase
// takes over.
func TestRecordingOnTheScreen(t *testing.T) {
	rec := smallRecording(t)
	m, err := New(1, Config{Timeline: []Phase{
		{At: time.Second, Source: Recording{Recording: rec, Once: true}},
		{At: 1400 * time.Millisecond, Source: Still{}},
		{At: 2 * time.Second, Source: Recording{Recording: rec, Offset: 100 * time.Millisecond}},
	}})
	require.NoError(t, err)
	got := m.Changes(2600 * time.Millisecond)
	tick := func(d time.Duration) time.Duration { return NextTick(d, 60) }
	require.Equal(t, []time.Duration{0, time.Second, tick(1100 * time.Millisecond),
		// The second phase from 100 ms in: the checkerboard, the two boxes
		// 400 ms later, the start again 100 ms before the recording's end,
		// the checkerboard 100 ms after.
		2 * time.Second, tick(2400 * time.Millisecond), tick(2*time.Second + rec.Duration() - 100*time.Millisecond),
		tick(2*time.Second + rec.Duration())}, got)
	for _, c := range []struct {
		phase int
		at    time.Duration
		frame int
		ok    bool
	}{
		{0, time.Second, 0, true}, {0, tick(1100 * time.Millisecond), 1, true},
		{0, 1900 * time.Millisecond, 2, true}, // clamped to the phase's end: the frame it ended on
		{1, 1500 * time.Millisecond, 0, false}, {0, 900 * time.Millisecond, 0, false}, {5, time.Second, 0, false},
		{2, 2 * time.Second, 1, true}, {2, tick(2400 * time.Millisecond), 3, true},
	} {
		r, i, ok := m.RecordedFrame(c.phase, c.at)
		require.Equal(t, c.ok, ok, "phase %d at %v", c.phase, c.at)
		if ok {
			require.Same(t, rec, r)
			require.Equal(t, c.frame, i, "phase %d at %v", c.phase, c.at)
		}
	}
	_, regions, ok := m.Version(3)
	require.True(t, ok)
	require.Len(t, regions, 1)
	require.Equal(t, SourceRecording, regions[0].Source)
	require.Equal(t, 0, regions[0].Phase)
}
