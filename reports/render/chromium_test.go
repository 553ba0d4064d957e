//go:build linux

// The browser test is Linux-only: it runs Debian's chromium in a process
// group of its own so a time-out can end all of its processes.

package render_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/plots"
	"github.com/nuvirahub/latencylab/reports/plots/plotstest"
	"github.com/nuvirahub/latencylab/reports/render"
)

// chromium finds the browser, or skips the test, unless CI requires it.
func chromium(t *testing.T) string {
	bin, err := exec.LookPath("chromium")
	if err == nil {
		return bin
	}
	const how = "install Debian's package: apt-get install -y chromium"
	if os.Getenv("LAB_REQUIRE_CHROMIUM") == "1" {
		t.Fatalf("chromium is not on PATH and LAB_REQUIRE_CHROMIUM=1 requires it (%s): %v", how, err)
	}
	t.Skipf("chromium is not on PATH, so the HTML report is not checked in a browser (%s; LAB_REQUIRE_CHROMIUM=1 makes this a failure)", how)
	return ""
}

// colourful tells a plot's data (saturated colours) from text, grid and
// the page's style (greys): the report's CSS uses no saturated colour.
func colourful(r, g, b uint32) bool {
	hi, lo := max(r, g, b)>>8, min(r, g, b)>>8
	return hi-lo > 60
}

// colourfulPixels counts an image's colourful pixels and bounds them.
func colourfulPixels(img image.Image) (n int, box image.Rectangle) {
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); colourful(r, g, bl) {
				n++
				box = box.Union(image.Rect(x, y, x+1, y+1))
			}
		}
	}
	return n, box
}

// The requirement: the HTML report opened in headless Chromium
// renders its plots. The screenshot must show the figure's data: about as
// many coloured pixels as the PNG itself has, spread as wide, with the
// many shades of antialiased lines around them.
func TestChromiumRendersTheFigures(t *testing.T) {
	bin := chromium(t)
	a := plotstest.Result("wired", 0)
	fig, err := plots.LatencyOverTime("wired", map[string]*result.Run{"wired": a})
	require.NoError(t, err)
	figImg, err := png.Decode(bytes.NewReader(fig))
	require.NoError(t, err)
	want, wantBox := colourfulPixels(figImg)
	require.Greater(t, want, 1000)

	dir := t.TempDir()
	doc := &render.Doc{
		Title: "Browser check",
		Intro: []string{"The figure below must render in headless Chromium."},
		Sections: []render.Section{{
			Heading: "Latency",
			Figures: []render.Figure{{Name: "latency.png", Caption: "Latency and bitrate over time", PNG: fig}},
		}},
	}
	require.NoError(t, render.Write(dir, "report", doc))
	// The page must not need the PNG beside it: only the HTML is opened,
	// from a folder without it.
	require.NoError(t, os.Remove(filepath.Join(dir, "latency.png")))

	shot := filepath.Join(dir, "screenshot.png")
	page := url.URL{Scheme: "file", Path: filepath.Join(dir, "report.html")}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin,
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-crash-reporter", "--force-device-scale-factor=1",
		"--user-data-dir="+filepath.Join(dir, "profile"),
		"--window-size=1200,1600", "--screenshot="+shot, page.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On time-out end the browser's helpers too, not only the launcher.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	t.Logf("chromium took %v", time.Since(start).Round(time.Millisecond))
	if cmd.Process != nil {
		// A helper left behind would hold the profile folder open; the
		// group is ours (Setpgid), so end what is left of it.
		if kerr := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
			t.Logf("ending chromium's process group: %v", kerr)
		}
	}
	require.NoError(t, err, "chromium failed; its output ends:\n%s", tail(out.String(), 2000))

	f, err := os.Open(shot)
	require.NoError(t, err, "no screenshot; chromium's output ends:\n%s", tail(out.String(), 2000))
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, image.Pt(1200, 1600), img.Bounds().Size())

	got, box := colourfulPixels(img)
	require.InEpsilon(t, want, got, 0.2, "coloured pixels in the screenshot vs in the figure")
	require.GreaterOrEqual(t, box.Dx(), wantBox.Dx()*8/10, "the figure's data spans its width")
	require.GreaterOrEqual(t, box.Dy(), wantBox.Dy()*8/10, "and its height")
	shades := map[[3]uint32]bool{}
	for y := box.Min.Y; y < box.Max.Y; y++ {
		for x := box.Min.X; x < box.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			shades[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	require.Greater(t, len(shades), 50, "distinct colours in the figure's region")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
