package netem

import (
	"maps"
	"time"
)

// Counter counts packets and their bytes.
type Counter struct {
	Packets uint64
	Bytes   uint64
}

func (c *Counter) add(p *Packet) {
	c.Packets++
	c.Bytes += uint64(p.Size())
}

// QueueStats summarises the time packets waited in a link's bottleneck queue.
type QueueStats struct {
	// Packets is how many packets went through the bottleneck.
	Packets uint64
	// Total and Max are the summed and the largest waiting time.
	Total, Max time.Duration
}

// Mean is the average waiting time in the queue.
func (q QueueStats) Mean() time.Duration {
	if q.Packets == 0 {
		return 0
	}
	return q.Total / time.Duration(q.Packets)
}

func (q *QueueStats) add(d time.Duration) {
	q.Packets++
	q.Total += d
	q.Max = max(q.Max, d)
}

// Stats are a link's counters. Offered = Delivered + dropped + InFlight,
// where duplicates add to Delivered without being offered.
type Stats struct {
	// Offered is what was sent into the link.
	Offered Counter
	// Delivered is what came out of it.
	Delivered Counter
	// Dropped counts drops per reason.
	Dropped map[DropReason]Counter
	// Duplicated and Corrupted count the copies made and the payloads changed.
	Duplicated, Corrupted uint64
	// Marked counts the packets a queue marked CE instead of dropping them
	// (ECN); they are delivered, and counted in Delivered too.
	Marked Counter
	// Fragmented counts the datagrams larger than the link's MTU that it
	// carried in fragments (those without DF). They are counted once,
	// whole, in Offered and Delivered (see mtu.go).
	Fragmented uint64
	// Queued is the waiting time in the bottleneck queue.
	Queued QueueStats
	// Backlog is what waits in the bottleneck queue now.
	Backlog Counter
	// InFlight is what the link has accepted and not yet delivered.
	InFlight Counter
}

func (s *Stats) drop(r DropReason, p *Packet) {
	if s.Dropped == nil {
		s.Dropped = map[DropReason]Counter{}
	}
	c := s.Dropped[r]
	c.add(p)
	s.Dropped[r] = c
}

// DroppedTotal sums the drops over all reasons.
func (s Stats) DroppedTotal() Counter {
	var t Counter
	for _, c := range s.Dropped {
		t.Packets += c.Packets
		t.Bytes += c.Bytes
	}
	return t
}

func (s Stats) clone() Stats {
	s.Dropped = maps.Clone(s.Dropped)
	return s
}
