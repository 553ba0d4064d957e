package netem

import (
	"math/rand/v2"
	"time"
)

// Scheduler is implemented by a bottleneck whose queue lets a later packet
// overtake an earlier one (FQ-CoDel, CAKE, DualPI2): a packet's departure depends on what
// arrives after it, so it cannot be decided on arrival. Apply holds such a
// packet (Verdict.Held) and the link takes packets out with Release when
// the server is free to send them.
type Scheduler interface {
	// Next is the instant the server next takes a packet from the queue;
	// zero when the queue holds nothing.
	Next() time.Time
	// Release appends to out the packets whose sending starts at or
	// before now, each with the instant its last byte leaves, and those
	// the queue dropped since the last call.
	Release(now time.Time, out []Released) []Released
	// Drain empties the queue, returning what it held (the link closes).
	Drain() []*Packet
}

// Released is a packet a Scheduler let go, or dropped (Drop not empty).
type Released struct {
	Packet *Packet
	// At is when its last byte leaves the bottleneck; Queued the time it
	// waited; Marked whether the queue marked it CE.
	At     time.Time
	Queued time.Duration
	Marked bool
	Drop   DropReason
}

// schedQueue is a scheduling queue's algorithm: what it holds, in the
// order it chooses.
type schedQueue interface {
	enqueue(p *Packet, now time.Time)
	// dequeue takes the next packet to send at now and the time it
	// waited; nil when it holds nothing.
	dequeue(now time.Time) (*Packet, time.Duration)
	// drops returns and forgets the packets dropped since the last call:
	// on overflow, and by the active queue management.
	drops() (overflow, aqm []*Packet)
	// marks counts the packets marked CE so far.
	marks() int
	drain() []*Packet
}

// scheduling reports whether the queue's discipline is a scheduling queue.
func (l *QueueLimit) scheduling() bool { return l.FQCoDel != nil || l.Cake != nil || l.DualPI2 != nil }

// schedState is a bottleneck's scheduling queue in front of its server.
type schedState struct {
	q           schedQueue
	aqmDrop     DropReason
	next        time.Time // when the server next takes a packet; zero: nothing held
	held, bytes int
}

// active reports whether packets go through the scheduling queue: the
// limits ask for one, or it still holds packets from a phase that did
// (they leave first).
func (s *schedState) active(lim *QueueLimit) bool { return lim.scheduling() || s.held > 0 }

// offer holds p, arriving at at, in the queue.
func (s *schedState) offer(lim *QueueLimit, p *Packet, at time.Time, srv bottleneckServer, rng *rand.Rand) Verdict {
	switch {
	case s.q != nil:
	case lim.FQCoDel != nil:
		s.q, s.aqmDrop = newFQCoDel(lim.fqLimits(*lim.FQCoDel)), DropCoDel
	case lim.Cake != nil:
		c := *lim.Cake
		c.FQCoDelParams = lim.fqLimits(c.FQCoDelParams)
		s.q, s.aqmDrop = newCake(c), DropCoDel
	default:
		c := *lim.DualPI2
		if c.Limit == 0 && lim.Packets > 0 {
			c.Limit = lim.Packets
		}
		s.q, s.aqmDrop = newDualPI2(c, rng), DropDualPI2
	}
	s.q.enqueue(p, at)
	s.held++
	s.bytes += p.Size()
	if s.next.IsZero() {
		s.next = srv.start(at)
	}
	return Verdict{Held: true}
}

// fqLimits are c with the queue's packet and byte limits where c leaves
// its own out.
func (l *QueueLimit) fqLimits(c FQCoDelParams) FQCoDelParams {
	if c.Limit == 0 && l.Packets > 0 {
		c.Limit = l.Packets
	}
	if c.Memory == 0 && l.Bytes > 0 {
		c.Memory = l.Bytes
	}
	return c
}

// release lets go what the server takes by now.
func (s *schedState) release(now time.Time, srv bottleneckServer, overhead int, out []Released) []Released {
	if s.q == nil {
		return out
	}
	out = s.collect(out)
	for !s.next.IsZero() && !s.next.After(now) {
		m := s.q.marks()
		p, wait := s.q.dequeue(s.next)
		out = s.collect(out)
		if p == nil {
			s.next = time.Time{}
			break
		}
		s.held--
		s.bytes -= p.Size()
		f := srv.serve(s.next, p.Size()+overhead)
		out = append(out, Released{Packet: p, At: f, Queued: wait, Marked: s.q.marks() != m})
		s.next = f
	}
	return out
}

func (s *schedState) collect(out []Released) []Released {
	overflow, aqm := s.q.drops()
	for _, d := range []struct {
		ps     []*Packet
		reason DropReason
	}{{overflow, DropQueue}, {aqm, s.aqmDrop}} {
		for _, p := range d.ps {
			out = append(out, Released{Packet: p, Drop: d.reason})
			s.held--
			s.bytes -= p.Size()
		}
	}
	return out
}

func (s *schedState) drain() []*Packet {
	if s.q == nil {
		return nil
	}
	out := s.q.drain()
	s.held, s.bytes, s.next = 0, 0, time.Time{}
	return out
}
