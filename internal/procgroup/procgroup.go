// Package procgroup runs the programs the lab starts beside itself (X
// servers, VNC servers, the applications lab record drives) each in a
// process group of its own, so that stopping one stops whatever it
// started too (bash in an xterm, a browser's renderers), and stops such a
// group.
package procgroup

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Grace is how long Stop waits for a group asked to end before it kills
// it.
const Grace = time.Second

// Stop ends the group of the started cmd and waits for cmd's end (done,
// closed once cmd.Wait returned): it sends the group first (SIGTERM to let
// an X server remove its socket and lock file; SIGKILL for a group that
// may be stopped, which SIGTERM would not end), and SIGKILL after Grace if
// cmd has not ended by then. killed tells whether cmd ended by SIGKILL,
// this one or any earlier: an X server killed leaves its files behind
// (RemoveXFiles).
func Stop(cmd *exec.Cmd, done <-chan struct{}, first syscall.Signal) (killed bool) {
	pid := cmd.Process.Pid
	_ = syscall.Kill(-pid, first)
	select {
	case <-done:
	case <-time.After(Grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// RemoveXFiles removes the socket and lock file of display (":N") that an
// X server killed left behind. Only for a server that was killed: one that
// ended cleanly removed its own, and by now the display may be another
// server's, whose files these would be.
func RemoveXFiles(display string) error {
	n := strings.TrimPrefix(display, ":")
	if n == "" {
		return nil
	}
	var errs []error
	for _, f := range []string{"/tmp/.X11-unix/X" + n, "/tmp/.X" + n + "-lock"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
