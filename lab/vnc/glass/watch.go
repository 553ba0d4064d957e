package glass

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// Sighting is a marker's version first seen on the display, with what
// bounds its presentation: the X server carried out the read that saw it
// after Asked and before At, and the read before it, which did not show
// it, after PrevAsked. So the version was presented after PrevAsked and
// by At: taking At as the presentation is late by at most
// At - PrevAsked (Error), one read's interval and its round trip.
type Sighting struct {
	Version   uint32
	At        time.Time
	Asked     time.Time
	PrevAsked time.Time
}

// Error bounds how late At is against the version's real presentation.
func (s Sighting) Error() time.Duration { return s.At.Sub(s.PrevAsked) }

// WatchStats counts a watch's reads.
type WatchStats struct {
	// Reads is how many times the marker's rectangle was read; Unreadable
	// how many of them read no marker (a viewer mid-draw, or the marker
	// covered).
	Reads, Unreadable int
	// MaxGap is the longest time between two reads' requests.
	MaxGap time.Duration
}

// Locate grabs the whole display every interval until Find finds a marker
// at one of blocks whose version want accepts, or ctx ends.
func (d *Display) Locate(ctx context.Context, blocks []float64, interval time.Duration, want func(uint32) bool) (Placement, uint32, error) {
	f := &codec.Frame{}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return Placement{}, 0, fmt.Errorf("glass: no marker found on the display (block sizes %v): %w", blocks, context.Cause(ctx))
		case <-t.C:
		}
		if err := d.Grab(d.Whole(), f); err != nil {
			return Placement{}, 0, err
		}
		if p, v, ok := Find(f, blocks, want); ok {
			return p, v, nil
		}
		t.Reset(interval)
	}
}

// Watch reads the marker's rectangle at p every interval (as soon as it
// can when a read takes longer) until ctx ends, and calls seen with every
// version it reads that differs from the last one read. A version read
// again after another (a viewer that went back) is seen again. It returns
// its counts when ctx ends, or the first error reading the display.
func (d *Display) Watch(ctx context.Context, p Placement, interval time.Duration, seen func(Sighting)) (WatchStats, error) {
	var st WatchStats
	r := p.Rect()
	if r.X+r.W > d.W || r.Y+r.H > d.H {
		return st, fmt.Errorf("glass: marker at %+v outside the %dx%d display", p, d.W, d.H)
	}
	f := codec.NewFrame(r.W, r.H)
	// A thread of its own: the reads' instants are the measurement, and a
	// goroutine moved between threads wakes later now and then.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var last uint32
	var have bool
	var prevAsked time.Time
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return st, nil
		case <-t.C:
		}
		asked := time.Now()
		if err := d.Grab(r, f); err != nil {
			if ctx.Err() != nil {
				return st, nil
			}
			return st, err
		}
		at := time.Now()
		if !prevAsked.IsZero() {
			st.MaxGap = max(st.MaxGap, asked.Sub(prevAsked))
		}
		st.Reads++
		v, ok := Read(f, p)
		switch {
		case !ok:
			st.Unreadable++
		case !have || v != last:
			if !prevAsked.IsZero() {
				seen(Sighting{Version: v, At: at, Asked: asked, PrevAsked: prevAsked})
			}
			last, have = v, true
		}
		prevAsked = asked
		t.Reset(max(0, interval-time.Since(asked)))
	}
}
