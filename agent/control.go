package agent

import (
	"bufio"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/wire"
)

// control serves the viewer's control stream: it answers clock probes on the
// agent's own clock, feeds reports (and with each the connection's packet
// loss) to the bitrate controller, releases
// acknowledged bytes from the send cap, and notes keyframe requests.
type control struct {
	clock      *clock.Clock
	sender     *sender
	controller Controller
	// packets reads the connection's packets sent and declared lost, for a
	// LossObserver; nil reads nothing.
	packets func() (sent, lost uint64)

	mu       sync.Mutex
	reports  []wire.Report
	keyframe atomic.Bool
	refresh  atomic.Bool
	bad      atomic.Int64 // control messages refused
}

// serve reads the stream until it ends. A malformed message is counted and
// ends the control stream (its framing can no longer be trusted); frames
// keep flowing.
func (c *control) serve(st *quic.Stream) error {
	r := bufio.NewReader(st)
	for {
		m, err := wire.ReadMessage(r)
		if err != nil {
			if errors.Is(err, wire.ErrBadMessage) {
				c.bad.Add(1)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch m := m.(type) {
		case *wire.ClockProbe:
			t2 := c.clock.Now()
			reply := &wire.ClockReply{ID: m.ID, T1: m.T1, T2: t2, T3: c.clock.Now()}
			if err := wire.WriteMessage(st, reply); err != nil {
				return err
			}
		case *wire.Report:
			c.mu.Lock()
			c.reports = append(c.reports, *m)
			c.mu.Unlock()
			now := time.Now()
			c.controller.Report(now, *m)
			if lo, ok := c.controller.(LossObserver); ok && c.packets != nil {
				sent, lost := c.packets()
				lo.Loss(now, sent, lost)
			}
		case *wire.Ack:
			if f, ok := c.sender.ack(m.Seq); ok && c.sender.observer != nil {
				c.sender.observer.FrameAcked(time.Now(), m.Seq, f.bytes, f.sent, m.Arrived)
			}
		case *wire.KeyframeRequest:
			c.keyframe.Store(true)
		case *wire.RefreshRequest:
			c.refresh.Store(true)
		}
	}
}

// takeKeyframeRequest reports whether a keyframe was asked for since the
// last call.
func (c *control) takeKeyframeRequest() bool { return c.keyframe.Swap(false) }

// takeRefreshRequest reports whether a rolling refresh was asked for
// since the last call.
func (c *control) takeRefreshRequest() bool { return c.refresh.Swap(false) }

// received returns a copy of the reports received so far.
func (c *control) received() []wire.Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]wire.Report(nil), c.reports...)
}
