package kernel

import (
	"os/exec"
	"runtime"
)

// StartPinned starts cmd from a goroutine locked to its OS thread until
// cmd ends, and returns a channel closed once it has ended (cmd's
// ProcessState is then set). The parent-death signal (SysProcAttr's
// Pdeathsig) follows the thread that started the child, not the process,
// and this package's namespace switches end the threads they leave
// locked: a program started from such a thread would be killed with it,
// at a moment no one chose. Every program a kernel-mode process starts
// with a parent-death signal goes through here.
func StartPinned(cmd *exec.Cmd) (<-chan struct{}, error) {
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread() // never switched anywhere: the thread may be reused
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait() // how the program ended is the caller's business (cmd.ProcessState)
		close(done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return done, nil
}
