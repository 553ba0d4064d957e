package netem

import (
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"time"
)

// The defaults of RFC 8290, section 4.
const (
	// DefaultFQCoDelQuantum is the bytes a flow may send per round of the
	// deficit round robin: one Ethernet frame.
	DefaultFQCoDelQuantum = 1514
	// DefaultFQCoDelLimit is the packets the whole queue holds.
	DefaultFQCoDelLimit = 10240
	// DefaultFQCoDelFlows is the number of flow queues packets are hashed
	// into.
	DefaultFQCoDelFlows = 1024
)

// FQCoDelParams configure FQ-CoDel (RFC 8290). Zero fields take the RFC's
// defaults; CoDel's target and interval are RFC 8289's (5 ms, 100 ms).
//
// FQ-CoDel hashes each packet's 5-tuple (here its addresses and ports)
// into one of Flows queues, serves them by deficit round robin, Quantum
// bytes a round, with flows that just became active (new flows) ahead of
// the others (old flows), so a sparse flow's packets wait behind no bulk
// flow's queue; each queue has its own CoDel, which marks ECN-capable
// packets CE instead of dropping them. When Limit packets (or more than
// Memory bytes) are queued, an arrival makes the queue drop from the head
// of the flow holding the most bytes.
type FQCoDelParams struct {
	Quantum int
	Limit   int
	Flows   int
	// Memory bounds the bytes queued (packet sizes, as the link counts
	// them), as Linux's fq_codel memory_limit does; 0 is no byte limit
	// (Linux's default is 32 MB, which no lab scenario reaches).
	Memory int
	CoDel  CoDelParams
}

// Validate refuses negative sizes and CoDel parameters that make no sense.
func (c *FQCoDelParams) Validate() error {
	if c.Quantum < 0 || c.Limit < 0 || c.Flows < 0 || c.Memory < 0 {
		return fmt.Errorf("fq_codel quantum %d, limit %d, flows %d and memory %d must not be negative (0 means the default)", c.Quantum, c.Limit, c.Flows, c.Memory)
	}
	return c.CoDel.Validate()
}

func (c *FQCoDelParams) quantum() int { return positiveOr(c.Quantum, DefaultFQCoDelQuantum) }
func (c *FQCoDelParams) limit() int   { return positiveOr(c.Limit, DefaultFQCoDelLimit) }
func (c *FQCoDelParams) flows() int   { return positiveOr(c.Flows, DefaultFQCoDelFlows) }

func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// aqmPacket is a packet held by a scheduling queue, with its arrival.
type aqmPacket struct {
	p      *Packet
	arrive time.Time
}

// fqFlow is one of FQ-CoDel's flow queues.
type fqFlow struct {
	q       []aqmPacket
	bytes   int
	deficit int
	codel   codelState
	list    int // fqNone, fqNew or fqOld: the list it is on
	// src and dst are the hosts of the packet that made the flow active,
	// and bulk whether it counts in their loads (hostLoads): only a
	// CAKE-like queue uses them.
	src, dst netip.Addr
	bulk     bool
}

const (
	fqNone = iota
	fqNew
	fqOld
)

// fqCoDel is FQ-CoDel's state: a scheduling queue whose order depends on
// what arrives later, so its packets leave when the server takes them
// (dequeue), not at a time fixed on arrival. It is also the CAKE-like
// queue's core: with hosts set, a flow's quantum is shared by the bulk
// flows of its hosts (cake.go); without, every flow's is the whole
// quantum, as RFC 8290 says.
type fqCoDel struct {
	cfg                FQCoDelParams
	hosts              *hostLoads
	flows              []fqFlow
	newFlows, oldFlows []int
	packets, bytes     int
	// Dropped (by CoDel, at dequeue), Overflow (from the fattest flow,
	// on an arrival over the limit) and Marked collect what the queue did
	// since the caller last took them.
	Dropped, Overflow []*Packet
	Marked            int
}

func newFQCoDel(cfg FQCoDelParams) *fqCoDel {
	return &fqCoDel{cfg: cfg, flows: make([]fqFlow, cfg.flows())}
}

// flowOf hashes a packet's addresses and ports (the protocol is always
// UDP here), with a fixed hash so that runs repeat.
func (f *fqCoDel) flowOf(p *Packet) int {
	h := fnv.New64a()
	for _, a := range []net.Addr{p.From, p.To} {
		if u, ok := a.(*net.UDPAddr); ok {
			h.Write(u.IP.To16())
			h.Write([]byte{byte(u.Port >> 8), byte(u.Port)})
		} else if a != nil {
			h.Write([]byte(a.String()))
		}
	}
	return int(h.Sum64() % uint64(len(f.flows)))
}

