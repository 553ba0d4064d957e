package viewer

import (
	"maps"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
)

// Drop reasons, as the counters and the ground truth name them.
const (
	// ReasonCorrupt: the frame's header did not parse.
	ReasonCorrupt = "corrupt"
	// ReasonTruncated: the frame's stream ended or was reset before the
	// whole frame arrived.
	ReasonTruncated = "truncated"
	// ReasonOvertaken: a newer frame was decoded before this one could be
	// shown (the N8 fix shows only the last decoded frame).
	ReasonOvertaken = "overtaken"
	// ReasonLate: the frame reached the decoder after a newer one had been
	// decoded; showing it would step the picture back in time.
	ReasonLate = "late"
)

// EventAsk is the ground-truth event kind of every request for a repair
// the viewer sends; its reason is AskKeyframe or AskRefresh.
const (
	EventAsk    = "ask"
	AskKeyframe = "keyframe"
	AskRefresh  = "refresh"
)

// EventDrop is the ground-truth event kind of every drop.
const EventDrop = "drop"

// Counters are a viewer's running totals, for the lab and its reports.
type Counters struct {
	// Received counts frames that arrived whole.
	Received int64
	// Bytes counts bytes read from frame streams, headers included, whole
	// frames or not.
	Bytes int64
	// Decoded and Displayed count frames through each stage.
	Decoded, Displayed int64
	// Dropped counts frames never displayed, by reason (Reason*).
	Dropped map[string]int64
	// Damaged counts frames decoded onto a broken reference chain.
	Damaged int64
	// KeyframeRequests and RefreshRequests count requests for a repair
	// sent to the agent.
	KeyframeRequests, RefreshRequests int64
	// ClockSamples counts clock exchanges completed.
	ClockSamples int64
	// Reports counts reports sent.
	Reports int64
}

// counters is the viewer's live copy, behind a lock shared by every
// goroutine of the session.
type counters struct {
	mu sync.Mutex
	c  Counters
}

func (c *counters) add(fn func(*Counters)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(&c.c)
}

func (c *counters) snapshot() Counters {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.c
	s.Dropped = maps.Clone(c.c.Dropped)
	if s.Dropped == nil {
		s.Dropped = map[string]int64{}
	}
	return s
}

// drop counts a dropped frame and records it in the ground truth. seq is 0
// when the frame's header could not be read.
func (v *Viewer) drop(seq uint64, reason string) {
	v.counters.add(func(c *Counters) {
		if c.Dropped == nil {
			c.Dropped = map[string]int64{}
		}
		c.Dropped[reason]++
	})
	v.cfg.Recorder.Event(groundtruth.Event{At: time.Now(), Kind: EventDrop, Reason: reason, Seq: seq})
	if seq != 0 {
		v.cfg.Recorder.Update(seq, func(f *groundtruth.Frame) { f.Dropped = reason })
	}
}
