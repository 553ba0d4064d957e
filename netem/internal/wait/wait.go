// Package wait owns how the lab's in-memory conns (netem's PacketConn and
// streams, the relay's WebSocket link) block: a broadcast that wakes every
// goroutine waiting for a change of state guarded by a conn's mutex, sleeps
// bounded by a deadline, and the read and write deadlines themselves.
// Channels and timers only, so that a blocked goroutine is durably blocked
// inside a synctest bubble and the bubble's clock can move on.
package wait

import (
	"sync"
	"time"
)

// Signal wakes every goroutine waiting for a change of some state guarded
// by a mutex (new data, a deadline moved, a close). Waiters take the channel
// under the lock, release the lock and block on it; Broadcast, called under
// the lock, closes it. The zero value is ready to use.
type Signal struct{ ch chan struct{} }

// Wait returns the channel the next Broadcast closes. Call with the lock
// held.
func (s *Signal) Wait() <-chan struct{} {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Broadcast wakes all waiters. Call with the lock held.
func (s *Signal) Broadcast() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// Until blocks until changed is closed or the deadline passes; a zero
// deadline never passes. The caller then looks again at what it waits for.
func Until(changed <-chan struct{}, deadline time.Time) {
	if deadline.IsZero() {
		<-changed
		return
	}
	d := time.Until(deadline)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	}
}

// Passed reports whether a deadline is set and already past.
func Passed(deadline time.Time) bool {
	return !deadline.IsZero() && !time.Now().Before(deadline)
}

// Deadlines are a conn's read and write deadlines, with the setters of
// net.Conn. Mu and Changed are the conn's own mutex and signal: the mutex
// guards the deadlines together with the state the conn's readers wait for,
// so that a reader that found its deadline still ahead and went to sleep on
// Changed cannot miss the broadcast of the deadline's move.
type Deadlines struct {
	Mu      *sync.Mutex
	Changed *Signal
	// Read and Write are read under Mu.
	Read, Write time.Time
}

// SetDeadline sets both deadlines and wakes blocked readers.
func (d *Deadlines) SetDeadline(t time.Time) error { return d.set(t, true, true) }

// SetReadDeadline sets the read deadline and wakes blocked readers, which
// then time out or sleep until the new deadline.
func (d *Deadlines) SetReadDeadline(t time.Time) error { return d.set(t, true, false) }

// SetWriteDeadline sets the write deadline.
func (d *Deadlines) SetWriteDeadline(t time.Time) error { return d.set(t, false, true) }

// set moves the chosen deadlines. Writes of the conns that use Deadlines
// never block, so a moved write deadline alone has nobody to wake: writes
// check it as they start.
func (d *Deadlines) set(t time.Time, read, write bool) error {
	d.Mu.Lock()
	defer d.Mu.Unlock()
	if write {
		d.Write = t
	}
	if read {
		d.Read = t
		d.Changed.Broadcast()
	}
	return nil
}