// enqueue adds p arriving at now (RFC 8290 section 4.1).
func (f *fqCoDel) enqueue(p *Packet, now time.Time) {
	i := f.flowOf(p)
	fl := &f.flows[i]
	fl.q = append(fl.q, aqmPacket{p: p, arrive: now})
	fl.bytes += p.Size()
	f.packets++
	f.bytes += p.Size()
	if fl.list == fqNone {
		f.hosts.activate(fl, p)
		fl.list = fqNew
		fl.deficit = f.quantumOf(fl)
		f.newFlows = append(f.newFlows, i)
	}
	for f.packets > f.cfg.limit() || f.cfg.Memory > 0 && f.bytes > f.cfg.Memory {
		// Drop from the head of the fattest flow.
		fat := 0
		for j := range f.flows {
			if f.flows[j].bytes > f.flows[fat].bytes {
				fat = j
			}
		}
		f.Overflow = append(f.Overflow, f.pop(&f.flows[fat]))
	}
}

// quantumOf is the bytes fl may send per round: the quantum, shared by
// its hosts' bulk flows in a CAKE-like queue.
func (f *fqCoDel) quantumOf(fl *fqFlow) int {
	return f.cfg.quantum() / f.hosts.load(fl)
}

// pop takes the packet at the head of fl out of the queue.
func (f *fqCoDel) pop(fl *fqFlow) *Packet {
	p := fl.q[0].p
	fl.q[0] = aqmPacket{}
	fl.q = fl.q[1:]
	fl.bytes -= p.Size()
	f.packets--
	f.bytes -= p.Size()
	return p
}

// dequeue takes the next packet to send at now, or nil when the queue is
// empty (RFC 8290 section 4.2), and the time it waited.
func (f *fqCoDel) dequeue(now time.Time) (*Packet, time.Duration) {
	for {
		var list *[]int
		switch {
		case len(f.newFlows) > 0:
			list = &f.newFlows
		case len(f.oldFlows) > 0:
			list = &f.oldFlows
		default:
			return nil, 0
		}
		i := (*list)[0]
		fl := &f.flows[i]
		if fl.deficit <= 0 {
			// A flow that used its quantum with packets left is bulk
			// (CAKE counts it in its hosts' loads before the refill).
			f.hosts.setBulk(fl, fl.bulk || len(fl.q) > 0)
			fl.deficit += f.quantumOf(fl)
			*list = (*list)[1:]
			fl.list = fqOld
			f.oldFlows = append(f.oldFlows, i)
			continue
		}
		p, wait := f.codelDequeue(fl, now)
		if p == nil {
			*list = (*list)[1:]
			if fl.list == fqNew && len(f.oldFlows) > 0 {
				// An empty new flow goes to the old list, so that it
				// cannot come back as new at once and starve the others.
				fl.list = fqOld
				f.oldFlows = append(f.oldFlows, i)
			} else {
				fl.list = fqNone
				f.hosts.setBulk(fl, false)
			}
			continue
		}
		fl.deficit -= p.Size()
		return p, wait
	}
}

// codelDequeue is RFC 8289's dequeue on one flow's queue: it returns the
// packet to send (nil when CoDel dropped what was there), dropping or
// marking as the control law says.
func (f *fqCoDel) codelDequeue(fl *fqFlow, now time.Time) (*Packet, time.Duration) {
	c, cp := &fl.codel, &f.cfg.CoDel
	take := func() (*Packet, time.Duration, bool) {
		if len(fl.q) == 0 {
			c.firstAbove = time.Time{}
			return nil, 0, false
		}
		arrive := fl.q[0].arrive
		p := f.pop(fl)
		sojourn := now.Sub(arrive)
		// The RFC's exemption: no drop while at most one MTU is left.
		if fl.bytes <= DefaultFQCoDelQuantum {
			c.firstAbove = time.Time{}
			return p, sojourn, false
		}
		return p, sojourn, c.check(cp, now, sojourn)
	}
	p, wait, ok := take()
	if p == nil {
		c.dropping = false
		return nil, 0
	}
	if c.dropping {
		if !ok {
			c.dropping = false
			return p, wait
		}
		for c.dropping && !now.Before(c.dropNext) {
			c.count++
			if p.ECN.Capable() {
				p.ECN = CE
				f.Marked++
				c.dropNext = c.controlLaw(c.dropNext, cp)
				return p, wait
			}
			f.Dropped = append(f.Dropped, p)
			p, wait, ok = take()
			if p == nil {
				c.dropping = false
				return nil, 0
			}
			if !ok {
				c.dropping = false
			} else {
				c.dropNext = c.controlLaw(c.dropNext, cp)
			}
		}
		return p, wait
	}
	if ok {
		if p.ECN.Capable() {
			p.ECN = CE
			f.Marked++
		} else {
			f.Dropped = append(f.Dropped, p)
			p, wait, _ = take()
		}
		c.enter(cp, now)
	}
	return p, wait
}

func (f *fqCoDel) drops() (overflow, aqm []*Packet) {
	overflow, aqm = f.Overflow, f.Dropped
	f.Overflow, f.Dropped = nil, nil
	return overflow, aqm
}

func (f *fqCoDel) marks() int { return f.Marked }

func (f *fqCoDel) drain() []*Packet {
	var out []*Packet
	for i := range f.flows {
		fl := &f.flows[i]
		for len(fl.q) > 0 {
			out = append(out, f.pop(fl))
		}
		fl.list = fqNone
		f.hosts.setBulk(fl, false)
	}
	f.newFlows, f.oldFlows = nil, nil
	return out
}
