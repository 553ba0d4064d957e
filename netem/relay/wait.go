package relay

import "time"

// signal wakes every goroutine waiting for a change of state guarded by a
// mutex: waiters take the channel under the lock and block on it unlocked;
// broadcast, under the lock, closes it. Channels and timers only, so a
// blocked reader is durably blocked inside a synctest bubble.
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

// sleepUntil blocks until changed is closed or deadline passes; a zero
// deadline never passes.
func sleepUntil(changed <-chan struct{}, deadline time.Time) {
	if deadline.IsZero() {
		<-changed
		return
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	}
}

// deadlinePassed reports whether a deadline is set and already past.
func deadlinePassed(deadline time.Time) bool {
	return !deadline.IsZero() && !time.Now().Before(deadline)
}

// longAgo is a deadline that has passed, to wake a blocked read.
var longAgo = time.Unix(1, 0)
