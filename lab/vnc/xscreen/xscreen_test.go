package xscreen

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
)

// xvfb starts an Xvfb display of w x h for the test and returns its name;
// it skips without Xvfb unless LAB_REQUIRE_VNC=1.
func xvfb(t *testing.T, w, h int) string {
	t.Helper()
	if _, err := exec.LookPath("Xvfb"); err != nil {
		if os.Getenv("LAB_REQUIRE_VNC") == "1" {
			t.Fatalf("LAB_REQUIRE_VNC=1 but %v", err)
		}
		t.Skipf("skipping: %v (apt-get install -y xvfb; LAB_REQUIRE_VNC=1 makes this a failure)", err)
	}
	r, wr, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", fmt.Sprintf("%dx%dx24", w, h), "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{wr}
	require.NoError(t, cmd.Start())
	wr.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(r).ReadString('\n') // the display, once it takes clients
	require.NoError(t, err)
	return ":" + strings.TrimSpace(line)
}

// What is put on the display is what is read back, rectangle by rectangle,
// across the requests a large rectangle is cut into; a frame of another
// size or a rectangle outside is refused.
func TestPutGet(t *testing.T) {
	d, err := Open(xvfb(t, 320, 400))
	require.NoError(t, err)
	defer d.Close()
	w, h := d.Size()
	require.Equal(t, [2]int{320, 400}, [2]int{w, h})

	noise := frames.Keyframe(frames.Noise, w, h, 1)
	require.NoError(t, d.Put(noise, []codec.Rect{{W: w, H: h}})) // 512 kB: several requests
	require.NoError(t, d.Sync())
	got, err := d.Get()
	require.NoError(t, err)
	require.Equal(t, noise.Pix, got.Pix)

	solid := frames.Keyframe(frames.Solid, w, h, 2)
	r := codec.Rect{X: 10, Y: 20, W: 30, H: 40}
	require.NoError(t, d.Put(solid, []codec.Rect{r}))
	require.NoError(t, d.Sync())
	got, err = d.Get()
	require.NoError(t, err)
	for y := range h {
		for x := range w {
			want := noise.At(x, y)
			if x >= r.X && x < r.X+r.W && y >= r.Y && y < r.Y+r.H {
				want = solid.At(x, y)
			}
			require.Equal(t, want, got.At(x, y), "pixel %d,%d", x, y)
		}
	}

	require.ErrorContains(t, d.Put(codec.NewFrame(10, 10), nil), "a 10x10 frame on a 320x400 display")
	require.ErrorContains(t, d.Put(noise, []codec.Rect{{X: 300, W: 30, H: 1}}), "outside")
}
