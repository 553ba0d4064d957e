package netem

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// newLinkTimer returns a runtime timer, or for a precise link a timerfd.
func newLinkTimer(precise bool) linkTimer {
	if precise {
		if t, err := newTimerfd(); err == nil {
			return t
		}
	}
	return newRuntimeTimer()
}

// timerfd is a kernel hrtimer read by a goroutine parked in the runtime's
// poller: epoll wakes at its expiry, with no millisecond rounding and no P
// held while waiting.
type timerfd struct {
	fd   int
	f    *os.File
	ch   chan time.Time
	done sync.WaitGroup
}

func newTimerfd() (*timerfd, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	t := &timerfd{fd: fd, f: os.NewFile(uintptr(fd), "timerfd"), ch: make(chan time.Time, 1)}
	t.done.Add(1)
	go t.run()
	return t, nil
}

func (t *timerfd) run() {
	defer t.done.Done()
	var buf [8]byte
	for {
		if _, err := t.f.Read(buf[:]); err != nil {
			return // closed
		}
		select {
		case t.ch <- time.Now():
		default:
		}
	}
}

func (t *timerfd) reset(d time.Duration) {
	d = max(d, 1) // a zero value would disarm it
	_ = unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}, nil)
}

func (t *timerfd) stop() {
	_ = unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{}, nil)
	select {
	case <-t.ch:
	default:
	}
}

func (t *timerfd) c() <-chan time.Time { return t.ch }

func (t *timerfd) close() {
	t.f.Close()
	t.done.Wait()
}
