//go:build !linux

package procgroup

import "syscall"

// Attr puts a program in a process group of its own.
func Attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
