package recording

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// screens makes n frames of a w x h screen: a noisy first frame, then a
// block of new noise moving right by 8 pixels a frame, with its damage.
func screens(w, h, n int, seed uint64) (frames []*codec.Frame, damage [][]codec.Rect) {
	rng := rand.New(rand.NewPCG(seed, 1))
	f := codec.NewFrame(w, h)
	for i := range f.Pix {
		f.Pix[i] = rng.Uint32() & 0xffffff
	}
	frames = append(frames, f)
	damage = append(damage, nil)
	for k := 1; k < n; k++ {
		f = f.Clone()
		r := codec.Rect{X: (8 * k) % (w - 16), Y: h / 4, W: 16, H: 16}
		for y := r.Y; y < r.Y+r.H; y++ {
			for x := r.X; x < r.X+r.W; x++ {
				f.Pix[y*w+x] = rng.Uint32() & 0xffffff
			}
		}
		frames = append(frames, f)
		damage = append(damage, []codec.Rect{r})
	}
	return frames, damage
}

func write(t *testing.T, frames []*codec.Frame, damage [][]codec.Rect) string {
	t.Helper()
	return writeVersion(t, frames, damage, formatVersion)
}

// writeVersion writes a recording in the given format version.
func writeVersion(t *testing.T, frames []*codec.Frame, damage [][]codec.Rect, version byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.labrec")
	out, err := os.Create(path)
	require.NoError(t, err)
	meta := Meta{Width: frames[0].W, Height: frames[0].H, Refresh: 60, Kind: "test", App: "none", Script: "moving noise", Command: "go test"}
	w, err := newWriter(out, meta, version)
	require.NoError(t, err)
	for i, f := range frames {
		require.NoError(t, w.Add(time.Duration(i)*time.Second/60, f, damage[i]))
	}
	require.NoError(t, w.Close())
	require.NoError(t, out.Close())
	return path
}

// TestRoundTrip: the pixels come back exactly, and the index says when
// each frame came, what was damaged and how much really changed.
func TestRoundTrip(t *testing.T) {
	frames, damage := screens(96, 64, 12, 1)
	path := write(t, frames, damage)
	rec, err := Open(path)
	require.NoError(t, err)
	require.Len(t, rec.Frames, len(frames))
	require.Equal(t, 96, rec.Meta.Width)
	require.Equal(t, "moving noise", rec.Meta.Script)
	require.Equal(t, []codec.Rect{{X: 0, Y: 0, W: 96, H: 64}}, rec.Frames[0].Damage, "the first frame is the whole screen")
	require.Equal(t, 1.0, rec.Frames[0].Changed)
	for i := 1; i < len(frames); i++ {
		require.Equal(t, time.Duration(i)*time.Second/60, rec.Frames[i].At)
		require.Equal(t, damage[i], rec.Frames[i].Damage)
		// Almost every pixel of new noise differs from the old.
		require.InDelta(t, 256.0/(96*64), rec.Frames[i].Changed, 3.0/(96*64))
		require.InDelta(t, 47, rec.Frames[i].Detail, 7, "noise's detail")
	}
	require.Equal(t, 11*time.Second/60+time.Second/60, rec.Duration())
	p, err := rec.Play()
	require.NoError(t, err)
	defer p.Close()
	for i := range frames {
		k, f, err := p.Next()
		require.NoError(t, err)
		require.Equal(t, i, k)
		require.Equal(t, frames[i].Pix, f.Pix, "frame %d", i)
	}
	_, _, err = p.Next()
	require.ErrorIs(t, err, io.EOF)
}

// TestCompact: a frame costs what changed, not the screen.
func TestCompact(t *testing.T) {
	frames, damage := screens(320, 192, 31, 2)
	path := write(t, frames, damage)
	st, err := os.Stat(path)
	require.NoError(t, err)
	// The first frame is noise (3 bytes a pixel do not compress); each of
	// the 30 others 256 pixels of noise, with their tile's overhead.
	require.Less(t, st.Size(), int64(320*192*3+30*(64*64*3)+4096))
}

// TestDetail: flat colour has none; a one-pixel checkerboard of black and
// white the most; a recorded frame's detail is its I420 picture's.
func TestDetail(t *testing.T) {
	f := codec.NewFrame(8, 8)
	all := []codec.Rect{{X: 0, Y: 0, W: 8, H: 8}}
	require.Equal(t, 0.0, Detail(f, all))
	for y := range 8 {
		for x := range 8 {
			if (x+y)%2 == 1 {
				f.Pix[y*8+x] = 0xffffff
			}
		}
	}
	require.Equal(t, 219.0, Detail(f, all))
	// The same measure on the I420 picture an encoder is given.
	pic := yuv.New(8, 8)
	pic.FromRGB(f.Pix, 8, 8)
	require.Equal(t, 219.0, DetailLuma(pic.Y, 8, 8, all))
	frames, damage := screens(64, 32, 2, 4)
	pic = yuv.New(64, 32)
	pic.FromRGB(frames[1].Pix, 64, 32)
	require.Equal(t, Detail(frames[1], damage[1]), DetailLuma(pic.Y, 64, 32, damage[1]))
}

// TestDamagedFiles: a truncated or foreign file is refused with what is
// wrong, never read as a shorter recording.
func TestDamagedFiles(t *testing.T) {
	frames, damage := screens(64, 32, 4, 3)
	path := write(t, frames, damage)
	whole, err := os.ReadFile(path)
	require.NoError(t, err)
	dir := t.TempDir()
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"foreign":   {[]byte("P6\n64 32\n255\n"), "not a screen recording"},
		"version":   {append([]byte("LABSCREC\x09"), whole[9:]...), "format version 9"},
		"truncated": {whole[:len(whole)-5], "frame 3: pixels cut short"},
		"no frames": {whole[:bytes.Index(whole, []byte(`"}`))+2], "no frames"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, name)
			require.NoError(t, os.WriteFile(p, c.data, 0o644))
			_, err := Open(p)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, p, "the error names the file")
		})
	}
}

