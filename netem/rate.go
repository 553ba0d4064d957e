package netem

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

func init() { Register("rate", func() Impairment { return &Rate{} }) }

// Rate is a bottleneck of fixed capacity, like tc netem's "rate" or a
// token-bucket shaper with no burst: packets are serialised one after the
// other at Rate bits per second, waiting in a FIFO queue bounded by Queue. A
// packet leaves the bottleneck when its last bit has been serialised.
//
// On a parameter change (Link.Set or a timeline phase) a new Rate takes over
// the previous one's queue and the instant its server becomes free, so the
// backlog survives: packets already queued keep their fate and new ones queue
// behind them at the new rate, under the new limits.
type Rate struct {
	// Rate is the capacity in bits per second. It must be positive.
	Rate int64
	// Overhead is added to every packet's size for serialisation only (the
	// queue limits and the counters use the packet's own size): for example
	// 28 for the IPv4 and UDP headers around a datagram's payload, or more
	// for link-layer framing. Default 0.
	Overhead int
	// Queue bounds the queue in front of the bottleneck. The zero value is
	// unlimited.
	Queue QueueLimit

	q     fifo
	sched schedState
	srv   rateServer
}

// Kind implements Impairment.
func (*Rate) Kind() string { return "rate" }

// Stage implements Impairment.
func (*Rate) Stage() Stage { return StageBottleneck }

// Validate refuses a rate that is not positive, a negative overhead and bad
// queue limits.
func (r *Rate) Validate() error {
	var errs []error
	if r.Rate <= 0 {
		errs = append(errs, fmt.Errorf("rate %d bit/s must be positive", r.Rate))
	}
	if r.Overhead < 0 {
		errs = append(errs, fmt.Errorf("overhead %d bytes is negative", r.Overhead))
	}
	if err := r.Queue.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Apply implements Impairment.
func (r *Rate) Apply(p *Packet, at time.Time, env *Env) Verdict {
	r.srv.bps = r.Rate
	if r.sched.active(&r.Queue) {
		return r.sched.offer(&r.Queue, p, at, &r.srv, env.Rand)
	}
	return r.q.offer(&r.Queue, p, at, p.Size()+r.Overhead, &r.srv, env)
}

// Next implements Scheduler.
func (r *Rate) Next() time.Time { return r.sched.next }

// Release implements Scheduler.
func (r *Rate) Release(now time.Time, out []Released) []Released {
	r.srv.bps = r.Rate
	return r.sched.release(now, &r.srv, r.Overhead, out)
}

// Drain implements Scheduler.
func (r *Rate) Drain() []*Packet { return r.sched.drain() }

// Inherit takes over the queue of the Rate this one replaces, so that a rate
// change does not empty the bottleneck.
func (r *Rate) Inherit(prev Impairment) {
	pr, ok := prev.(*Rate)
	if !ok {
		if pt, ok := prev.(*TraceLink); ok { // the queue survives a switch of kind
			r.q.takeOver(&pt.q)
			r.srv.free = r.q.lastFinish
		}
		return
	}
	r.q.takeOver(&pr.q)
	r.sched, pr.sched = pr.sched, schedState{}
	r.srv.free = pr.srv.free
	// The sub-nanosecond remainder counts in units of the old rate.
	r.srv.rem = 0
}

// Backlog implements Backlogger: the packets queued or being serialised.
func (r *Rate) Backlog(now time.Time) (packets, bytes int) {
	packets, bytes = r.q.backlog(now)
	return packets + r.sched.held, bytes + r.sched.bytes
}

// rateServer serialises packets back to back at a fixed rate.
type rateServer struct {
	bps  int64
	free time.Time // when the last packet's last bit is sent
	// rem is what the last serialisation time lost to rounding down to a
	// nanosecond, in units of 1/bps ns. Carrying it on keeps a long busy
	// period exactly at the rate instead of drifting by up to 1 ns a packet.
	rem uint64
}

func (s *rateServer) start(a time.Time) time.Time {
	if s.free.After(a) {
		return s.free
	}
	return a
}

func (s *rateServer) serve(start time.Time, n int) time.Time {
	s.free = start.Add(s.duration(n))
	return s.free
}

func (s *rateServer) ready() time.Time { return s.free }

// duration is the time n bytes take at the rate, computed in 128 bits so
// that neither a huge packet nor a tiny rate overflows.
func (s *rateServer) duration(n int) time.Duration {
	hi, lo := bits.Mul64(uint64(n)*8, uint64(time.Second))
	var carry uint64
	lo, carry = bits.Add64(lo, s.rem, 0)
	hi += carry
	bps := uint64(s.bps)
	if hi >= bps { // more than 2^64 ns: longer than any run
		s.rem = 0
		return math.MaxInt64
	}
	quo, rem := bits.Div64(hi, lo, bps)
	s.rem = rem
	if quo > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(quo)
}
