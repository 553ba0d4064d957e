package viewer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
)

// keyframeRetry is how long an unanswered keyframe request holds back the
// next one: a burst of broken frames asks once, and a lost cause is asked
// again.
const keyframeRetry = 100 * time.Millisecond

// control is the viewer's end of the bidirectional control stream. Several
// goroutines send on it (acks, reports, probes, keyframe requests), so
// writes go one message at a time under a lock: interleaved bytes would
// break the framing for good.
type control struct {
	st *quic.Stream

	mu chanLock // serialises writes; guards the fields below
	// probes holds the send instant (viewer's clock) of every probe not
	// yet answered: the viewer trusts its own T1, not the echo.
	probes      map[uint32]time.Time
	nextProbe   uint32
	keyframeAsk time.Time // when the outstanding request was sent; zero if none
}

func newControl(st *quic.Stream) *control {
	return &control{st: st, mu: make(chanLock, 1), probes: map[uint32]time.Time{}}
}

// chanLock is a mutex made of a channel. A write can block on the
// stream's flow control while others wait for the lock; in a synctest
// bubble a goroutine waiting on a channel is durably blocked and one
// waiting on a sync.Mutex is not, so with a sync.Mutex the bubble's clock
// would stop for good, and with it the network that would bring the
// credit the write waits for (the viewer asks for keyframes often on a
// lossy link, and each ask is a write under the lock).
type chanLock chan struct{}

func (l chanLock) Lock()   { l <- struct{}{} }
func (l chanLock) Unlock() { <-l }

// send writes one message.
func (c *control) send(m wire.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.write(m)
}

// write writes one message; c.mu is held.
func (c *control) write(m wire.Message) error {
	if _, err := c.st.Write(wire.AppendMessage(nil, m)); err != nil {
		return fmt.Errorf("viewer: control stream: send %T: %w", m, err)
	}
	return nil
}

// send sends a message, ending the session if the control stream fails:
// without it there are no acks, and the agent's send cap would stall.
func (v *Viewer) send(m wire.Message) {
	if err := v.ctl.send(m); err != nil {
		v.stop(err)
	}
}

// probe sends a clock probe stamped with the viewer's clock.
func (v *Viewer) probe() error {
	c := v.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextProbe++
	t1 := v.clock.Now()
	c.probes[c.nextProbe] = t1
	return c.write(&wire.ClockProbe{ID: c.nextProbe, T1: t1})
}

// requestKeyframe asks the agent for an intra frame after a broken one,
// unless a request is already outstanding and recent.
func (v *Viewer) requestKeyframe() {
	v.request(&wire.KeyframeRequest{}, AskKeyframe, func(c *Counters) { c.KeyframeRequests++ })
}

// requestRefresh asks the agent for a rolling intra refresh, unless a
// request (of either repair) is already outstanding and recent.
func (v *Viewer) requestRefresh() {
	v.request(&wire.RefreshRequest{}, AskRefresh, func(c *Counters) { c.RefreshRequests++ })
}

// request sends a repair request, at most one per keyframeRetry until
// the repair starts arriving, and records it.
func (v *Viewer) request(m wire.Message, what string, count func(*Counters)) {
	c := v.ctl
	c.mu.Lock()
	now := time.Now()
	if !c.keyframeAsk.IsZero() && now.Sub(c.keyframeAsk) < keyframeRetry {
		c.mu.Unlock()
		return
	}
	c.keyframeAsk = now
	err := c.write(m)
	c.mu.Unlock()
	if err != nil {
		v.stop(err)
		return
	}
	v.counters.add(count)
	v.cfg.Recorder.Event(groundtruth.Event{At: now, Kind: EventAsk, Reason: what})
}

// keyframeArrived clears the outstanding request when a repair (a
// keyframe, or a refresh's first frame) arrives: the next broken frame
// asks again at once.
func (v *Viewer) keyframeArrived() {
	v.ctl.mu.Lock()
	v.ctl.keyframeAsk = time.Time{}
	v.ctl.mu.Unlock()
}

// readControl reads the agent's messages until the stream ends. A message
// that does not parse ends the session: the stream's framing can no longer
// be trusted, and without the control stream there are no acks.
func (v *Viewer) readControl() {
	r := bufio.NewReader(v.ctl.st)
	for {
		m, err := wire.ReadMessage(r)
		switch {
		case errors.Is(err, io.EOF):
			v.stop(errAgentEnded)
			return
		case err != nil:
			v.stop(fmt.Errorf("viewer: control stream: %w", err))
			return
		}
		if reply, ok := m.(*wire.ClockReply); ok {
			v.clockReply(reply)
		}
		// Anything else is not for the viewer; a newer agent may send
		// more, and ignoring it keeps the session.
	}
}

// clockReply completes an exchange.
func (v *Viewer) clockReply(m *wire.ClockReply) {
	t4 := v.clock.Now()
	c := v.ctl
	c.mu.Lock()
	t1, ok := c.probes[m.ID]
	delete(c.probes, m.ID)
	c.mu.Unlock()
	if !ok {
		return // not a probe of ours, or answered twice
	}
	v.estimator.Add(NewClockSample(t1, m.T2, m.T3, t4))
	v.counters.add(func(c *Counters) { c.ClockSamples++ })
}

// probeLoop sends the rest of the start-up burst, then probes every
// ClockProbeEvery on average. Each gap is drawn uniformly between half and
// one and a half times its mean: probes at a fixed period lock onto the
// phase of the video (1 s is exactly 60 frames) and can land behind the same
// frame every time, so that no reply ever crosses an empty queue and
// min-RTT filtering has nothing to choose from. The first probe of the burst
// was sent when the stream opened.
func (v *Viewer) probeLoop(ctx context.Context, rng *rand.Rand) {
	for i := 1; ; i++ {
		mean := v.cfg.ClockProbeEvery
		if i < v.cfg.ClockBurst {
			mean = clockBurstGap
		}
		if !sleep(ctx, mean/2+time.Duration(rng.Int64N(int64(mean)))) {
			return
		}
		if err := v.probe(); err != nil {
			v.stop(err)
			return
		}
	}
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
