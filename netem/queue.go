package netem

import (
	"errors"
	"fmt"
	"time"
)

// QueueLimit bounds the FIFO queue in front of a bottleneck (rate or trace).
// Its zero value is an unlimited drop-tail queue. The limits count what is in
// the bottleneck: packets waiting and the packet being sent, as a router's
// buffer holds a packet until its last bit is on the wire. Any combination of
// limits may be set; a packet that breaks any of them is dropped on arrival
// (DropQueue), the others still get in.
type QueueLimit struct {
	// Bytes bounds the bytes in the queue (packet sizes as the link counts
	// them, without a rate's Overhead). 0 is unlimited.
	Bytes int
	// Packets bounds the number of packets in the queue. 0 is unlimited.
	Packets int
	// Delay bounds the time a packet would wait before being sent: one that
	// would wait longer is dropped on arrival, so no packet ever waits more.
	// It models a buffer sized in time, as mobile networks often are.
	// 0 is unlimited.
	Delay time.Duration
	// CoDel, when set, adds CoDel active queue management (RFC 8289) on top
	// of the limits above.
	CoDel *CoDelParams
	// PIE, when set, adds PIE active queue management (RFC 8033) on top of
	// the limits above.
	PIE *PIEParams
	// FQCoDel, when set, replaces the FIFO by FQ-CoDel (RFC 8290): flow
	// queues served in turn, each under CoDel. Packets bounds the whole
	// (when FQCoDel.Limit is 0) and Bytes its bytes waiting (when
	// FQCoDel.Memory is 0; the packet being sent has left it); the delay
	// limit does not apply. Only a rate has it.
	FQCoDel *FQCoDelParams
	// Cake, when set, replaces the FIFO by the CAKE-like queue: FQ-CoDel
	// with CAKE's host isolation (CakeParams), bounded as FQCoDel is.
	// Only a rate has it.
	Cake *CakeParams
	// DualPI2, when set, replaces the FIFO by DualPI2 (RFC 9332): an L4S
	// queue and a classic one under a coupled PI controller. Packets
	// bounds both (when DualPI2.Limit is 0); the byte and delay limits do
	// not apply. Only a rate has it. At most one of CoDel, PIE, FQCoDel,
	// Cake and DualPI2.
	DualPI2 *DualPI2Params
}

