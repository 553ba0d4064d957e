package main

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/vnc"
)

func TestParseVNC(t *testing.T) {
	f, err := parseVNC([]string{"-scenario", "lan-animation", "-server", "xvnc", "-encoding", "hextile", "-duration", "3s", "-seed", "7"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, vncFlags{scenario: "lan-animation", server: "xvnc", encoding: "hextile", screen: "mix", out: "out/vnc", size: "640x360", viewer: vnc.ViewerLab, watchEvery: vnc.DefaultWatchEvery, pressEvery: vnc.DefaultPressEvery,
		seed: 7, duration: 3 * time.Second, drain: vnc.DefaultDrain}, f)
	_, err = parseVNC(nil, io.Discard)
	require.EqualError(t, err, "vnc: -scenario is required: a library name like lan-animation, or a .yaml file")
	_, err = parseVNC([]string{"-scenario", "x", "extra"}, io.Discard)
	require.ErrorContains(t, err, `unexpected arguments ["extra"]`)
}

// Mistakes are refused before anything starts: an unknown encoding or
// size, a server that is not installed (with how to install it), and no
// root (one line, as lab shell says it).
func TestVNCRefuses(t *testing.T) {
	_, err := vncRun(t.Context(), []string{"-scenario", "lan-animation", "-encoding", "tight"}, io.Discard, io.Discard, nil)
	require.EqualError(t, err, `vnc: -encoding "tight": zrle, hextile or raw`)
	_, err = vncRun(t.Context(), []string{"-scenario", "lan-animation", "-size", "big"}, io.Discard, io.Discard, nil)
	require.EqualError(t, err, `vnc: -size "big": WIDTHxHEIGHT, like 640x360`)
	_, err = vncRun(t.Context(), []string{"-scenario", "lan-animation", "-server", "tigervnc"}, io.Discard, io.Discard, nil)
	require.EqualError(t, err, `vnc: unknown server "tigervnc" (x11vnc, xvnc, xrdp, cmd)`)
	_, err = vncRun(t.Context(), []string{"-scenario", "lan-animation", "-viewer", "remmina"}, io.Discard, io.Discard, nil)
	require.EqualError(t, err, `vnc: unknown viewer "remmina" (lab, vncviewer, xfreerdp, novnc, cmd, delay)`)
	_, err = vncRun(t.Context(), []string{"-scenario", "lan-animation", "-server", "xrdp"}, io.Discard, io.Discard, nil)
	require.EqualError(t, err, `vnc: viewer lab cannot show server xrdp (RDP needs xfreerdp; VNC the others)`)

	t.Setenv("PATH", t.TempDir())
	_, err = vncRun(t.Context(), []string{"-scenario", "lan-animation"}, io.Discard, io.Discard, nil)
	require.ErrorIs(t, err, vnc.ErrMissing)
	require.EqualError(t, err, "vnc: server not installed: x11vnc needs Xvfb and x11vnc, not found on PATH: install with `apt-get install -y xvfb x11vnc tigervnc-standalone-server xrdp`")
}

func TestVNCWithoutRoot(t *testing.T) {
	if err := vnc.Check(vnc.Xvnc); err != nil {
		t.Skipf("skipping: %v", err)
	}
	old := vncAvailable
	t.Cleanup(func() { vncAvailable = old })
	vncAvailable = func() error { return errors.New("kernel mode unavailable: needs root, running as uid 1000") }
	_, err := vncRun(t.Context(), []string{"-scenario", "lan-animation", "-server", "xvnc"}, io.Discard, io.Discard, nil)
	require.EqualError(t, err, "vnc: kernel mode unavailable: needs root, running as uid 1000")
}
