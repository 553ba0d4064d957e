package netem

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

func init() {
	Register("spikes", func() Impairment {
		return &Spikes{
			Min:      150 * time.Millisecond,
			Max:      600 * time.Millisecond,
			Every:    5 * time.Second,
			Duration: 300 * time.Millisecond,
		}
	})
}

// Spikes adds the latency spikes of mobile links: every so often, for a
// short window, the radio stalls (a handover, a scheduling gap, a
// retransmission burst in RLC) and packets come out late by a few hundred
// milliseconds. Packets whose instant at this impairment falls inside a
// window get that window's extra delay; those just after it queue behind
// them in the link's FIFO (unless another impairment of the link reorders),
// the way a stalled radio releases its backlog.
//
// The windows are a schedule on the link's clock, not on its traffic: they
// depend only on the time since the link's epoch and the run's seed, so the
// same seed gives the same spikes whatever is sent, and an idle link has its
// spikes too (a packet sent later falls in the window where it belongs).
//
// New("spikes") returns Min 150ms, Max 600ms, Every 5s, Duration 300ms,
// fixed intervals, first spike at the epoch. A Spikes literal has no
// defaults: Every must be set.
//
// Like every delay-stage impairment, Spikes sees the instant a packet leaves
// the impairments listed before it in the same stage; list it first to judge
// by the instant the packet entered the delay stage.
type Spikes struct {
	// Min and Max bound the extra delay of a spike: each window draws its
	// own, uniformly in [Min, Max]. Min == Max gives every spike the same.
	Min, Max time.Duration
	// Every is the interval between the starts of two spikes (its mean when
	// Random is set). It must be positive and at least Duration.
	Every time.Duration
	// Duration is how long each window lasts; packets arriving in
	// [start, start+Duration) are delayed.
	Duration time.Duration
	// Offset is when the first spike starts, counted from the link's epoch.
	Offset time.Duration
	// Random makes the intervals random instead of fixed. The gap between
	// the end of one window and the start of the next is exponentially
	// distributed with mean Every-Duration, so the mean interval between
	// starts is exactly Every, spikes come as a Poisson process in the time
	// the radio is not stalled, and windows never overlap (an exponential
	// start-to-start interval would let two stalls overlap, which a radio
	// cannot do, and would make Duration > interval ambiguous).
	Random bool

	// st is the schedule's state for one link, made by the first packet.
	// It sits behind a pointer so that Spikes stays a plain value that
	// configurations may copy before use.
	st *spikeState
}

// SpikeWindow is one spike: from Start (counted from the link's epoch) for
// Duration, packets get Extra on top of their delay.
type SpikeWindow struct {
	Start    time.Duration
	Duration time.Duration
	Extra    time.Duration
}

// End is the first instant (from the epoch) after the window.
func (w SpikeWindow) End() time.Duration { return w.Start + w.Duration }

// contains reports whether off (from the epoch) lies in the window.
func (w SpikeWindow) contains(off time.Duration) bool {
	return off >= w.Start && off < w.End()
}

// Kind implements Impairment.
func (*Spikes) Kind() string { return "spikes" }

// Stage implements Impairment.
func (*Spikes) Stage() Stage { return StageDelay }

// Validate refuses negative durations, Min > Max, a non-positive Every and
// windows longer than the interval between them.
func (s *Spikes) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"min", s.Min}, {"max", s.Max}, {"every", s.Every}, {"duration", s.Duration}, {"offset", s.Offset}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", f.name, f.v))
		}
	}
	if s.Min > s.Max {
		errs = append(errs, fmt.Errorf("min %v is greater than max %v", s.Min, s.Max))
	}
	if s.Every == 0 {
		errs = append(errs, errors.New("every must be positive"))
	}
	if s.Duration > s.Every && s.Every > 0 {
		errs = append(errs, fmt.Errorf("duration %v is longer than every %v: windows would overlap", s.Duration, s.Every))
	}
	return errors.Join(errs...)
}

// spikeState is a schedule in progress.
type spikeState struct {
	// seeds start the schedule's own source. They are drawn from env.Rand on
	// the first packet, so the schedule depends only on the run's seed, and
	// Windows can replay the schedule from them without keeping a history
	// that would grow with the run's length. They never change once drawn.
	seeds [2]uint64
	// gen produces the windows in order; prev and cur are the last two
	// produced (prev is kept for an instant that steps back a little, which
	// a jitter listed before Spikes in the stage can cause). Only Apply,
	// under the link's lock, touches them.
	gen       spikeGen
	prev, cur SpikeWindow
}

