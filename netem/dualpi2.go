package netem

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"time"
)

// The defaults of RFC 9332 (section 2.5 and appendix A).
const (
	DefaultDualPI2Target  = 15 * time.Millisecond
	DefaultDualPI2Update  = 16 * time.Millisecond
	DefaultDualPI2Alpha   = 0.16
	DefaultDualPI2Beta    = 3.2
	DefaultDualPI2K       = 2.0
	DefaultDualPI2Step    = time.Millisecond
	DefaultDualPI2Limit   = 10000
	defaultDualPI2TShift  = 2 * DefaultDualPI2Target
	dualPI2ClassicMaxProb = 0.25 // 1/k^2: above it the classic queue drops instead of marking
)

// DualPI2Params configure DualPI2 (the DualQ Coupled AQM of RFC 9332, for
// L4S). Zero fields take the RFC's defaults.
//
// Packets marked ECT(1) or CE go to the L4S queue, the others to the
// classic queue. A PI controller updates a base probability p' every
// Update from the larger of the two queues' head sojourn times, towards
// Target (gains Alpha and Beta per second of delay error and change). A
// classic packet is dropped (or marked, if ECN-capable) with p' squared;
// an L4S packet is marked with max(K x p', the native step: every packet
// whose sojourn is at least Step). The scheduler between the two is the
// RFC's time-shifted FIFO: the queue whose head arrived first, the L4S
// head's arrival counted TShift earlier (default twice Target), so that
// the L4S queue goes first without starving the classic one.
type DualPI2Params struct {
	Target, Update, Step, TShift time.Duration
	Alpha, Beta, K               float64
	// Limit bounds the packets of both queues (default 10000, or the
	// queue's packet limit).
	Limit int
}

// Validate refuses negative parameters.
func (c *DualPI2Params) Validate() error {
	if c.Target < 0 || c.Update < 0 || c.Step < 0 || c.TShift < 0 || c.Alpha < 0 || c.Beta < 0 || c.K < 0 || c.Limit < 0 {
		return fmt.Errorf("dualpi2 parameters must not be negative (0 means the RFC's default): %+v", *c)
	}
	return nil
}

// dualPI2 is DualPI2's state.
type dualPI2 struct {
	cfg        DualPI2Params
	l, c       []aqmPacket
	p          float64 // p', the base probability
	prevq      time.Duration
	nextUpdate time.Time
	rng        *rand.Rand
	dropped    []*Packet
	overflow   []*Packet
	marked     int
	// counters for tests and reports: packets dequeued from each queue,
	// and the classic drops and L4S marks
	lOut, cOut, cSignal, lSignal int
}

func newDualPI2(cfg DualPI2Params, rng *rand.Rand) *dualPI2 {
	cfg.Target = cmp.Or(cfg.Target, DefaultDualPI2Target)
	cfg.Update = cmp.Or(cfg.Update, DefaultDualPI2Update)
	cfg.Step = cmp.Or(cfg.Step, DefaultDualPI2Step)
	cfg.TShift = cmp.Or(cfg.TShift, 2*cfg.Target)
	cfg.Alpha = cmp.Or(cfg.Alpha, DefaultDualPI2Alpha)
	cfg.Beta = cmp.Or(cfg.Beta, DefaultDualPI2Beta)
	cfg.K = cmp.Or(cfg.K, DefaultDualPI2K)
	cfg.Limit = cmp.Or(cfg.Limit, DefaultDualPI2Limit)
	if rng == nil {
		rng = rand.New(rand.NewPCG(9332, 9332))
	}
	return &dualPI2{cfg: cfg, rng: rng}
}

func (d *dualPI2) enqueue(p *Packet, now time.Time) {
	if len(d.l)+len(d.c) >= d.cfg.Limit {
		d.overflow = append(d.overflow, p)
		return
	}
	e := aqmPacket{p: p, arrive: now}
	if p.ECN == ECT1 || p.ECN == CE {
		d.l = append(d.l, e)
	} else {
		d.c = append(d.c, e)
	}
}

// update runs the PI controller for every update instant up to now.
func (d *dualPI2) update(now time.Time) {
	if d.nextUpdate.IsZero() {
		d.nextUpdate = now.Add(d.cfg.Update)
		return
	}
	for !d.nextUpdate.After(now) {
		curq := max(d.headSojourn(d.l, d.nextUpdate), d.headSojourn(d.c, d.nextUpdate))
		d.p += d.cfg.Alpha*(curq-d.cfg.Target).Seconds() + d.cfg.Beta*(curq-d.prevq).Seconds()
		d.p = min(max(d.p, 0), 1)
		d.prevq = curq
		d.nextUpdate = d.nextUpdate.Add(d.cfg.Update)
		if len(d.l)+len(d.c) == 0 && d.p == 0 {
			// Idle: nothing changes until a packet comes.
			d.nextUpdate = time.Time{}
			return
		}
	}
}

func (d *dualPI2) headSojourn(q []aqmPacket, now time.Time) time.Duration {
	if len(q) == 0 || q[0].arrive.After(now) {
		return 0
	}
	return now.Sub(q[0].arrive)
}

// dequeue is RFC 9332's dequeue with the time-shifted FIFO scheduler.
func (d *dualPI2) dequeue(now time.Time) (*Packet, time.Duration) {
	d.update(now)
	for len(d.l)+len(d.c) > 0 {
		fromL := len(d.c) == 0 ||
			(len(d.l) > 0 && !d.l[0].arrive.Add(-d.cfg.TShift).After(d.c[0].arrive))
		if fromL {
			e := d.l[0]
			d.l = d.l[1:]
			d.lOut++
			sojourn := now.Sub(e.arrive)
			pL := min(d.cfg.K*d.p, 1)
			if sojourn >= d.cfg.Step || d.rng.Float64() < pL {
				if e.p.ECN != CE {
					e.p.ECN = CE
					d.marked++
				}
				d.lSignal++
			}
			return e.p, sojourn
		}
		e := d.c[0]
		d.c = d.c[1:]
		d.cOut++
		sojourn := now.Sub(e.arrive)
		// p' squared, drawn as max of two draws (RFC 9332 A.1).
		if d.p > max(d.rng.Float64(), d.rng.Float64()) {
			d.cSignal++
			if e.p.ECN.Capable() && d.p*d.p <= dualPI2ClassicMaxProb {
				e.p.ECN = CE
				d.marked++
				return e.p, sojourn
			}
			d.dropped = append(d.dropped, e.p)
			continue
		}
		return e.p, sojourn
	}
	return nil, 0
}

func (d *dualPI2) drops() (overflow, aqm []*Packet) {
	overflow, aqm = d.overflow, d.dropped
	d.overflow, d.dropped = nil, nil
	return overflow, aqm
}

func (d *dualPI2) marks() int { return d.marked }

func (d *dualPI2) drain() []*Packet {
	var out []*Packet
	for _, q := range [][]aqmPacket{d.l, d.c} {
		for _, e := range q {
			out = append(out, e.p)
		}
	}
	d.l, d.c = nil, nil
	return out
}
