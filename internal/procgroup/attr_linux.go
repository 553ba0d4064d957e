//go:build linux

package procgroup

import "syscall"

// Attr puts a program in a process group of its own, and kills it when
// the thread that started it (and so, almost always, this process) dies:
// an interrupted lab leaves no X server, VNC server or browser behind.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
