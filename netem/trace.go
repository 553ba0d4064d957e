package netem

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

func init() { Register("trace", func() Impairment { return &TraceLink{} }) }

// TraceLink is a bottleneck whose capacity follows a recorded trace (see
// Trace) instead of a fixed rate, with the semantics of mahimahi's link
// queue:
//
//   - Each opportunity can carry TraceMTU bytes. Accounting is by bytes: one
//     opportunity carries several small packets, and a packet larger than
//     what is left in an opportunity takes the rest of it and continues in
//     the next ones. A packet leaves at the opportunity that carries its last
//     byte.
//   - An opportunity carries only packets that arrived strictly before it:
//     mahimahi brings the link up to date (its clock counts whole
//     milliseconds) before it queues a packet, so a packet arriving in the
//     millisecond of an opportunity misses it.
//   - Bytes nobody uses are lost: an opportunity, or what is left of one,
//     that finds the queue empty is not saved for later.
//   - The trace repeats forever and counts from the link's epoch (plus
//     Offset), whatever traffic there is, like a radio link's capacity.
//     With NoLoop it is played once instead: after its last opportunity the
//     link goes dark, as a recording that ended.
//
// The packets wait in a FIFO queue bounded by Queue; the time a packet waits
// for its first opportunity, even in an empty queue, counts as queueing
// (Verdict.Queued and Queue.Delay), as in mahimahi's delay log.
//
// On a parameter change (Link.Set or a timeline phase) a new TraceLink takes
// over the previous one's queue. If it plays the same trace with the same
// Offset, it also keeps the position, including what is left of a partly
// used opportunity; otherwise its trace starts serving once the packets
// already queued are sent.
type TraceLink struct {
	// Path is the trace file to load when Trace is not set. Validate loads
	// it, so a missing or malformed file is refused when the link is made.
	Path string
	// Trace is the capacity. When set, Path is only its description.
	Trace *Trace
	// Offset is the position in the trace at the link's epoch, to start
	// part of the way into a recording. It counts modulo the period (with
	// NoLoop it must be below the period).
	Offset time.Duration
	// NoLoop plays the trace once instead of wrapping to its start: after
	// its last opportunity the link carries nothing, and a packet that
	// arrives when the opportunities left cannot carry all of it is lost
	// at once (DropOutage), as in a blackout that never ends, rather than
	// queued forever. Only the end is cut: before the epoch (a link used
	// before its schedule starts, as the lab's handshake does) the trace
	// runs as it does when it wraps.
	NoLoop bool
	// Overhead is added to every packet's size when it is carried (the
	// queue limits and counters use the packet's own size). mahimahi counts
	// whole IP packets, so 28 (IPv4 and UDP headers) matches it for UDP
	// payloads. Default 0.
	Overhead int
	// Queue bounds the queue in front of the bottleneck. The zero value is
	// unlimited, as mahimahi's default "infinite" queue.
	Queue QueueLimit

	q   fifo
	srv traceServer
}

// Kind implements Impairment.
func (*TraceLink) Kind() string { return "trace" }

// Stage implements Impairment.
func (*TraceLink) Stage() Stage { return StageBottleneck }

// Load reads Path into Trace, unless Trace is already set.
func (t *TraceLink) Load() error {
	if t.Trace != nil {
		return nil
	}
	if t.Path == "" {
		return errors.New("no trace: set Path (a mahimahi trace file) or Trace")
	}
	tr, err := LoadTrace(t.Path)
	if err != nil {
		return err
	}
	t.Trace = tr
	return nil
}

