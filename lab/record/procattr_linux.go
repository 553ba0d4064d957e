//go:build linux

package record

import "syscall"

// procAttr puts a program in a process group of its own, so that stopping
// it stops what it started, and kills it when the thread that started it
// (and so, almost always, this process) dies: an interrupted lab record
// leaves no X server or browser behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
