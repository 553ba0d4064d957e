//go:build linux

package vnc

import "syscall"

// serverProcAttr puts a server in a process group of its own, so that
// Close stops it and whatever it started, and kills it when the thread
// that started it (and so, almost always, this process) dies.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