// TestWriterRefuses: frames out of order, of another size or with damage
// off the screen.
func TestWriterRefuses(t *testing.T) {
	w, err := NewWriter(io.Discard, Meta{Width: 8, Height: 8, Refresh: 60})
	require.NoError(t, err)
	require.NoError(t, w.Add(time.Second, codec.NewFrame(8, 8), nil))
	require.ErrorContains(t, w.Add(0, codec.NewFrame(8, 8), nil), "before the frame before")
	require.ErrorContains(t, w.Add(2*time.Second, codec.NewFrame(4, 8), nil), "is 4x8")
	require.ErrorContains(t, w.Add(2*time.Second, codec.NewFrame(8, 8), []codec.Rect{{X: 4, Y: 4, W: 8, H: 1}}), "outside")
	_, err = NewWriter(io.Discard, Meta{Width: 8, Height: 8})
	require.ErrorContains(t, err, "refresh")
}

// TestChangedShareCountsOnce: pixels under two damage rectangles count
// once, and damaged pixels drawn again unchanged not at all.
func TestChangedShareCountsOnce(t *testing.T) {
	prev := codec.NewFrame(10, 10)
	cur := prev.Clone()
	for x := range 4 {
		cur.Pix[x] = 1 // four pixels of the top row change
	}
	damage := []codec.Rect{{X: 0, Y: 0, W: 4, H: 1}, {X: 2, Y: 0, W: 8, H: 2}}
	require.Equal(t, 0.04, ChangedShare(prev, cur, damage))
	require.Equal(t, 1.0, ChangedShare(nil, cur, damage))
}

// Buffered counts what the Writer has encoded and not yet handed on: a
// small recording is all in the buffer until Close, and the buffer and
// what was handed on add up to the file.
func TestBuffered(t *testing.T) {
	var out bytes.Buffer
	w, err := NewWriter(&out, Meta{Width: 64, Height: 36, Refresh: 60})
	require.NoError(t, err)
	f := codec.NewFrame(64, 36)
	for i := range f.Pix {
		f.Pix[i] = uint32(i * 2654435761 % 0xffffff)
	}
	require.NoError(t, w.Add(0, f, nil))
	require.Zero(t, out.Len(), "nothing handed on yet")
	held := w.Buffered()
	require.Positive(t, held)
	require.NoError(t, w.Close())
	require.Zero(t, w.Buffered())
	require.GreaterOrEqual(t, out.Len(), held, "the file holds what was buffered, and the end")
}

// A window dragged across the screen: every frame after the first is the
// window moved, which Moved finds (the uncovered background aside). A file
// of the first format reads with Moved 0, and Rewrite makes it a file of
// the current format with the same pixels and Moved measured.
func TestMovedInFiles(t *testing.T) {
	const w, h = 320, 200
	var frames []*codec.Frame
	var damage [][]codec.Rect
	for k := range 8 {
		frames = append(frames, desktop(w, h, 20+12*k, 30+7*k, 120, 80, 1))
		damage = append(damage, []codec.Rect{{X: 20 + 12*max(0, k-1), Y: 30 + 7*max(0, k-1), W: 132, H: 87}})
	}
	rec, err := Open(write(t, frames, damage))
	require.NoError(t, err)
	require.Equal(t, formatVersion, rec.Version())
	require.Zero(t, rec.Frames[0].Moved)
	for i := 1; i < len(frames); i++ {
		require.InDelta(t, bruteMoved(frames[i-1], frames[i], -12, -7), rec.Frames[i].Moved, 1e-12, "frame %d", i)
		require.Greater(t, rec.Frames[i].Moved, 0.8, "frame %d", i)
	}

	old, err := Open(writeVersion(t, frames, damage, firstVersion))
	require.NoError(t, err)
	require.Equal(t, firstVersion, old.Version())
	for i, f := range old.Frames {
		require.Zero(t, f.Moved)
		want := rec.Frames[i]
		want.Moved = 0
		require.Equal(t, want, f)
	}
	var buf bytes.Buffer
	require.NoError(t, old.Rewrite(&buf))
	again := filepath.Join(t.TempDir(), "again.labrec")
	require.NoError(t, os.WriteFile(again, buf.Bytes(), 0o644))
	got, err := Open(again)
	require.NoError(t, err)
	require.Equal(t, rec.Frames, got.Frames)
	mine, err := os.ReadFile(rec.Path)
	require.NoError(t, err)
	require.Equal(t, mine, buf.Bytes(), "a rewritten file is the file the current format writes")

	// Upgrade does the same in place, and leaves a current file alone.
	path := writeVersion(t, frames, damage, firstVersion)
	u, err := Upgrade(path)
	require.NoError(t, err)
	require.Equal(t, Upgraded{From: firstVersion, To: formatVersion, Frames: len(frames), Moved: u.Moved, Fill: u.Fill}, u)
	require.Greater(t, u.Moved, 0.8)
	// Each drag damages 132x87 pixels, of which the window's old and new
	// places changed: all but the corners neither covers.
	require.InDelta(t, (132.0*87-2*12*7)/(132*87), u.Fill, 1e-9)
	upgraded, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, mine, upgraded)
	again2, err := Upgrade(path)
	require.NoError(t, err)
	require.Equal(t, Upgraded{From: formatVersion, To: formatVersion, Frames: len(frames), Moved: u.Moved, Fill: u.Fill}, again2)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")
}
