package yuv

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// testPicture is a picture with a gradient, blocks and noise from seed:
// structure for SSIM to find.
func testPicture(w, h int, seed uint64) *I420 {
	r := rand.New(rand.NewPCG(seed, 1))
	p := New(w, h)
	for y := range h {
		for x := range w {
			v := 16 + (x*200)/w
			if (x/32+y/32)%2 == 0 {
				v += 30
			}
			v += r.IntN(16)
			p.Y[y*w+x] = byte(min(v, 235))
		}
	}
	return p
}

// SSIM's known answers: 1 for identical pictures, low against the
// negative, close to but below 1 for a small shift of the level, and the
// same both ways round.
func TestSSIMKnownAnswers(t *testing.T) {
	a := testPicture(64, 48, 1)
	require.Equal(t, 1.0, SSIM(a, a.Clone()))
	neg := a.Clone()
	for i, v := range neg.Y {
		neg.Y[i] = 255 - v
	}
	require.Less(t, SSIM(a, neg), 0.0, "structure reversed: negative correlation")
	brighter := a.Clone()
	for i, v := range brighter.Y {
		brighter.Y[i] = v + 3
	}
	s := SSIM(a, brighter)
	require.Greater(t, s, 0.99)
	require.Less(t, s, 1.0)
	b := testPicture(64, 48, 2)
	require.Equal(t, SSIM(a, b), SSIM(b, a))
	require.Panics(t, func() { SSIM(a, New(32, 32)) })
}

// The lab's SSIM agrees with ffmpeg's ssim filter (Debian's ffmpeg) to
// 0.005 on pairs of pictures: the same, noise added, shifted, blocky (a
// damaged picture's look) and unrelated.
func TestSSIMMatchesFFmpeg(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		if os.Getenv("LAB_REQUIRE_FFMPEG") != "" {
			t.Fatalf("LAB_REQUIRE_FFMPEG is set but ffmpeg is not on PATH: %v", err)
		}
		t.Skip("skipping: ffmpeg is not installed (apt-get install ffmpeg; LAB_REQUIRE_FFMPEG=1 makes this a failure)")
	}
	const w, h = 320, 240
	src := testPicture(w, h, 7)
	noisy, shifted, blocky := src.Clone(), src.Clone(), src.Clone()
	r := rand.New(rand.NewPCG(9, 9))
	for i, v := range noisy.Y {
		noisy.Y[i] = byte(min(max(int(v)+r.IntN(41)-20, 0), 255))
	}
	for y := range h {
		for x := range w {
			shifted.Y[y*w+x] = src.Y[y*w+(x+3)%w]
			// 16x16 blocks of their top-left sample, as concealment
			// copies stale macroblocks.
			blocky.Y[y*w+x] = src.Y[(y/16*16)*w+x/16*16]
		}
	}
	pairs := []struct {
		name string
		b    *I420
	}{{"same", src.Clone()}, {"noisy", noisy}, {"shifted", shifted}, {"blocky", blocky}, {"unrelated", testPicture(w, h, 8)}}
	dir := t.TempDir()
	write := func(name string, p *I420) string {
		path := filepath.Join(dir, name+".yuv")
		require.NoError(t, os.WriteFile(path, append(append(append([]byte{}, p.Y...), p.U...), p.V...), 0o644))
		return path
	}
	a := write("src", src)
	size := strconv.Itoa(w) + "x" + strconv.Itoa(h)
	for _, pr := range pairs {
		b := write(pr.name, pr.b)
		stats := filepath.Join(dir, pr.name+".log")
		out, err := exec.CommandContext(t.Context(), ffmpeg, "-hide_banner", "-nostats", "-loglevel", "error",
			"-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", size, "-i", b,
			"-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", size, "-i", a,
			"-lavfi", "ssim=stats_file="+stats, "-f", "null", "-").CombinedOutput()
		require.NoError(t, err, "ffmpeg: %s", out)
		theirs := ffmpegLumaSSIM(t, stats)
		ours := SSIM(src, pr.b)
		t.Logf("%-9s ours %.5f, ffmpeg %.5f", pr.name, ours, theirs)
		require.InDelta(t, theirs, ours, 0.005, pr.name)
	}
}

// ffmpegLumaSSIM reads the Y figure of the first frame of an ssim
// filter's stats file ("n:1 Y:0.987 U:... V:... All:... (...)").
func ffmpegLumaSSIM(t *testing.T, path string) float64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan(), "an empty stats file")
	for _, field := range strings.Fields(sc.Text()) {
		if v, ok := strings.CutPrefix(field, "Y:"); ok {
			y, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return y
		}
	}
	t.Fatalf("no Y: in %q", sc.Text())
	return 0
}

// BenchmarkSSIM720p measures SSIM over a 720p picture's luma, what the
// lab computes for every frame a real decoder shows.
func BenchmarkSSIM720p(b *testing.B) {
	x, y := testPicture(1280, 720, 1), testPicture(1280, 720, 2)
	var s float64
	for b.Loop() {
		s = SSIM(x, y)
	}
	if !(s > -1 && s < 1) {
		b.Fatalf("SSIM of two different pictures %v, want in (-1, 1)", s)
	}
}
