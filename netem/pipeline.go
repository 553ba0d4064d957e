package netem

import (
	"strconv"
	"time"

	"github.com/nuvirahub/latencylab/internal/seeded"
)

// Phase is one step of a link's timeline: from At (counted from the link's
// epoch) on, the link has exactly these impairments. The change is atomic:
// the first packet sent at or after At meets the whole new set.
type Phase struct {
	At          time.Duration
	Impairments []Impairment
}

// Delivery is a packet the link will deliver, and when.
type Delivery struct {
	Packet *Packet
	At     time.Time
}

// slot is one impairment in a pipeline with its environment.
type slot struct {
	imp Impairment
	env Env
}

// pipeline computes packets' fates. It is the pure half of a Link: no
// goroutines, no clock; the caller passes the instant each packet enters, in
// non-decreasing order. It is not safe for concurrent use.
type pipeline struct {
	name       string
	seed       uint64
	epoch      time.Time
	slots      []slot
	reorders   bool
	lastOut    time.Time
	timeline   []Phase // phases not yet in force, by At
	generation int     // how many configurations this pipeline has had
	seq        uint64
	mtu        int // 0 (a bare pipeline in tests) carries any size
	stats      *Stats
	// dropped is why the last packet offered was dropped, "" if it was
	// not: a link's Tap needs the reason, which the counters lose.
	dropped DropReason
	rel     []Released // scratch for release
}

func newPipeline(name string, seed uint64, epoch time.Time, stats *Stats) *pipeline {
	return &pipeline{name: name, seed: seed, epoch: epoch, stats: stats}
}

// set replaces the impairments. Stateful impairments inherit from the
// previous impairment of the same kind; each new one gets its own source.
func (pl *pipeline) set(imps []Impairment) {
	old := pl.slots
	used := make([]bool, len(old))
	pl.generation++
	pl.slots = make([]slot, 0, len(imps))
	pl.reorders = false
	for i, imp := range ordered(imps) {
		s := slot{imp: imp, env: Env{Epoch: pl.epoch}}
		for j, o := range old {
			// A bottleneck inherits from the previous bottleneck whatever
			// its kind, so a queue survives a switch from rate to trace.
			sameRole := o.imp.Kind() == imp.Kind() ||
				(imp.Stage() == StageBottleneck && o.imp.Stage() == StageBottleneck)
			if used[j] || !sameRole || o.imp == imp {
				continue
			}
			if h, ok := imp.(Inheritor); ok {
				h.Inherit(o.imp)
				if o.imp.Kind() == imp.Kind() {
					s.env.Rand = o.env.Rand // the random sequence goes on too
				}
				used[j] = true
			}
			break
		}
		if s.env.Rand == nil {
			s.env.Rand = seeded.New(pl.seed, pl.name, imp.Kind(), strconv.Itoa(pl.generation), strconv.Itoa(i))
		}
		if r, ok := imp.(Reorderer); ok && r.Reorders() {
			pl.reorders = true
		}
		pl.slots = append(pl.slots, s)
	}
	// A scheduling queue nothing inherited (a rate with FQ-CoDel replaced
	// by a trace) drops what it still holds.
	for j, o := range old {
		if sch, ok := o.imp.(Scheduler); ok && !used[j] {
			for _, p := range sch.Drain() {
				pl.stats.InFlight.Packets--
				pl.stats.InFlight.Bytes -= uint64(p.Size())
				pl.stats.drop(DropClosed, p)
			}
		}
	}
}

// release continues through the rest of the link the packets the
// scheduling queues let go by now, and counts those they dropped.
func (pl *pipeline) release(now time.Time, out []Delivery) []Delivery {
	for i := range pl.slots {
		sch, ok := pl.slots[i].imp.(Scheduler)
		if !ok {
			continue
		}
		pl.rel = sch.Release(now, pl.rel[:0])
		for _, r := range pl.rel {
			// Held packets count as in flight (run); the link counts
			// again those it schedules.
			pl.stats.InFlight.Packets--
			pl.stats.InFlight.Bytes -= uint64(r.Packet.Size())
			if r.Drop != "" {
				pl.stats.drop(r.Drop, r.Packet)
				continue
			}
			pl.stats.Queued.add(r.Queued)
			if r.Marked {
				pl.stats.Marked.add(r.Packet)
			}
			out = pl.run(r.Packet, r.At, i+1, out)
		}
		clear(pl.rel)
	}
	return out
}

