package procgroup

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// start runs script in a shell in a group of its own, and returns once
// the script has said "ready": the shell, its end, and the rest of its
// standard output, which ends only when every process holding it (the
// shell and what it started) has ended.
func start(t *testing.T, script string) (*exec.Cmd, <-chan struct{}, *bufio.Reader) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = Attr()
	cmd.Stdout = w
	require.NoError(t, cmd.Start())
	w.Close()
	out := bufio.NewReader(r)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	return cmd, done, out
}

// SIGTERM ends a group that heeds it, the shell's background sleep
// included; a group that ignores it (the shell and its sleep) is killed
// after the grace. Either way the whole group ends: its output reaches its
// end (a sleep left alive would hold it open, and the read would never
// return), and Stop returns (without its SIGKILL it would wait for the
// second group forever).
func TestStop(t *testing.T) {
	for _, c := range []struct {
		script string
		killed bool
	}{{"sleep 60 & echo ready; wait", false}, {"trap '' TERM; sleep 60 & echo ready; wait", true}} {
		cmd, done, out := start(t, c.script)
		require.Equal(t, c.killed, Stop(cmd, done, syscall.SIGTERM), "killed: %s", c.script)
		rest, err := io.ReadAll(out)
		require.NoError(t, err, c.script)
		require.Empty(t, rest, c.script)
	}
}

// The files a killed X server leaves are removed, and their absence is no
// error. The display number is one no test's server picks (they start at
// the lowest free one).
func TestRemoveXFiles(t *testing.T) {
	files := []string{"/tmp/.X11-unix/X8791", "/tmp/.X8791-lock"}
	require.NoError(t, os.MkdirAll("/tmp/.X11-unix", 0o1777))
	for _, f := range files {
		require.NoError(t, os.WriteFile(f, nil, 0o600))
		t.Cleanup(func() { os.Remove(f) })
	}
	require.NoError(t, RemoveXFiles(":8791"))
	for _, f := range files {
		require.NoFileExists(t, f)
	}
	require.NoError(t, RemoveXFiles(":8791"), "already gone")
	require.NoError(t, RemoveXFiles(""), "no display")
}
