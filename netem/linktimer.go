package netem

import "time"

// preciseEarly is how long before a delivery a precise link wakes, to spin
// the rest: it covers the time the kernel and the scheduler take to run the
// link's goroutine after its timer fires (about 80 µs on a 2-vCPU VM).
const preciseEarly = 100 * time.Microsecond

// linkTimer is what a link's loop sleeps on.
type linkTimer interface {
	reset(time.Duration)
	stop()
	c() <-chan time.Time
	close()
}

type runtimeTimer struct{ t *time.Timer }

func newRuntimeTimer() linkTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return runtimeTimer{t}
}

func (r runtimeTimer) reset(d time.Duration) { r.t.Reset(d) }
func (r runtimeTimer) stop()                 { r.t.Stop() }
func (r runtimeTimer) c() <-chan time.Time   { return r.t.C }
func (r runtimeTimer) close()                { r.t.Stop() }
