package netem

import (
	"os"
	"time"
)

// signal wakes every goroutine waiting for a change of some state guarded by
// a mutex (new data, a deadline moved, a close). Waiters take the channel
// under the lock, release the lock and block on it; broadcast, called under
// the lock, closes it. Channels and timers only: safe in a synctest bubble.
type signal struct{ ch chan struct{} }

// wait returns the channel the next broadcast closes. Call with the lock held.
func (s *signal) wait() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// broadcast wakes all waiters. Call with the lock held.
func (s *signal) broadcast() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// sleepUntil blocks until changed is closed or the deadline passes (a zero
// deadline never passes). It reports whether the deadline passed.
func sleepUntil(changed <-chan struct{}, deadline time.Time) bool {
	if deadline.IsZero() {
		<-changed
		return false
	}
	d := time.Until(deadline)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
		return false
	case <-t.C:
		return true
	}
}

// deadlinePassed reports whether a deadline is set and already past.
func deadlinePassed(deadline time.Time) bool {
	return !deadline.IsZero() && !time.Now().Before(deadline)
}

// errTimeout is what blocked calls return when their deadline passes; it
// wraps os.ErrDeadlineExceeded and is a net.Error whose Timeout() is true.
var errTimeout error = os.ErrDeadlineExceeded
