package paint

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// The tests paint a small screen unless the size is the point: every
// region copies pixels, and the test's time grows with them.
const testW, testH = 384, 216

func model(t *testing.T, seed uint64, phases ...screen.Phase) *screen.Model {
	t.Helper()
	m, err := screen.New(seed, screen.Config{Timeline: phases})
	require.NoError(t, err)
	return m
}

func painter(t *testing.T, seed uint64, m *screen.Model) *Painter {
	t.Helper()
	p, err := New(seed, m, Config{Width: testW, Height: testH})
	require.NoError(t, err)
	return p
}

// versions paints every version presented in [0, until] and returns the
// pictures (copies) with the images.
func versions(t *testing.T, p *Painter, m *screen.Model, until time.Duration) ([]*yuv.I420, []screen.Image) {
	t.Helper()
	last := m.Latest(until).Version
	var pics []*yuv.I420
	var imgs []screen.Image
	for v := uint64(1); v <= last; v++ {
		pic, err := p.Paint(v)
		require.NoError(t, err)
		img, _, _ := m.Version(v)
		pics = append(pics, pic.Clone())
		imgs = append(imgs, img)
	}
	return pics, imgs
}

// diff is the bounding box of the luma samples that differ, and how many.
type diff struct {
	n              int
	x0, y0, x1, y1 int
}

func lumaDiff(a, b *yuv.I420) diff {
	d := diff{x0: a.W, y0: a.H}
	for y := range a.H {
		for x := range a.W {
			if a.Y[y*a.W+x] != b.Y[y*a.W+x] {
				d.n++
				d.x0, d.y0 = min(d.x0, x), min(d.y0, y)
				d.x1, d.y1 = max(d.x1, x+1), max(d.y1, y+1)
			}
		}
	}
	return d
}

// inside tells whether the differing box lies inside a region's pixels.
func (d diff) inside(p *Painter, r screen.Region) bool {
	px := p.pixels(r)
	return d.n == 0 || (d.x0 >= px.x0 && d.y0 >= px.y0 && d.x1 <= px.x1 && d.y1 <= px.y1)
}

func everyKind() []screen.Phase {
	return []screen.Phase{
		{At: 0, Source: screen.Animation{}},
		{At: 200 * time.Millisecond, Source: screen.Typing{}},
		{At: 1200 * time.Millisecond, Source: screen.Scrolling{}},
		{At: 1400 * time.Millisecond, Source: screen.Video{}},
		{At: 1700 * time.Millisecond, Source: screen.Photo{}},
		{At: 1800 * time.Millisecond, Source: screen.Still{}},
	}
}

func TestDeterministicPerSeed(t *testing.T) {
	const until = 2 * time.Second
	m1, m2 := model(t, 7, everyKind()...), model(t, 7, everyKind()...)
	a, _ := versions(t, painter(t, 7, m1), m1, until)
	b, _ := versions(t, painter(t, 7, m2), m2, until)
	require.Len(t, b, len(a))
	for i := range a {
		require.True(t, yuv.Equal(a[i], b[i]), "version %d differs between two painters of the same seed", i+1)
	}
	m3 := model(t, 8, everyKind()...)
	c, _ := versions(t, painter(t, 8, m3), m3, until)
	require.False(t, yuv.Equal(a[0], c[0]), "another seed paints another desktop")
}

// A picture depends only on the version: painting every version, or
// jumping to one as a slow capturer does, or going back, gives the same.
func TestPictureIndependentOfHistory(t *testing.T) {
	m := model(t, 3, everyKind()...)
	all, _ := versions(t, painter(t, 3, m), m, 2*time.Second)
	p := painter(t, 3, m)
	for _, v := range []uint64{30, 17, len64(all), 2, 23} {
		pic, err := p.Paint(v)
		require.NoError(t, err)
		require.True(t, yuv.Equal(all[v-1], pic), "version %d painted out of order", v)
	}
}

