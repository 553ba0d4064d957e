package netem

import (
	"net"
	"sync"
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
	// ECN is the packet's two ECN bits (RFC 3168) as its sender set them; a
	// queue that marks congestion sets them to CE on the way.
	ECN ECN
	// DF is the IP header's Don't Fragment bit: a link drops a DF datagram
	// larger than its MTU (DropMTU) instead of fragmenting it. Endpoints
	// set it when their owner asked the socket for it (PacketConn's
	// SyscallConn: IP_MTU_DISCOVER), as quic-go does for path MTU
	// discovery.
	DF bool
}

// ECN is the ECN field of an IP header (RFC 3168, section 5).
type ECN uint8

// The four codepoints of the ECN field.
const (
	NotECT ECN = 0b00 // the transport does not understand ECN
	ECT1   ECN = 0b01 // ECN-capable, L4S (RFC 9331)
	ECT0   ECN = 0b10 // ECN-capable, classic (RFC 3168)
	CE     ECN = 0b11 // congestion experienced
)

// Capable reports whether a queue may mark the packet instead of dropping it.
func (e ECN) Capable() bool { return e != NotECT }

func (e ECN) String() string {
	switch e {
	case NotECT:
		return "not-ect"
	case ECT1:
		return "ect1"
	case ECT0:
		return "ect0"
	case CE:
		return "ce"
	}
	return "ecn?"
}

// Size is the packet's length in bytes as the link accounts for it.
func (p *Packet) Size() int { return len(p.Data) }

// packetPool recycles the in-memory network's packets. A session sends
// hundreds of thousands of them, each read once and then garbage: without
// the pool each is two allocations (the packet and its payload), and the
// garbage collector they keep busy cost about a fifth of a session's CPU.
// Only PacketConn takes packets from it (WriteTo) and gives them back
// (ReadFrom, once the payload is copied out): nothing else holds a packet
// after its reader has it.
var packetPool = sync.Pool{New: func() any { return new(Packet) }}

// pooledPayload is the largest payload buffer a recycled packet keeps: a
// datagram of a path's MTU and then some. Larger ones (rare, up to
// MaxDatagram) go to the garbage collector with their packet.
const pooledPayload = 2048

// newPacket returns a packet from the pool carrying a copy of data.
func newPacket(data []byte, from, to net.Addr) *Packet {
	p := packetPool.Get().(*Packet)
	p.Data = append(p.Data[:0], data...)
	p.From, p.To = from, to
	return p
}

// release gives p back to the pool. The caller must be its last holder.
func (p *Packet) release() {
	buf := p.Data[:0]
	if cap(buf) > pooledPayload {
		buf = nil
	}
	*p = Packet{Data: buf}
	packetPool.Put(p)
}

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
	DropPIE     DropReason = "pie"      // dropped by PIE on arrival
	DropDualPI2 DropReason = "dualpi2"  // dropped by DualPI2's classic queue at dequeue
	DropOutage  DropReason = "outage"   // sent during a blackout window
	DropBlocked DropReason = "blocked"  // the path blocks UDP
	DropClosed  DropReason = "closed"   // still in flight when the link closed
	DropNoRoute DropReason = "no-route" // no endpoint at the destination address
	DropRecvBuf DropReason = "recv-buf" // the receiving endpoint's buffer was full
	DropMTU     DropReason = "mtu"      // larger than the link's MTU with DF set
)
