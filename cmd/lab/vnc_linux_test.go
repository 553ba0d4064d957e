//go:build linux

package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/vnc"
	"github.com/nuvirahub/latencylab/netem/kernel"
)

// requireVNC skips unless lab vnc can run here (root, the servers);
// LAB_REQUIRE_KERNEL=1 and LAB_REQUIRE_VNC=1 (CI) make it a failure.
func requireVNC(t *testing.T) {
	t.Helper()
	if err := kernel.Available(); err != nil {
		if os.Getenv("LAB_REQUIRE_KERNEL") == "1" {
			t.Fatalf("LAB_REQUIRE_KERNEL=1 but %v", err)
		}
		t.Skipf("skipping: %v (set LAB_REQUIRE_KERNEL=1 to make this a failure)", err)
	}
	if err := vnc.Check(vnc.Xvnc); err != nil {
		if os.Getenv("LAB_REQUIRE_VNC") == "1" {
			t.Fatalf("LAB_REQUIRE_VNC=1 but %v", err)
		}
		t.Skipf("skipping: %v (set LAB_REQUIRE_VNC=1 to make this a failure)", err)
	}
}

// lab vnc writes a result that lab report renders, and a SIGTERM during a
// run ends it with the servers, their display and the namespace removed.
func TestVNCCommand(t *testing.T) {
	requireVNC(t)
	t.Run("result", func(t *testing.T) {
		out := t.TempDir()
		var stdout bytes.Buffer
		path, err := vncRun(t.Context(), []string{"-scenario", "lan-animation", "-server", "xvnc", "-encoding", "hextile",
			"-duration", "1s", "-screen", "typing", "-out", out}, &stdout, io.Discard, nil)
		require.NoError(t, err)
		t.Log(strings.TrimSpace(stdout.String()))
		require.Equal(t, filepath.Join(out, "lan-animation-xvnc-hextile-seed1.json"), path)
		r, err := result.Read(path)
		require.NoError(t, err)
		require.Equal(t, "xvnc-hextile", r.Encoder)
		require.Positive(t, r.Summary.Displayed)
		require.NoError(t, report([]string{"-out", filepath.Join(out, "report"), out}, io.Discard))
		_, err = os.Stat(filepath.Join(out, "report", "report.html"))
		require.NoError(t, err)
	})

	t.Run("sigterm", func(t *testing.T) {
		var st vnc.Started
		err := vncSignalled([]string{"-scenario", "lan-animation", "-server", "xvnc", "-duration", "1m", "-out", t.TempDir()},
			io.Discard, io.Discard, func(s vnc.Started) {
				st = s
				require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
			})
		require.ErrorContains(t, err, "interrupted by a signal")
		require.NotNil(t, st.Server)
		for _, pid := range st.Server.Pids() {
			require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "process %d still there", pid)
		}
		_, err = os.Stat("/tmp/.X11-unix/X" + strings.TrimPrefix(st.Server.Display, ":"))
		require.ErrorIs(t, err, fs.ErrNotExist)
		_, err = os.Stat(filepath.Join("/run/netns", st.Namespace))
		require.ErrorIs(t, err, fs.ErrNotExist)
	})
}
