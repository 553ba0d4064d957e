//go:build !linux

package record

import "syscall"

// procAttr puts a program in a process group of its own, so that stopping
// it stops what it started.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