// Validate loads the trace if needed and refuses a missing trace, a negative
// offset or overhead, an offset at or past the end of a trace played once,
// and bad queue limits.
func (t *TraceLink) Validate() error {
	var errs []error
	if err := t.Load(); err != nil {
		errs = append(errs, err)
	} else if len(t.Trace.ms) == 0 || t.Trace.ms[len(t.Trace.ms)-1] == 0 {
		errs = append(errs, fmt.Errorf("trace %q has no period: make traces with ParseTrace or LoadTrace", t.Trace.Name))
	} else if t.NoLoop && t.Offset >= t.Trace.Period() {
		errs = append(errs, fmt.Errorf("trace offset %v is not below the trace's length %v: played once, it would carry nothing", t.Offset, t.Trace.Period()))
	}
	if t.Offset < 0 {
		errs = append(errs, fmt.Errorf("trace offset %v is negative", t.Offset))
	}
	if t.Overhead < 0 {
		errs = append(errs, fmt.Errorf("overhead %d bytes is negative", t.Overhead))
	}
	if t.Queue.scheduling() {
		errs = append(errs, errors.New("trace: FQ-CoDel, CAKE and DualPI2 are a rate's queues only"))
	}
	if err := t.Queue.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Apply implements Impairment.
func (t *TraceLink) Apply(p *Packet, at time.Time, env *Env) Verdict {
	if t.srv.tr == nil {
		if err := t.Load(); err != nil {
			// A Link validates its impairments, which loads the trace:
			// only a caller that skipped Validate gets here.
			panic("netem: trace impairment used without a valid trace: " + err.Error())
		}
		t.srv.setTrace(t.Trace, env.Epoch, t.Offset)
	}
	wire := p.Size() + t.Overhead
	if t.NoLoop {
		// Where the packet would start is where the committed packets end
		// (start only forgets chances already lost): from there, does the
		// trace have the opportunities to carry it?
		t.srv.start(at)
		if !t.srv.fits(wire) {
			return Verdict{Drop: DropOutage}
		}
	}
	return t.q.offer(&t.Queue, p, at, wire, &t.srv, env)
}

// Inherit takes over the queue of the TraceLink this one replaces and, when
// the same trace continues, its position.
func (t *TraceLink) Inherit(prev Impairment) {
	pt, ok := prev.(*TraceLink)
	if !ok {
		if pr, ok := prev.(*Rate); ok { // the queue survives a switch of kind
			t.q.takeOver(&pr.q)
			t.srv = traceServer{notBefore: t.q.lastFinish}
		}
		return
	}
	t.q.takeOver(&pt.q)
	if pt.srv.tr != nil && t.Trace != nil && pt.Offset == t.Offset &&
		(pt.srv.tr == t.Trace || slices.Equal(pt.srv.tr.ms, t.Trace.ms)) {
		t.srv = pt.srv
		t.srv.tr = t.Trace
		return
	}
	t.srv = traceServer{notBefore: t.q.lastFinish}
}

// Backlog implements Backlogger: the packets queued or being carried.
func (t *TraceLink) Backlog(now time.Time) (packets, bytes int) { return t.q.backlog(now) }

// traceServer hands out a trace's opportunities in order. Opportunities are
// numbered across repetitions: number k is line k mod n of repetition
// floor(k / n), for a trace of n lines.
type traceServer struct {
	tr     *Trace
	base   time.Time // the instant of the trace's time zero in repetition 0
	period int64     // ns
	// next is the first opportunity not used up, left the bytes it has
	// left; started says they are set.
	next    int64
	left    int
	started bool
	// notBefore is when the server of a different trace finished the
	// packets queued before this one took over.
	notBefore time.Time
}

func (s *traceServer) setTrace(tr *Trace, epoch time.Time, offset time.Duration) {
	s.tr = tr
	s.period = int64(tr.Period())
	s.base = epoch.Add(-time.Duration(int64(offset) % s.period))
}

// at is the instant of opportunity k.
func (s *traceServer) at(k int64) time.Time {
	n := int64(len(s.tr.ms))
	rep := floorDiv(k, n)
	return s.base.Add(time.Duration(rep*s.period + int64(s.tr.ms[k-rep*n])*int64(time.Millisecond)))
}

// first is the first opportunity after t (at or after t if !strict).
func (s *traceServer) first(t time.Time, strict bool) int64 {
	rel := int64(t.Sub(s.base))
	rep := floorDiv(rel, s.period)
	within := rel - rep*s.period
	n := len(s.tr.ms)
	i := sort.Search(n, func(i int) bool {
		ns := int64(s.tr.ms[i]) * int64(time.Millisecond)
		return ns > within || (!strict && ns == within)
	})
	if i == n {
		rep, i = rep+1, 0
	}
	return rep*int64(n) + int64(i)
}

func (s *traceServer) start(a time.Time) time.Time {
	if !s.started {
		s.started = true
		s.next, s.left = s.first(a, true), TraceMTU
		if s.at(s.next).Before(s.notBefore) {
			s.next = s.first(s.notBefore, false)
		}
	} else if !s.at(s.next).After(a) {
		// The queue was empty from the opportunity next on: everything up
		// to a is lost.
		s.next, s.left = s.first(a, true), TraceMTU
	}
	return s.at(s.next)
}

func (s *traceServer) serve(_ time.Time, n int) time.Time {
	if n > s.left {
		// The packet takes what is left of this opportunity and as many
		// more as it needs; the last one may have some left.
		n -= s.left
		more := (n + TraceMTU - 1) / TraceMTU
		s.next += int64(more)
		s.left = more*TraceMTU - n
	} else {
		s.left -= n
	}
	f := s.at(s.next)
	if s.left == 0 {
		s.next, s.left = s.next+1, TraceMTU
	}
	return f
}

func (s *traceServer) ready() time.Time { return s.at(s.next) }

// fits reports whether a packet of n bytes, started where start left the
// server, has its last byte carried by an opportunity of the trace's first
// repetition (numbers 0 to n-1, the recording itself): what a trace played
// once can carry.
func (s *traceServer) fits(n int) bool {
	last := s.next
	if n > s.left {
		last += int64((n - s.left + TraceMTU - 1) / TraceMTU)
	}
	return last < int64(len(s.tr.ms))
}

// floorDiv divides rounding towards minus infinity, so that instants before
// the trace's base still map to the right repetition.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