// next is the instant a scheduling queue next lets a packet go; zero if
// none holds any.
func (pl *pipeline) next() time.Time {
	var t time.Time
	for _, s := range pl.slots {
		if sch, ok := s.imp.(Scheduler); ok {
			if n := sch.Next(); !n.IsZero() && (t.IsZero() || n.Before(t)) {
				t = n
			}
		}
	}
	return t
}

// drain empties the scheduling queues (the link closes).
func (pl *pipeline) drain() []*Packet {
	var out []*Packet
	for _, s := range pl.slots {
		if sch, ok := s.imp.(Scheduler); ok {
			out = append(out, sch.Drain()...)
		}
	}
	return out
}

// process decides the fate of p entering at at and appends what will be
// delivered (nothing if dropped, several packets if duplicated) to out.
func (pl *pipeline) process(p *Packet, at time.Time, out []Delivery) []Delivery {
	for len(pl.timeline) > 0 && !pl.epoch.Add(pl.timeline[0].At).After(at) {
		pl.set(pl.timeline[0].Impairments)
		pl.timeline = pl.timeline[1:]
	}
	pl.seq++
	p.Seq = pl.seq
	p.Sent = at
	pl.stats.Offered.add(p)
	pl.dropped = ""
	// What the scheduling queues send before at leaves first: they must
	// not see this packet then.
	out = pl.release(at, out)
	if pl.mtu > 0 && p.Size()+HeaderBytes(p) > pl.mtu {
		if p.DF {
			pl.stats.drop(DropMTU, p)
			pl.dropped = DropMTU
			return out
		}
		pl.stats.Fragmented++
	}
	return pl.run(p, at, 0, out)
}

// pendingCopy is a duplicate waiting to continue from slot from.
type pendingCopy struct {
	p    *Packet
	from int
	at   time.Time
}

func (pl *pipeline) run(p *Packet, t time.Time, from int, out []Delivery) []Delivery {
	var copies []pendingCopy
	dropped, held := false, false
	for i := from; i < len(pl.slots); i++ {
		s := &pl.slots[i]
		v := s.imp.Apply(p, t, &s.env)
		if v.Held {
			// The scheduling queue decides later (release).
			pl.stats.InFlight.add(p)
			held = true
			break
		}
		if v.Drop != "" {
			pl.stats.drop(v.Drop, p)
			if from == 0 { // the offered packet, not a copy
				pl.dropped = v.Drop
			}
			dropped = true
			break
		}
		if v.At.After(t) {
			t = v.At
		}
		if s.imp.Stage() == StageBottleneck {
			pl.stats.Queued.add(v.Queued)
		}
		if v.Marked {
			pl.stats.Marked.add(p)
		}
		// A copy is taken here, as tc netem does, so impairments after this
		// one (a corrupt, say) treat it independently of the original.
		for range v.Duplicates {
			d := p.clone()
			d.Duplicate = true
			pl.stats.Duplicated++
			copies = append(copies, pendingCopy{p: d, from: i + 1, at: t})
		}
	}
	if !dropped && !held {
		if p.Corrupted {
			pl.stats.Corrupted++
		}
		if !pl.reorders {
			if t.Before(pl.lastOut) {
				t = pl.lastOut
			}
			pl.lastOut = t
		}
		out = append(out, Delivery{Packet: p, At: t})
	}
	// Copies follow the original through the rest of the link.
	for _, c := range copies {
		out = pl.run(c.p, c.at, c.from, out)
	}
	return out
}

// backlog sums what waits in the link's queues at now.
func (pl *pipeline) backlog(now time.Time) Counter {
	var c Counter
	for _, s := range pl.slots {
		if b, ok := s.imp.(Backlogger); ok {
			n, bytes := b.Backlog(now)
			c.Packets += uint64(n)
			c.Bytes += uint64(bytes)
		}
	}
	return c
}
