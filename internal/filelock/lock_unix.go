//go:build unix

package filelock

import (
	"os"
	"syscall"
)

// Lock holds an exclusive lock on the file at path, created if need be,
// until unlock is called. Where the lock cannot be had, it returns at
// once, unlocked: its users take it to save work, never for a result.
func Lock(path string) (unlock func()) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
