//go:build unix

package testbin

import (
	"os"
	"syscall"
)

// lock holds an exclusive lock on the file at path until unlock is
// called: one build of a binary at a time on this machine, so that a
// second caller finds the first one's binary up to date rather than
// linking it again beside it. Where the lock cannot be had, the build
// runs unlocked: that costs time, never a result, since the go command
// removes its old output before it writes the new one (or renames a
// finished file over it), which leaves the callers' hard links whole.
func lock(path string) (unlock func()) {
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
