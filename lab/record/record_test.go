package record

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

// needs skips a test when kind's programs are not installed, saying
// which, unless LAB_REQUIRE_RECORD=1 (CI) makes that a failure.
func needs(t *testing.T, kind string) {
	t.Helper()
	if err := Check(kind); err != nil {
		if !errors.Is(err, ErrMissing) {
			t.Fatal(err)
		}
		if os.Getenv("LAB_REQUIRE_RECORD") == "1" {
			t.Fatalf("LAB_REQUIRE_RECORD=1 but %v", err)
		}
		t.Skipf("skipping: %v (LAB_REQUIRE_RECORD=1 makes this a failure)", err)
	}
}

// frames decodes every frame of a recording.
func frames(t *testing.T, rec *recording.Recording) []*codec.Frame {
	t.Helper()
	p, err := rec.Play()
	require.NoError(t, err)
	defer p.Close()
	var out []*codec.Frame
	for {
		_, f, err := p.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, f)
	}
}

// differ counts the pixels that differ between a and b.
func differ(a, b *codec.Frame) int {
	n := 0
	for i := range a.Pix {
		if a.Pix[i] != b.Pix[i] {
			n++
		}
	}
	return n
}

// Short recordings of two kinds, made by the real applications under
// Xvfb: frames came, each after the first with the damage X reported,
// the last frame decoded is exactly what the display held at the end
// (the kept copy, updated from the damaged rectangles only, never drifted
// from the screen), and the script's input changed pixels.
func TestRecord(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		minFrames int
	}{
		// Typing: a frame for most keys, the first word within half a
		// second.
		{"terminal-typing", 8},
		// Window moves: a drag is a frame for each of its moves.
		{"window-moves", 15},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			needs(t, tc.kind)
			out := filepath.Join(t.TempDir(), tc.kind+".labrec")
			cfg := Config{Kind: tc.kind, Width: 640, Height: 360, Duration: 2500 * time.Millisecond, Seed: 3, Out: out}
			res, err := Record(t.Context(), cfg)
			require.NoError(t, err)

			rec, err := recording.Open(out)
			require.NoError(t, err)
			require.Equal(t, recording.Meta{Width: 640, Height: 360, Refresh: 60, Kind: tc.kind, App: App(mustKind(t, tc.kind)),
				Script: res.Meta.Script, Command: "lab record -kind " + tc.kind + " -size 640x360 -duration 2.5s -rate 60 -seed 3 -out " + out}, rec.Meta)
			require.NotEmpty(t, rec.Meta.Script)
			require.Equal(t, res.Frames, len(rec.Frames))
			require.GreaterOrEqual(t, len(rec.Frames), tc.minFrames)
			st, err := os.Stat(out)
			require.NoError(t, err)
			require.Equal(t, st.Size(), res.Bytes)
			for i, f := range rec.Frames[1:] {
				require.NotEmpty(t, f.Damage, "frame %d has no damage", i+1)
				require.Zero(t, f.At%(time.Second/60), "frame %d at %v, off the 60 Hz grid", i+1, f.At)
			}

			fs := frames(t, rec)
			last := fs[len(fs)-1]
			require.Zero(t, differ(res.Screen, last), "the last frame is not what the display held at the end")
			require.Greater(t, differ(fs[0], last), 100, "the script changed nothing")
			var changed float64
			for _, f := range rec.Frames[1:] {
				changed += f.Changed
			}
			require.Positive(t, changed)
		})
	}
}

func mustKind(t *testing.T, name string) Kind {
	k, err := Lookup(name)
	require.NoError(t, err)
	return k
}

// A program that does not start is named, with the end of what it said.
func TestRecordRefuses(t *testing.T) {
	_, err := Record(t.Context(), Config{Kind: "idle", Width: 10, Height: 10, Out: "x"})
	require.EqualError(t, err, "record: size 10x10: want sides of 64 to 4096 pixels")
	_, err = Record(t.Context(), Config{Kind: "spreadsheet", Out: "x"})
	require.ErrorContains(t, err, `unknown kind "spreadsheet"`)
	t.Setenv("PATH", t.TempDir())
	_, err = Record(t.Context(), Config{Kind: "idle", Out: "x"})
	require.ErrorIs(t, err, ErrMissing)
	require.ErrorContains(t, err, "idle needs Xvfb, xdotool, xclock, openbox, not found on PATH: install with `apt-get install -y")
}

// stop removes an X display's files only when it had to kill the server:
// a server that ended on SIGTERM removed its own, and the display may by
// then be another server's, whose files must stay. A shell stands in for
// the server (one that heeds SIGTERM, one that does not).
func TestStopRemovesTheFilesOfAKilledServerOnly(t *testing.T) {
	files := []string{"/tmp/.X11-unix/X8792", "/tmp/.X8792-lock"}
	require.NoError(t, os.MkdirAll("/tmp/.X11-unix", 0o1777))
	for _, c := range []struct {
		script string
		left   bool
	}{{"echo ready >&3; exec sleep 60", true}, {"trap '' TERM; echo ready >&3; sleep 60 & wait", false}} {
		for _, f := range files {
			require.NoError(t, os.WriteFile(f, nil, 0o600))
			t.Cleanup(func() { os.Remove(f) })
		}
		var out strings.Builder
		r, w, err := os.Pipe()
		require.NoError(t, err)
		ps := &procs{log: &out, display: ":8792"}
		p, err := ps.start("sh", []string{"-c", c.script}, w)
		require.NoError(t, err)
		w.Close()
		line, err := bufio.NewReader(r).ReadString('\n')
		r.Close()
		require.NoError(t, err)
		require.Equal(t, "ready\n", line)
		ps.stop()
		<-p.done
		for _, f := range files {
			if c.left {
				require.FileExists(t, f, "%s: ended on SIGTERM, the files are not its to remove", c.script)
			} else {
				require.NoFileExists(t, f, "%s: killed, its files removed", c.script)
			}
		}
	}
}

// bareDisplay starts an Xvfb display of w x h with nothing on it, and a
// capture connected to it; stop ends both (and what was started on it).
func bareDisplay(t *testing.T, w, h int) (ps *procs, c *capture, stop func()) {
	t.Helper()
	ps = &procs{log: io.Discard}
	display, err := ps.startX(t.Context(), w, h)
	if err != nil {
		ps.stop()
		t.Fatal(err)
	}
	ps.env, ps.dir = childEnv(display, t.TempDir()), t.TempDir()
	if c, err = openCapture(display); err != nil {
		ps.stop()
		t.Fatal(err)
	}
	return ps, c, func() { c.Close(); ps.stop() }
}

// The probe that tells when the window manager is ready is framed only by
// a window manager: on a bare display it stays on the root, however often
// it is asked for again; once openbox runs, it is taken into a frame.
func TestWindowManagerProbe(t *testing.T) {
	needs(t, "window-moves")
	ps, c, stop := bareDisplay(t, 320, 200)
	defer stop()
	probe, err := c.newProbe()
	require.NoError(t, err)
	for range 3 {
		ok, err := c.managesWindows(probe, true)
		require.NoError(t, err)
		require.False(t, ok, "framed with no window manager")
	}
	_, err = ps.start("openbox", nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), StartTimeout)
	defer cancel()
	require.NoError(t, c.awaitFramed(ctx, probe, func() error { return nil }))
	require.NoError(t, c.destroyProbe(probe))
}
