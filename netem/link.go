package netem

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// LinkConfig describes one direction of a path. Its zero value is a perfect
// link: no impairment, delivery at once.
type LinkConfig struct {
	// Name names the link in counters and seeds its random sources, so two
	// links with the same seed still draw differently. Default "link".
	Name string
	// Seed is the run's seed.
	Seed uint64
	// Epoch is the link's time zero for timelines and periodic schedules.
	// Zero means the instant the link is made.
	Epoch time.Time
	// Impairments are in force from the start.
	Impairments []Impairment
	// Precise makes the link keep time with a kernel high-resolution timer
	// instead of a runtime timer, for real-time use (the UDP proxy). Go's
	// timers wake an idle process through epoll_wait, whose timeout is in
	// whole milliseconds, so a runtime timer fires up to a millisecond
	// late. A precise link arms a timerfd (Linux; elsewhere it falls back
	// to a runtime timer) slightly early and spins the last stretch.
	// Never set it inside a testing/synctest bubble: the kernel's clock is
	// not the bubble's.
	Precise bool
	// Timeline lists later changes, each replacing the whole set of
	// impairments at its instant. Phases must be in increasing order of At.
	Timeline []Phase
	// MTU is the largest IP packet the link carries, in bytes, headers
	// included; zero means DefaultMTU (Ethernet's 1500). A tunnel is
	// 1400-ish, PPPoE 1492. A datagram counts its payload plus HeaderBytes
	// (28 over IPv4, 48 over IPv6): a UDP payload of 1472 bytes fills a
	// 1500-byte IPv4 path. One larger is dropped when it has DF set
	// (DropMTU) and otherwise fragmented (Stats.Fragmented); see mtu.go.
	MTU int
	// Tap, when set, observes every packet entering and leaving the link
	// (a capture: package netem/pcap). It runs inside the link's own flow,
	// so its cost is the link's: keep it quick. Nil costs one comparison
	// per packet.
	Tap Tap
}

// Tap observes a link's traffic. Packets passed to it belong to the link:
// a tap copies what it keeps and must not change them or call back into
// the link.
type Tap interface {
	// Entered is called for every packet offered to the link, with its
	// Seq and Sent set and its fate decided, before the link can deliver
	// it. It is called under the link's lock, so that calls come in the
	// order of Seq and no packet can have left before it was seen
	// entering. Its payload is as the impairments left it (a corrupt
	// impairment changes it in place). Copies made by a duplicate
	// impairment are not offered packets: they show only in Left.
	Entered(p *Packet, f Fate)
	// Left is called from the link's goroutine for every packet it
	// delivers, copies included, just before it is handed on, at the
	// instant it leaves (time.Now). Packets still inside when the link
	// closes (DropClosed) never leave.
	Left(p *Packet)
}

// Fate is what a link decided for a packet offered to it.
type Fate struct {
	// Drop is why the link dropped the packet; empty when it will be
	// delivered.
	Drop DropReason
	// At is when the packet will be delivered; zero when dropped, or
	// when a scheduling queue (FQ-CoDel) holds it: its fate is then
	// decided when the queue lets it go.
	At time.Time
}

// ErrClosed is returned by a link used after Close.
var ErrClosed = errors.New("netem: link closed")

// Link is one direction of a path: packets sent into it come out of its
// deliver function at the instant its impairments decide, or not at all.
// One goroutine per link delivers; Close ends it. A Link is safe for
// concurrent use.
type Link struct {
	name    string
	deliver func(*Packet)
	precise bool
	tap     Tap
	mtu     int

	mu      sync.Mutex
	pipe    *pipeline
	queue   deliveryHeap
	order   uint64 // tie-break: equal instants leave in the order decided
	stats   Stats
	scratch []Delivery
	closed  bool

	wake    chan struct{}
	closing chan struct{}
	done    chan struct{}
}

