package netem

import (
	"fmt"
	"math"
	"time"
)

// The defaults of RFC 8289, section 4.
const (
	// DefaultCoDelTarget is the sojourn time CoDel tolerates persistently.
	DefaultCoDelTarget = 5 * time.Millisecond
	// DefaultCoDelInterval is how long the sojourn time must stay above
	// target before CoDel drops, on the order of a worst-case RTT.
	DefaultCoDelInterval = 100 * time.Millisecond
)

// CoDelParams configure CoDel (RFC 8289) on a bottleneck queue. Zero fields
// take the RFC's defaults.
//
// CoDel drops at the head of the queue, when a packet is taken to be sent:
// once the time packets spend in the queue (their sojourn time) has stayed
// above Target for Interval, it drops one packet, then more and more often
// (Interval/sqrt(count) apart) until the sojourn time goes below Target.
//
// Because the queue is a FIFO whose fates are decided when packets arrive,
// each packet's dequeue instant is known on arrival, and CoDel's decision is
// made then with "now" set to that instant; it is the same decision the RFC's
// dequeue routine would take, with one exception: the RFC does not drop while
// the queue holds at most one MTU behind the packet, which depends on packets
// that have not arrived yet, so that exemption is not applied. On very slow
// links, where one packet takes longer than Target to send, raise Target
// (as the RFC also advises).
type CoDelParams struct {
	// Target is the acceptable standing queue delay. Default 5 ms.
	Target time.Duration
	// Interval is the window over which the minimum sojourn time must stay
	// above Target before dropping starts. Default 100 ms.
	Interval time.Duration
}

// Validate refuses negative durations and a target that is not below the
// interval (CoDel could then never see a standing queue end).
func (c *CoDelParams) Validate() error {
	if c.Target < 0 {
		return fmt.Errorf("codel target %v is negative (0 means %v)", c.Target, DefaultCoDelTarget)
	}
	if c.Interval < 0 {
		return fmt.Errorf("codel interval %v is negative (0 means %v)", c.Interval, DefaultCoDelInterval)
	}
	if t, i := c.target(), c.interval(); t >= i {
		return fmt.Errorf("codel target %v must be below its interval %v", t, i)
	}
	return nil
}

func (c *CoDelParams) target() time.Duration {
	if c.Target == 0 {
		return DefaultCoDelTarget
	}
	return c.Target
}

func (c *CoDelParams) interval() time.Duration {
	if c.Interval == 0 {
		return DefaultCoDelInterval
	}
	return c.Interval
}

// codelPending says what the RFC's dequeue routine was doing when it took the
// previous packet, since its decision for the next one depends on it.
type codelPending int

const (
	// codelIdle: the previous packet was sent; the next one starts a new
	// dequeue call.
	codelIdle codelPending = iota
	// codelInLoop: the previous packet was dropped inside the drop-state
	// loop, which now looks at the next packet at the same instant.
	codelInLoop
	// codelEntering: the previous packet was the drop that entered the drop
	// state; the next packet is sent whatever its sojourn time, and the
	// control law is set up at the drop's instant.
	codelEntering
)

// codelState is the per-queue state of RFC 8289 section 5.
type codelState struct {
	firstAbove time.Time // when the sojourn time will have been above target for an interval; zero if below
	dropNext   time.Time // when the next drop is due in the drop state
	count      int       // drops since entering the drop state
	lastCount  int       // count when the drop state was last entered
	dropping   bool
	pending    codelPending
	pendingAt  time.Time // the instant of the drop that left pending == codelEntering
}

// controlLaw spaces drops Interval/sqrt(count) apart: TCP's throughput goes
// as 1/sqrt(drop rate), so this ramps the drop rate up linearly in effect.
func (c *codelState) controlLaw(t time.Time, p *CoDelParams) time.Time {
	return t.Add(time.Duration(float64(p.interval()) / math.Sqrt(float64(c.count))))
}

// check is the RFC's dodequeue test for a packet taken at now after waiting
// sojourn: whether the sojourn time has been above target for an interval.
func (c *codelState) check(p *CoDelParams, now time.Time, sojourn time.Duration) bool {
	if sojourn < p.target() {
		c.firstAbove = time.Time{}
		return false
	}
	if c.firstAbove.IsZero() {
		c.firstAbove = now.Add(p.interval())
		return false
	}
	return !now.Before(c.firstAbove)
}

// enter starts the drop state at now. If the previous drop state ended
// recently, its drop rate is a good start (the Linux variant the RFC gives).
func (c *codelState) enter(p *CoDelParams, now time.Time) {
	c.dropping = true
	delta := c.count - c.lastCount
	c.count = 1
	if delta > 1 && now.Sub(c.dropNext) < 16*p.interval() {
		c.count = delta
	}
	c.dropNext = c.controlLaw(now, p)
	c.lastCount = c.count
}

// empty records that the server found the queue empty when it tried to take
// a packet: the RFC's dodequeue on an empty queue resets the above-target
// timer and ends the drop state (immediately, or at the next dequeue, which
// cannot find a sojourn time above target for an interval right after the
// reset). Calling it again before the next packet changes nothing.
func (c *codelState) empty(p *CoDelParams) {
	c.firstAbove = time.Time{}
	if c.pending == codelEntering {
		// The drop that entered the drop state emptied the queue: the
		// control law is still set up, at the drop's instant.
		c.enter(p, c.pendingAt)
	}
	c.dropping = false
	c.pending = codelIdle
}

// dequeue decides whether the packet taken from the queue at now, after
// waiting sojourn, is dropped. It follows the RFC's dequeue routine one packet
// at a time; pending carries where that routine was between packets.
//
// When the packet is ECN-capable (ecn), a drop becomes a CE mark, as Linux's
// CoDel does and RFC 8290 section 5 asks: the mark counts for the control
// law as the drop would, and since the packet is sent rather than dropped,
// the routine returns it at once instead of looking at the next packet.
func (c *codelState) dequeue(p *CoDelParams, now time.Time, sojourn time.Duration, ecn bool) (drop, mark bool) {
	ok := c.check(p, now, sojourn)
	switch c.pending {
	case codelInLoop:
		// Inside "while now >= drop_next && dropping": the previous
		// packet was dropped and this one was dequeued at the same now.
		if !ok {
			c.dropping = false
			c.pending = codelIdle
			return false, false
		}
		c.dropNext = c.controlLaw(c.dropNext, p)
		if !now.Before(c.dropNext) {
			c.count++
			if ecn {
				c.dropNext = c.controlLaw(c.dropNext, p)
				c.pending = codelIdle
				return false, true
			}
			return true, false // still codelInLoop
		}
		c.pending = codelIdle
		return false, false
	case codelEntering:
		// The packet after the drop that entered the drop state is sent;
		// its check above only updated the above-target timer.
		c.enter(p, c.pendingAt)
		c.pending = codelIdle
		return false, false
	}
	if c.dropping {
		if !ok {
			c.dropping = false // sojourn time went below target
			return false, false
		}
		if !now.Before(c.dropNext) {
			c.count++
			if ecn {
				c.dropNext = c.controlLaw(c.dropNext, p)
				return false, true
			}
			c.pending = codelInLoop
			return true, false
		}
		return false, false
	}
	if ok {
		if ecn {
			c.enter(p, now)
			return false, true
		}
		c.pending = codelEntering
		c.pendingAt = now
		return true, false
	}
	return false, false
}
