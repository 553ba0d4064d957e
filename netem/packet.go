package netem

import (
	"net"
	"time"
)

// Packet is one datagram crossing a link. The link owns Data once the packet
// is sent into it: impairments such as corrupt change it in place.
type Packet struct {
	// Data is the payload (for the in-memory network and the proxy, a UDP
	// payload).
	Data []byte
	// From and To are the datagram's addresses; links carry them unchanged.
	From, To net.Addr
	// Seq numbers the packets offered to one link, from 1.
	Seq uint64
	// Sent is the instant the packet entered the link.
	Sent time.Time
	// Duplicate marks a copy made by the duplicate impairment.
	Duplicate bool
	// Corrupted marks a packet whose payload the corrupt impairment changed.
	Corrupted bool
}

// Size is the packet's length in bytes as the link accounts for it.
func (p *Packet) Size() int { return len(p.Data) }

// clone returns a deep copy of p, payload included.
func (p *Packet) clone() *Packet {
	c := *p
	c.Data = append([]byte(nil), p.Data...)
	return &c
}

// DropReason says why a link dropped a packet. Counters are kept per reason.
type DropReason string

// The reasons for which the lab's impairments drop packets.
const (
	DropLoss    DropReason = "loss"     // random loss (Bernoulli or Gilbert-Elliott)
	DropQueue   DropReason = "queue"    // tail drop: the bottleneck queue was full
	DropCoDel   DropReason = "codel"    // dropped by CoDel at dequeue
	DropOutage  DropReason = "outage"   // sent during a blackout window
	DropBlocked DropReason = "blocked"  // the path blocks UDP
	DropClosed  DropReason = "closed"   // still in flight when the link closed
	DropNoRoute DropReason = "no-route" // no endpoint at the destination address
	DropRecvBuf DropReason = "recv-buf" // the receiving endpoint's buffer was full
)
