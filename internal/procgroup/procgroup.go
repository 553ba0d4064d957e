// Package procgroup runs the programs the lab starts beside itself (X
// servers, VNC servers, the applications lab record drives) each in a
// process group of its own, so that stopping one stops whatever it
// started too (bash in an xterm, a browser's renderers), and stops such a
// group.
package procgroup

import (
	"syscall"
	"time"
)

// Grace is how long Stop waits for a group asked to end before it kills
// it.
const Grace = time.Second

// Stop ends the group whose leader is pid and waits for the leader's end
// (done): it sends the group first (SIGTERM to let an X server remove its
// socket and lock file; SIGKILL for a group that may be stopped, which
// SIGTERM would not end), and SIGKILL after Grace if the leader has not
// ended by then.
func Stop(pid int, done <-chan struct{}, first syscall.Signal) {
	_ = syscall.Kill(-pid, first)
	select {
	case <-done:
	case <-time.After(Grace):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-done
	}
}