// spikesStateMu publishes a Spikes' state: Apply runs under its link's lock,
// but Windows may be called from anywhere (a live report) while traffic
// flows. Apply takes it only to install the state, once per instance.
var spikesStateMu sync.Mutex

func (s *Spikes) setState(st *spikeState) {
	spikesStateMu.Lock()
	defer spikesStateMu.Unlock()
	s.st = st
}

func (s *Spikes) state() *spikeState {
	spikesStateMu.Lock()
	defer spikesStateMu.Unlock()
	return s.st
}

// Inherit carries the schedule on across a parameter change that keeps the
// same parameters (a timeline phase that changes another impairment), so the
// spikes do not restart at the phase boundary. With different parameters the
// new schedule starts afresh.
func (s *Spikes) Inherit(prev Impairment) {
	p, ok := prev.(*Spikes)
	if !ok || !p.sameParams(s) {
		return
	}
	// The state moves over: the link never applies the previous instance
	// again, and Windows on it replays from the seeds, which do not change.
	if st := p.state(); st != nil {
		s.setState(st)
	}
}

func (s *Spikes) sameParams(o *Spikes) bool {
	return s.Min == o.Min && s.Max == o.Max && s.Every == o.Every &&
		s.Duration == o.Duration && s.Offset == o.Offset && s.Random == o.Random
}

// Apply implements Impairment.
func (s *Spikes) Apply(_ *Packet, at time.Time, env *Env) Verdict {
	st := s.st // written only here and in Inherit, both under the link's lock
	if st == nil {
		st = &spikeState{seeds: [2]uint64{env.Rand.Uint64(), env.Rand.Uint64()}}
		st.gen = s.newGen(st.seeds)
		st.cur = st.gen.next()
		s.setState(st)
	}
	off := at.Sub(env.Epoch)
	// Windows are produced only as time passes them, in order, so their
	// number and draws never depend on how many packets were sent.
	for st.cur.End() <= off {
		st.prev, st.cur = st.cur, st.gen.next()
	}
	switch {
	case st.cur.contains(off):
		return Verdict{At: at.Add(st.cur.Extra)}
	case st.prev.contains(off):
		return Verdict{At: at.Add(st.prev.Extra)}
	}
	return Verdict{At: at}
}

// Windows lists the spikes that start before until (counted from the link's
// epoch), in order. The schedule's source is drawn on the link's first
// packet, so before any packet it returns nil. It replays the schedule from
// the start each time: it is meant for tests and reports, not for every
// packet. It is safe to call while the link carries traffic.
func (s *Spikes) Windows(until time.Duration) []SpikeWindow {
	st := s.state()
	if st == nil {
		return nil
	}
	g := s.newGen(st.seeds)
	var out []SpikeWindow
	for w := g.next(); w.Start < until; w = g.next() {
		out = append(out, w)
	}
	return out
}

// newGen starts the schedule from its seeds.
func (s *Spikes) newGen(seeds [2]uint64) spikeGen {
	return spikeGen{
		rng: rand.New(rand.NewPCG(seeds[0], seeds[1])),
		min: s.Min, max: s.Max,
		every: s.Every, duration: s.Duration, offset: s.Offset,
		random: s.Random,
	}
}

// spikeGen produces the windows of a schedule one after another. Every
// window draws, in this order, its gap (random schedules only) and its
// extra delay, so the n-th window is the same whoever asks for it.
type spikeGen struct {
	rng      *rand.Rand
	min, max time.Duration
	every    time.Duration
	duration time.Duration
	offset   time.Duration
	random   bool
	n        int           // windows produced
	last     time.Duration // start of the last window produced
}

func (g *spikeGen) next() SpikeWindow {
	start := g.offset
	if g.n > 0 {
		start = g.last + g.every
		if g.random {
			// Exponential gap in the idle time; mean Every-Duration.
			start = g.last + g.duration + time.Duration(g.rng.ExpFloat64()*float64(g.every-g.duration))
		}
	}
	extra := g.min + time.Duration(g.rng.Int64N(int64(g.max-g.min)+1))
	g.n++
	g.last = start
	return SpikeWindow{Start: start, Duration: g.duration, Extra: extra}
}
