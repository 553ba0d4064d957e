//go:build unix

package exact

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockBuild holds a lock on this machine that one guest build takes at a
// time, so that the test binaries go test ./... runs side by side (lab,
// lab/exact, lab/jobs, cmd/lab, lab/cluster, ...) do not each compile the
// whole lab to WebAssembly at once: the first builds, and the others then
// find its packages in the go command's cache. unlock releases it. Where
// the lock cannot be had, the build runs unlocked: it costs time, never a
// result.
func lockBuild() (unlock func()) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "latencylab-guest-build.lock"), os.O_CREATE|os.O_RDWR, 0o666)
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