func len64[T any](s []T) uint64 { return uint64(len(s)) }

func TestStillScreenPaintsIdenticalFrames(t *testing.T) {
	m := model(t, 1, screen.Phase{At: 100 * time.Millisecond, Source: screen.Photo{}}, screen.Phase{At: 200 * time.Millisecond, Source: screen.Still{}})
	p := painter(t, 1, m)
	// The capturer polls a still screen: the newest version stays the
	// same, and so does its picture, at every poll.
	var first *yuv.I420
	for at := 100 * time.Millisecond; at < 3*time.Second; at += 250 * time.Millisecond {
		v := m.Latest(at).Version
		require.Equal(t, uint64(2), v, "desktop, then the photo, then nothing")
		pic, err := p.Paint(v)
		require.NoError(t, err)
		if first == nil {
			first = pic.Clone()
		}
		require.True(t, yuv.Equal(first, pic))
	}
}

func TestTypingChangesASmallRegion(t *testing.T) {
	m := model(t, 2, screen.Phase{Source: screen.Typing{}})
	pics, _ := versions(t, painter(t, 2, m), m, 3*time.Second)
	require.Greater(t, len(pics), 10, "keystrokes")
	p := painter(t, 2, m)
	shifted := 0
	for i := 1; i < len(pics); i++ {
		d := lumaDiff(pics[i-1], pics[i])
		_, regions, _ := m.Version(uint64(i + 1))
		require.Len(t, regions, 1)
		require.True(t, d.inside(p, regions[0]), "keystroke %d changed pixels outside its line: %+v", i, d)
		require.Positive(t, d.n, "keystroke %d changed nothing", i)
		require.Less(t, float64(d.n), 0.02*testW*testH, "keystroke %d changed %d samples: more than a line", i, d.n)
		// The line's text moves on by one glyph: where both keystrokes
		// re-rendered it, column x of the new line is column x+GlyphW of
		// the line before.
		if i < 2 {
			continue
		}
		_, before, _ := m.Version(uint64(i))
		now, was := p.pixels(regions[0]), p.pixels(before[0])
		x0, x1 := max(now.x0, was.x0-frames.GlyphW), min(now.x1, was.x1-frames.GlyphW)
		if now.y0 != was.y0 || now.y1 != was.y1 || x1 <= x0 {
			continue
		}
		shifted++
		a, b := pics[i-1], pics[i]
		for y := now.y0; y < now.y1; y++ {
			require.Equal(t, a.Y[y*testW+x0+frames.GlyphW:y*testW+x1+frames.GlyphW], b.Y[y*testW+x0:y*testW+x1],
				"keystroke %d row %d: not the line before moved on by a glyph", i, y)
		}
	}
	require.Greater(t, shifted, len(pics)/2, "keystrokes compared with the one before on the same line")
}

func TestAnimationChangesTheWholeScreen(t *testing.T) {
	m := model(t, 4, screen.Phase{Source: screen.Animation{}})
	pics, imgs := versions(t, painter(t, 4, m), m, 500*time.Millisecond)
	require.Len(t, pics, 31, "the desktop and a frame at every 60 Hz refresh")
	for i := 2; i < len(pics); i++ {
		require.Equal(t, 1.0, imgs[i].Changed)
		d := lumaDiff(pics[i-1], pics[i])
		require.Greater(t, float64(d.n), 0.75*testW*testH, "frame %d changed %d samples: an animation changes nearly all", i, d.n)
	}
}

func TestVideoChangesOnlyItsWindow(t *testing.T) {
	m := model(t, 5, screen.Phase{Source: screen.Video{}})
	pics, _ := versions(t, painter(t, 5, m), m, time.Second)
	require.Len(t, pics, 31, "the desktop and 30 frames")
	p := painter(t, 5, m)
	_, regions, _ := m.Version(2)
	px := p.pixels(regions[0])
	for i := 2; i < len(pics); i++ {
		d := lumaDiff(pics[i-1], pics[i])
		require.True(t, d.inside(p, regions[0]), "frame %d", i)
		require.Greater(t, float64(d.n), 0.8*float64(px.w()*px.h()), "frame %d: a video's grain changes nearly every sample of its window", i)
	}
}

