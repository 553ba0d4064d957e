//go:build !linux

package vnc

import "syscall"

// serverProcAttr puts a server in a process group of its own, so that
// Close stops it and whatever it started.
func serverProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