// NewLink makes a link that hands every packet it delivers to deliver, which
// is called from the link's own goroutine, one packet at a time.
func NewLink(cfg LinkConfig, deliver func(*Packet)) (*Link, error) {
	if cfg.Name == "" {
		cfg.Name = "link"
	}
	if err := validate(cfg.Impairments); err != nil {
		return nil, err
	}
	for i, ph := range cfg.Timeline {
		if err := validate(ph.Impairments); err != nil {
			return nil, err
		}
		if i > 0 && ph.At <= cfg.Timeline[i-1].At {
			return nil, errors.New("netem: timeline phases must be in increasing order of At")
		}
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = time.Now()
	}
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < MinMTU {
		return nil, fmt.Errorf("netem: link %s: MTU %d is below IPv4's minimum of %d bytes", cfg.Name, cfg.MTU, MinMTU)
	}
	l := &Link{
		name:    cfg.Name,
		deliver: deliver,
		precise: cfg.Precise,
		tap:     cfg.Tap,
		mtu:     cfg.MTU,
		wake:    make(chan struct{}, 1),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	l.pipe = newPipeline(cfg.Name, cfg.Seed, cfg.Epoch, &l.stats)
	l.pipe.mtu = cfg.MTU
	l.pipe.set(cfg.Impairments)
	l.pipe.timeline = append([]Phase(nil), cfg.Timeline...)
	go l.loop()
	return l, nil
}

// Name returns the link's name.
func (l *Link) Name() string { return l.name }

// MTU returns the largest IP packet the link carries (LinkConfig.MTU).
func (l *Link) MTU() int { return l.mtu }

// Send offers p to the link, which takes ownership of it (and of p.Data).
// It never blocks on the network: the fate is decided at once.
func (l *Link) Send(p *Packet) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	earliest := time.Time{}
	if len(l.queue) > 0 {
		earliest = l.queue[0].At
	}
	next := l.pipe.next()
	l.scratch = l.pipe.process(p, time.Now(), l.scratch[:0])
	if l.tap != nil {
		l.tap.Entered(p, l.fate(p))
	}
	wake := l.schedule(earliest)
	// A scheduling queue that starts sending (or sends sooner) needs the
	// loop to let its packets go.
	if n := l.pipe.next(); !n.IsZero() && (next.IsZero() || n.Before(next)) {
		wake = true
	}
	if wake {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// schedule puts the deliveries in l.scratch in the queue and reports
// whether one is due before earliest (zero: none was pending).
func (l *Link) schedule(earliest time.Time) (sooner bool) {
	for _, d := range l.scratch {
		l.order++
		l.queue.push(scheduled{Delivery: d, order: l.order})
		l.stats.InFlight.add(d.Packet)
		if earliest.IsZero() || d.At.Before(earliest) {
			sooner = true
		}
	}
	clear(l.scratch) // let delivered packets be collected
	return sooner
}

// fate finds what the pipeline just decided for p: its own delivery among
// those scheduled (copies are separate packets), or the reason it was
// dropped.
func (l *Link) fate(p *Packet) Fate {
	for _, d := range l.scratch {
		if d.Packet == p {
			return Fate{At: d.At}
		}
	}
	return Fate{Drop: l.pipe.dropped}
}

// Set replaces the link's impairments now, atomically: the next packet sent
// meets the whole new set. Packets already inside keep their fate, as with tc
// netem, whose time_to_send is computed at enqueue. Stateful impairments
// inherit their state from one of the same kind (see Inheritor). A pending
// timeline goes on.
func (l *Link) Set(imps []Impairment) error {
	if err := validate(imps); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pipe.set(imps)
	return nil
}

// Stats returns a snapshot of the link's counters.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats.clone()
	s.Backlog = l.pipe.backlog(time.Now())
	return s
}

// Close stops the link; packets still inside are counted as dropped
// (DropClosed). It waits for the delivering goroutine to end.
func (l *Link) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	for _, s := range l.queue {
		l.stats.drop(DropClosed, s.Packet)
	}
	for _, p := range l.pipe.drain() {
		l.stats.drop(DropClosed, p)
	}
	l.queue = nil
	l.stats.InFlight = Counter{}
	l.mu.Unlock()
	close(l.closing)
	<-l.done
	return nil
}

// loop delivers packets when they are due. It sleeps on one timer set to the
// earliest pending delivery.
func (l *Link) loop() {
	defer close(l.done)
	timer := newLinkTimer(l.precise)
	defer timer.close()
	early := time.Duration(0)
	if l.precise {
		early = preciseEarly
	}
	var due []*Packet
	for {
		l.mu.Lock()
		now := time.Now()
		// Packets the scheduling queues send by now go on through the
		// link first: they may be due already.
		l.scratch = l.pipe.release(now, l.scratch[:0])
		l.schedule(time.Time{})
		for len(l.queue) > 0 && !l.queue[0].At.After(now) {
			s := l.queue.pop()
			l.stats.InFlight.Packets--
			l.stats.InFlight.Bytes -= uint64(s.Packet.Size())
			l.stats.Delivered.add(s.Packet)
			due = append(due, s.Packet)
		}
		var wait time.Duration = -1
		if len(l.queue) > 0 {
			wait = l.queue[0].At.Sub(now)
		}
		if n := l.pipe.next(); !n.IsZero() && (wait < 0 || n.Sub(now) < wait) {
			wait = max(n.Sub(now), 0)
		}
		l.mu.Unlock()

		for i, p := range due {
			if l.tap != nil {
				l.tap.Left(p)
			}
			l.deliver(p)
			due[i] = nil
		}
		due = due[:0]

		if wait >= 0 && wait <= early && len(due) == 0 {
			// Woken early on purpose: spin to the instant. A new packet
			// cannot be due earlier than that by more than early.
			for time.Since(now) < wait {
			}
			continue
		}
		if wait >= 0 {
			timer.reset(wait - early)
		} else {
			timer.stop()
		}
		select {
		case <-l.wake:
		case <-timer.c():
		case <-l.closing:
			timer.stop()
			return
		}
	}
}

// scheduled is a delivery waiting in the link.
type scheduled struct {
	Delivery
	order uint64
}

// deliveryHeap orders pending deliveries by instant, then by decision
// order. It is a binary min-heap written out for the one element type, so
// that scheduling a packet allocates nothing.
type deliveryHeap []scheduled

func (h deliveryHeap) less(i, j int) bool {
	if !h[i].At.Equal(h[j].At) {
		return h[i].At.Before(h[j].At)
	}
	return h[i].order < h[j].order
}

func (h *deliveryHeap) push(s scheduled) {
	*h = append(*h, s)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *deliveryHeap) pop() scheduled {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = scheduled{}
	q = q[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q.less(l, smallest) {
			smallest = l
		}
		if r < len(q) && q.less(r, smallest) {
			smallest = r
		}
		if smallest == i {
			break
		}
		q[i], q[smallest] = q[smallest], q[i]
		i = smallest
	}
	*h = q
	return top
}