// Validate refuses negative limits and CoDel parameters that make no sense.
func (l *QueueLimit) Validate() error {
	var errs []error
	if l.Bytes < 0 {
		errs = append(errs, fmt.Errorf("queue byte limit %d is negative (0 means unlimited)", l.Bytes))
	}
	if l.Packets < 0 {
		errs = append(errs, fmt.Errorf("queue packet limit %d is negative (0 means unlimited)", l.Packets))
	}
	if l.Delay < 0 {
		errs = append(errs, fmt.Errorf("queue delay limit %v is negative (0 means unlimited)", l.Delay))
	}
	if l.CoDel != nil {
		if err := l.CoDel.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.PIE != nil {
		if err := l.PIE.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	n := 0
	for _, set := range []bool{l.CoDel != nil, l.PIE != nil, l.FQCoDel != nil, l.Cake != nil, l.DualPI2 != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, errors.New("a queue has one of CoDel, PIE, FQ-CoDel, CAKE and DualPI2"))
	}
	if l.FQCoDel != nil {
		if err := l.FQCoDel.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.Cake != nil {
		if err := l.Cake.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.DualPI2 != nil {
		if err := l.DualPI2.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if l.scheduling() && l.Delay > 0 {
		errs = append(errs, errors.New("FQ-CoDel's, CAKE's and DualPI2's queues have no delay limit"))
	}
	if l.DualPI2 != nil && l.Bytes > 0 {
		errs = append(errs, errors.New("DualPI2's queue is bounded in packets only"))
	}
	return errors.Join(errs...)
}

// bottleneckServer is what drains a bottleneck's queue: a fixed rate or a
// trace of delivery opportunities. The queue asks it when a packet can start
// and commits the packets it sends, in FIFO order.
type bottleneckServer interface {
	// start returns the instant a packet that arrived at a, once it is at
	// the head of the queue, starts being sent: the server's first chance
	// at or after both a and the end of the previous packet. It commits
	// nothing (but may forget chances that passed before a: they are lost
	// whatever comes next).
	start(a time.Time) time.Time
	// serve commits a packet of n bytes whose sending starts at s (as
	// returned by start) and returns the instant its last byte has left.
	serve(s time.Time, n int) time.Time
	// ready is the instant the server next asks the queue for a packet:
	// when it finds the queue empty then, CoDel resets.
	ready() time.Time
}

// queued is one packet in a bottleneck queue, from its arrival until it
// leaves: when its last byte is sent, or when CoDel drops it at the head.
type queued struct {
	arrive, leave time.Time
	size          int
}

// fifo is the state of a bottleneck's FIFO queue. Because packets leave in
// the order they came, each packet's fate is decided when it arrives, like tc
// netem's time_to_send: the queue keeps only when each packet present will
// leave, which is enough to apply the limits to later arrivals.
type fifo struct {
	entries []queued // in arrival order; leave instants never decrease
	head    int      // entries[:head] have left and are reused on compaction
	bytes   int      // sum of entries[head:].size
	// nextDeq is the instant the server next takes a packet from the queue:
	// its next chance after the last packet sent, or, after a CoDel drop,
	// the drop instant (CoDel takes the next packet at once).
	nextDeq time.Time
	// lastFinish is when the last packet sent left, kept so that a
	// different server taking over the queue starts after it.
	lastFinish time.Time
	codel      codelState
	pie        pieState
}

// purge forgets the packets that have left by now.
func (q *fifo) purge(now time.Time) {
	for q.head < len(q.entries) && !q.entries[q.head].leave.After(now) {
		q.bytes -= q.entries[q.head].size
		q.head++
	}
	if q.head == len(q.entries) {
		q.entries = q.entries[:0]
		q.head = 0
	} else if q.head > 64 && q.head*2 > len(q.entries) {
		// Compact so the slice does not grow forever under a steady flow;
		// copying half the slice every time half of it has left is
		// amortised constant time per packet.
		n := copy(q.entries, q.entries[q.head:])
		q.entries = q.entries[:n]
		q.head = 0
	}
}

// offer decides the fate of packet p arriving at a, which the server carries
// as wire bytes (its size plus overhead): tail drop by the limits, then the
// wait for the server, then CoDel at the instant the packet would be taken
// from the queue. A packet CoDel drops takes no service, so the server is
// only committed for packets that are sent. Where CoDel would drop an
// ECN-capable packet it marks it CE instead, and the packet is sent.
func (q *fifo) offer(lim *QueueLimit, p *Packet, a time.Time, wire int, srv bottleneckServer, env *Env) Verdict {
	size := p.Size()
	q.purge(a)
	if lim.CoDel != nil && !a.Before(q.nextDeq) {
		// The server found the queue empty at its last attempt to take a
		// packet, before this one arrived.
		q.codel.empty(lim.CoDel)
	}
	n := len(q.entries) - q.head
	if lim.Packets > 0 && n+1 > lim.Packets {
		return Verdict{Drop: DropQueue}
	}
	if lim.Bytes > 0 && q.bytes+size > lim.Bytes {
		return Verdict{Drop: DropQueue}
	}
	marked := false
	if lim.PIE != nil {
		q.pie.tick(lim.PIE, env.Epoch, a, q.drain)
		drop, mark := q.pie.decide(lim.PIE, q.bytes, p.ECN.Capable(), env.Rand)
		if drop {
			return Verdict{Drop: DropPIE}
		}
		if mark {
			p.ECN = CE
			marked = true
		}
	}
	s := srv.start(a)
	wait := s.Sub(a)
	if lim.Delay > 0 && wait > lim.Delay {
		return Verdict{Drop: DropQueue}
	}
	if lim.CoDel != nil {
		drop, mark := q.codel.dequeue(lim.CoDel, s, wait, p.ECN.Capable())
		if drop {
			q.push(queued{arrive: a, leave: s, size: size})
			q.nextDeq = s
			return Verdict{Drop: DropCoDel}
		}
		if mark {
			p.ECN = CE
			marked = true
		}
	}
	f := srv.serve(s, wire)
	q.push(queued{arrive: a, leave: f, size: size})
	q.nextDeq = srv.ready()
	q.lastFinish = f
	return Verdict{At: f, Queued: wait, Marked: marked}
}

// drain is the queue delay at t, no earlier than the last arrival: how long
// the server takes to send what has arrived.
func (q *fifo) drain(t time.Time) time.Duration {
	return max(q.lastFinish.Sub(t), 0)
}

func (q *fifo) push(e queued) {
	if e.leave.After(e.arrive) { // a packet that leaves at once never occupies the queue
		q.entries = append(q.entries, e)
		q.bytes += e.size
	}
}

// backlog counts the packets present at now: arrived and not yet left. now
// is not before the last arrival (a link asks at its present), since packets
// that had left by then are forgotten.
func (q *fifo) backlog(now time.Time) (packets, bytes int) {
	for _, e := range q.entries[q.head:] {
		if !e.arrive.After(now) && e.leave.After(now) {
			packets++
			bytes += e.size
		}
	}
	return packets, bytes
}

// takeOver moves prev's queue into q, leaving prev empty so that the two
// impairments never share a slice.
func (q *fifo) takeOver(prev *fifo) {
	*q = *prev
	*prev = fifo{}
}
