package netem

import (
	"net"
	"sort"
	"time"
)

// schedQueue is a scheduling queue under test: the order packets leave in
// depends on later arrivals, so a simulated server takes them one at a
// time.
type schedUnderTest interface {
	enqueue(p *Packet, now time.Time)
	dequeue(now time.Time) (*Packet, time.Duration)
}

// schedArrival is one packet offered to the queue at At (from t0).
type schedArrival struct {
	At   time.Duration
	Flow int // the source port's offset, which makes the 5-tuple
	Host int // the source address's offset: 10.0.0.1+Host
	Size int
	ECN  ECN
}

// schedOut is what became of one packet.
type schedOut struct {
	Flow int
	Size int
	Left time.Duration // when its last bit was sent
	Wait time.Duration // its time in the queue
	ECN  ECN
}

func schedPacket(a schedArrival) *Packet {
	return &Packet{Data: make([]byte, a.Size), ECN: a.ECN,
		From: &net.UDPAddr{IP: net.IPv4(10, 0, 0, byte(1+a.Host)), Port: 5000 + a.Flow},
		To:   &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 443}}
}

// schedRun feeds arrivals (sorted by At) to q in front of a server of
// bps, taking a packet whenever the server is free, until end, and
// returns what was sent, in order. Packets carry their flow in Seq.
func schedRun(q schedUnderTest, arrivals []schedArrival, bps int64, end time.Duration) []schedOut {
	sort.SliceStable(arrivals, func(i, j int) bool { return arrivals[i].At < arrivals[j].At })
	var out []schedOut
	free := time.Duration(0)
	i := 0
	for {
		// Everything that arrives before the server is free is queued
		// first; with the server idle, the next arrival starts it.
		for i < len(arrivals) && arrivals[i].At <= free {
			p := schedPacket(arrivals[i])
			p.Seq = uint64(arrivals[i].Flow)
			q.enqueue(p, t0.Add(arrivals[i].At))
			i++
		}
		if free >= end {
			return out
		}
		p, wait := q.dequeue(t0.Add(free))
		if p == nil {
			if i == len(arrivals) {
				return out
			}
			free = arrivals[i].At
			continue
		}
		free += time.Duration(int64(p.Size()) * 8 * int64(time.Second) / bps)
		out = append(out, schedOut{Flow: int(p.Seq), Size: p.Size(), Left: free, Wait: wait, ECN: p.ECN})
	}
}

// schedEvery makes packets of one flow every gap in [from, to).
func schedEvery(flow, size int, ecn ECN, gap, from, to time.Duration) []schedArrival {
	var a []schedArrival
	for t := from; t < to; t += gap {
		a = append(a, schedArrival{At: t, Flow: flow, Size: size, ECN: ecn})
	}
	return a
}

// fifoQueue is a drop-tail FIFO of unlimited size, the reference.
type fifoQueue struct{ q []aqmPacket }

func (f *fifoQueue) enqueue(p *Packet, now time.Time) {
	f.q = append(f.q, aqmPacket{p: p, arrive: now})
}
func (f *fifoQueue) dequeue(now time.Time) (*Packet, time.Duration) {
	if len(f.q) == 0 {
		return nil, 0
	}
	e := f.q[0]
	f.q = f.q[1:]
	return e.p, now.Sub(e.arrive)
}