// A scroll moves the document: the new picture's rows are the old one's,
// a few rows further down the document.
func TestScrollingShiftsTheDocument(t *testing.T) {
	// 20 Hz, so that each step moves the small test screen by some rows.
	m := model(t, 6, screen.Phase{Source: screen.Scrolling{Rate: 20}})
	pics, imgs := versions(t, painter(t, 6, m), m, 200*time.Millisecond)
	p := painter(t, 6, m)
	_, regions, _ := m.Version(2)
	px := p.pixels(regions[0])
	for i := 2; i < len(pics); i++ {
		a, b := pics[i-1], pics[i]
		require.True(t, lumaDiff(a, b).inside(p, regions[0]))
		want := even(int(imgs[i].At.Seconds()*scrollSpeed*testH)) - even(int(imgs[i-1].At.Seconds()*scrollSpeed*testH))
		require.Positive(t, want)
		// Row y of the new picture is row y+shift of the old one.
		for y := px.y0; y+want < px.y1; y++ {
			require.Equal(t, a.Y[(y+want)*testW+px.x0:(y+want)*testW+px.x1], b.Y[y*testW+px.x0:y*testW+px.x1],
				"frame %d row %d is not the previous frame's row %d", i, y, y+want)
		}
	}
}

func TestPhotoAppearsOnce(t *testing.T) {
	m := model(t, 8, screen.Phase{At: 100 * time.Millisecond, Source: screen.Photo{}})
	pics, _ := versions(t, painter(t, 8, m), m, time.Second)
	require.Len(t, pics, 2, "the desktop, then the photo")
	p := painter(t, 8, m)
	_, regions, _ := m.Version(2)
	d := lumaDiff(pics[0], pics[1])
	require.True(t, d.inside(p, regions[0]))
	px := p.pixels(regions[0])
	require.Greater(t, float64(d.n), 0.9*float64(px.w()*px.h()))
}

func TestResolution(t *testing.T) {
	m := model(t, 1)
	m.Latest(0)
	p, err := New(1, m, Config{})
	require.NoError(t, err)
	w, h := p.Size()
	require.Equal(t, [2]int{1280, 720}, [2]int{w, h}, "the default")
	p, err = New(1, m, Config{Width: 1920, Height: 1080})
	require.NoError(t, err)
	pic, err := p.Paint(1)
	require.NoError(t, err)
	require.Equal(t, [2]int{1920, 1080}, [2]int{pic.W, pic.H})
	for _, bad := range []Config{{Width: 1279, Height: 720}, {Width: 100, Height: 720}, {Width: 1280}} {
		_, err := New(1, m, bad)
		require.ErrorIs(t, err, ErrConfig, "%+v", bad)
	}
	_, err = p.Paint(2)
	require.ErrorIs(t, err, ErrNoVersion, "a still desktop has one version")
}

// BenchmarkAnimation is the cost of one 720p frame of the full-screen
// animation, the painter's costliest kind (textures painted beforehand).
//
//	go test ./agent/screen/paint -run '^$' -bench Animation
func BenchmarkAnimation(b *testing.B) {
	m, err := screen.New(1, screen.Config{Timeline: []screen.Phase{{Source: screen.Animation{}}}})
	require.NoError(b, err)
	p, err := New(1, m, Config{})
	require.NoError(b, err)
	last := m.Latest(time.Hour).Version
	_, err = p.Paint(2)
	require.NoError(b, err)
	b.ResetTimer()
	for i := range b.N {
		if _, err := p.Paint(3 + uint64(i)%(last-3)); err != nil {
			b.Fatal(err)
		}
	}
}
