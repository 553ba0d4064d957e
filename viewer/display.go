package viewer

import (
	"context"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
)

// screen holds the decoded frames waiting for the display. With the N8 fix
// at most one waits, the last decoded: a newer frame overtakes it, and the
// overtaken one is dropped. With the old behaviour every decoded frame
// waits its turn, in order.
type screen struct {
	showEvery bool
	overtaken func(*frame)

	mu      sync.Mutex
	waiting []*frame
	wake    chan struct{}
}

func newScreen(showEvery bool, overtaken func(*frame)) *screen {
	return &screen{showEvery: showEvery, overtaken: overtaken, wake: make(chan struct{}, 1)}
}

// decoded hands the display a frame.
func (s *screen) decoded(f *frame) {
	s.mu.Lock()
	var old []*frame
	if !s.showEvery {
		old = s.waiting
		s.waiting = nil
	}
	s.waiting = append(s.waiting, f)
	s.mu.Unlock()
	for _, o := range old {
		s.overtaken(o)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wait waits until a frame is waiting; false when ctx ends.
func (s *screen) wait(ctx context.Context) bool {
	for {
		s.mu.Lock()
		n := len(s.waiting)
		s.mu.Unlock()
		if n > 0 {
			return true
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return false
		}
	}
}

// take removes the frame to show next: the oldest waiting with the old
// behaviour, the only one with the fix. Only the display loop takes, after
// wait, so there is always one.
func (s *screen) take() *frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.waiting[0]
	s.waiting[0] = nil
	s.waiting = s.waiting[1:]
	return f
}

// displayLoop is the display model. A present starts on the next refresh
// tick at or after the moment a frame waits and the previous present has
// ended (at once without vsync), takes the frame to show at that moment,
// and lasts Present; the frame is on the screen when it ends.
func (v *Viewer) displayLoop(ctx context.Context) {
	for {
		if !v.screen.wait(ctx) {
			return
		}
		if r := v.cfg.Refresh; r > 0 {
			since := time.Since(v.start)
			ticks := (since + r - 1) / r
			if !sleep(ctx, v.start.Add(ticks*r).Sub(time.Now())) {
				return
			}
		}
		f := v.screen.take()
		if !sleep(ctx, v.cfg.Present) {
			return
		}
		v.displayed(f, time.Now())
	}
}

// displayed records a frame reaching the screen at the true instant shown,
// with the viewer's own latency figures for it (N1, N12). Until the first
// clock exchange completes the viewer cannot convert the agent's times, and
// the frame counts as displayed without figures.
func (v *Viewer) displayed(f *frame, shown time.Time) {
	shownLocal := v.clock.At(shown)
	captured, ok1 := v.estimator.ToViewer(f.h.Capture)
	encoded, ok2 := v.estimator.ToViewer(f.h.EncodeEnd)
	ok := ok1 && ok2
	latency, network := shownLocal.Sub(captured), f.arrivedLocal.Sub(encoded)
	v.cfg.Recorder.Update(f.h.Seq, func(g *groundtruth.Frame) {
		g.Displayed = shown
		if ok {
			g.Estimated, g.EstimatedNetwork = latency, network
		}
	})
	v.counters.add(func(c *Counters) { c.Displayed++ })
	if ok {
		v.figures.add(latency, network)
	}
}
