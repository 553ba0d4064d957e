package netem

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

func init() { Register("outage", func() Impairment { return &Outage{} }) }

// OutageMode says what happens to packets sent during a blackout.
type OutageMode string

// The outage modes.
const (
	// OutageDrop loses every packet sent inside a window (DropOutage): a
	// tunnel, a dead cell, a Wi-Fi roam without buffering.
	OutageDrop OutageMode = "drop"
	// OutageHold keeps the packets sent inside a window and releases them,
	// in order, at the window's end: a radio that buffers through a
	// handover, then flushes its backlog in one burst.
	OutageHold OutageMode = "hold"
)

// OutageWindow is one blackout, from Start (counted from the link's epoch)
// for Duration.
type OutageWindow struct {
	Start    time.Duration
	Duration time.Duration
}

// End is the first instant (from the epoch) after the window.
func (w OutageWindow) End() time.Duration { return w.Start + w.Duration }

// Outage blacks the link out during windows of time, given either
// explicitly (Windows) or as a period (Every, Duration, Offset), never both.
// It is a gate: it judges a packet by the instant it is sent, before loss,
// queue and delay, so a packet sent just before a window still arrives
// (it was already on the wire) and a held packet then meets the bottleneck
// with the rest of the burst.
//
// Outage keeps no state: whether an instant is dark is a function of the
// instant alone, so a schedule never shifts with the traffic or across a
// parameter change.
type Outage struct {
	// Windows lists explicit blackouts, in increasing order of Start and
	// not overlapping (adjacent windows are fine).
	Windows []OutageWindow
	// Every, Duration and Offset give a periodic blackout instead: a window
	// of Duration starting at Offset, Offset+Every, Offset+2*Every, ...
	// Duration must not exceed Every (equal means the link stays dark).
	Every, Duration, Offset time.Duration
	// Mode is OutageDrop (the default, when empty) or OutageHold. Held
	// packets stay in the link like any packet in flight, so a long hold at
	// a high rate costs memory in proportion.
	Mode OutageMode
}

// Kind implements Impairment.
func (*Outage) Kind() string { return "outage" }

// Stage implements Impairment.
func (*Outage) Stage() Stage { return StageGate }

func (o *Outage) mode() OutageMode {
	if o.Mode == "" {
		return OutageDrop
	}
	return o.Mode
}

// Validate refuses an unknown mode, negative durations, a missing or double
// schedule, periodic windows longer than their period, and explicit windows
// that are empty, out of order or overlapping.
func (o *Outage) Validate() error {
	var errs []error
	switch o.mode() {
	case OutageDrop, OutageHold:
	default:
		errs = append(errs, fmt.Errorf("unknown mode %q (want %q or %q)", o.Mode, OutageDrop, OutageHold))
	}
	periodic := o.Every != 0 || o.Duration != 0 || o.Offset != 0
	switch {
	case periodic && len(o.Windows) > 0:
		errs = append(errs, errors.New("give either windows or every/duration/offset, not both"))
	case periodic:
		for _, f := range []struct {
			name string
			v    time.Duration
		}{{"every", o.Every}, {"duration", o.Duration}, {"offset", o.Offset}} {
			if f.v < 0 {
				errs = append(errs, fmt.Errorf("%s %v is negative", f.name, f.v))
			}
		}
		if o.Every == 0 {
			errs = append(errs, errors.New("every must be positive"))
		}
		if o.Duration == 0 {
			errs = append(errs, errors.New("duration must be positive"))
		}
		if o.Every > 0 && o.Duration > o.Every {
			errs = append(errs, fmt.Errorf("duration %v is longer than every %v", o.Duration, o.Every))
		}
	case len(o.Windows) == 0:
		errs = append(errs, errors.New("no windows and no period: give windows or every and duration"))
	default:
		for i, w := range o.Windows {
			if w.Start < 0 {
				errs = append(errs, fmt.Errorf("window %d: start %v is negative", i, w.Start))
			}
			if w.Duration <= 0 {
				errs = append(errs, fmt.Errorf("window %d: duration %v is not positive", i, w.Duration))
			}
			if i > 0 && w.Start < o.Windows[i-1].End() {
				errs = append(errs, fmt.Errorf("window %d starts at %v, before window %d ends at %v", i, w.Start, i-1, o.Windows[i-1].End()))
			}
		}
	}
	return errors.Join(errs...)
}

// Active returns the window containing off (counted from the epoch), if any.
func (o *Outage) Active(off time.Duration) (OutageWindow, bool) {
	if len(o.Windows) > 0 {
		// The first window ending after off is the only one that can hold it.
		i := sort.Search(len(o.Windows), func(i int) bool { return o.Windows[i].End() > off })
		if i < len(o.Windows) && off >= o.Windows[i].Start {
			return o.Windows[i], true
		}
		return OutageWindow{}, false
	}
	if o.Every <= 0 || off < o.Offset {
		return OutageWindow{}, false
	}
	k := (off - o.Offset) / o.Every
	w := OutageWindow{Start: o.Offset + k*o.Every, Duration: o.Duration}
	return w, off < w.End()
}

// Apply implements Impairment.
func (o *Outage) Apply(_ *Packet, at time.Time, env *Env) Verdict {
	w, dark := o.Active(at.Sub(env.Epoch))
	switch {
	case !dark:
		return Verdict{At: at}
	case o.mode() == OutageHold:
		// Every held packet gets the same instant; the link delivers equal
		// instants in the order it decided them, so the burst keeps order.
		return Verdict{At: env.Epoch.Add(w.End())}
	default:
		return Verdict{Drop: DropOutage}
	}
}
