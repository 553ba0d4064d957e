package lab

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/scenarios"
)

// metricsObserver turns the ground truth's changes into metrics as they
// are recorded: the recorder is the one place that sees every frame's true
// instants, whichever component set them.
type metricsObserver struct {
	m *metrics.Metrics
	// arrived counts the video's bytes by arrival: the session's flow
	// (main) in the flows' metrics.
	arrived *atomic.Int64
}

// FrameChanged implements groundtruth.Observer. A frame counts at the
// update that first sets an instant, so an instant rewritten later (none
// is today) would not count twice.
func (o metricsObserver) FrameChanged(before, after groundtruth.Frame) {
	if before.Sent.IsZero() && !after.Sent.IsZero() {
		o.m.FrameSent(after.Bytes)
	}
	if before.Arrived.IsZero() && !after.Arrived.IsZero() {
		o.m.FrameArrived(after.Network())
		o.arrived.Add(int64(after.Bytes))
	}
	if before.Displayed.IsZero() && !after.Displayed.IsZero() {
		o.m.FrameDisplayed(after.Latency())
		if after.Damaged {
			o.m.FrameDamaged()
		}
	}
}

// EventRecorded implements groundtruth.Observer.
func (o metricsObserver) EventRecorded(e groundtruth.Event) {
	switch e.Kind {
	case result.EventSkip:
		o.m.FrameSkipped(e.Reason)
	case result.EventDrop:
		o.m.FrameDropped(e.Reason)
	case result.EventAsk:
		o.m.RepairAsked(e.Reason)
	}
}

// linkFeed turns the links' cumulative counters, read at each sample, into
// the metrics' periods. The first sample, at time zero, only sets the
// reference, so that the counters count from time zero as the result's
// link totals do, the handshake's traffic left out.
type linkFeed struct {
	m    *metrics.Metrics
	prev *Sample
}

func newLinkFeed(m *metrics.Metrics) *linkFeed { return &linkFeed{m: m} }

func (f *linkFeed) feed(s Sample) {
	if f.m == nil {
		return
	}
	if f.prev == nil {
		f.m.Link(metrics.Up, metrics.LinkSample{QueueBytes: int64(s.Uplink.Backlog.Bytes)})
		f.m.Link(metrics.Down, metrics.LinkSample{QueueBytes: int64(s.Downlink.Backlog.Bytes)})
	} else {
		f.m.Link(metrics.Up, metrics.LinkSampleOf(f.prev.Uplink, s.Uplink))
		f.m.Link(metrics.Down, metrics.LinkSampleOf(f.prev.Downlink, s.Downlink))
	}
	f.prev = &s
}

// flowFeed turns the flows' payload, counted as it arrives (the traffic's
// meters, the session's video by arrival), into the metrics' periods at
// each sample, with each flow's share of its link's capacity in the
// period. It feeds nothing for a session without traffic.
type flowFeed struct {
	m        *metrics.Metrics
	traffic  []traffic.Flow
	run      *traffic.Run // set once the flows start
	main     *atomic.Int64
	capacity func(up bool, a, b time.Duration) (bits float64, capped bool)
	prev     []int64 // main, then each flow, at prevAt
	prevAt   time.Duration
}

func newFlowFeed(m *metrics.Metrics, traffic []traffic.Flow, main *atomic.Int64, capacity func(bool, time.Duration, time.Duration) (float64, bool)) *flowFeed {
	if len(traffic) == 0 {
		m = nil
	}
	return &flowFeed{m: m, traffic: traffic, main: main, capacity: capacity, prev: make([]int64, len(traffic)+1)}
}

// feed takes the sample at instant at from time zero.
func (f *flowFeed) feed(at time.Duration) {
	if f.m == nil || at <= f.prevAt {
		return
	}
	cur := make([]int64, len(f.prev))
	cur[0] = f.main.Load()
	if f.run != nil {
		for i, m := range f.run.Meters() {
			cur[i+1] = m.Total()
		}
	}
	for i := range cur {
		name, up := scenarios.MainFlow, false
		if i > 0 {
			name, up = f.traffic[i-1].Name, f.traffic[i-1].DataUp()
		}
		dir := metrics.Down
		if up {
			dir = metrics.Up
		}
		s := metrics.FlowSample{DeliveredBytes: uint64(cur[i] - f.prev[i])}
		if f.capacity != nil {
			if bits, capped := f.capacity(up, f.prevAt, at); capped && bits > 0 {
				s.Share, s.Capped = float64(s.DeliveredBytes*8)/bits, true
			}
		}
		f.m.Flow(name, dir, s)
	}
	f.prev, f.prevAt = cur, at
}

// decisionFeed counts an adaptive controller's new decisions at each
// sample. The controllers keep their decisions rather than announce them,
// and the target's changes do not say which rule made them (nor that one
// GCC decision is a run of many small changes), so they are read back; reading at the samples keeps the
// copy of the list off the per-frame path.
type decisionFeed struct {
	m    *metrics.Metrics
	read func(start time.Time) []result.DecisionRecord
	seen int
}

func newDecisionFeed(m *metrics.Metrics, c agent.Controller) *decisionFeed {
	if m == nil {
		return &decisionFeed{}
	}
	return &decisionFeed{m: m, read: plan.Decisions(c)}
}

func (f *decisionFeed) feed() {
	if f.read == nil {
		return
	}
	ds := f.read(time.Time{})
	for _, d := range ds[min(f.seen, len(ds)):] {
		f.m.Decision(d.Rule)
	}
	f.seen = max(f.seen, len(ds))
}

// RunWithMetrics is Run with the session feeding m as it goes
// (Session.Metrics): for a real-time run served on /metrics, or a test
// that compares the live figures with the result.
func RunWithMetrics(ctx context.Context, sc *scenarios.Scenario, m *metrics.Metrics) (*result.Run, error) {
	return runConfigured(ctx, sc, func(s *Session) { s.Metrics = m })
}

// runConfigured is Run with configure setting what the scenario does not
// say (metrics, capture, the clock's kind) on the session before it runs.
func runConfigured(ctx context.Context, sc *scenarios.Scenario, configure func(*Session)) (*result.Run, error) {
	p, err := plan.Convert(sc)
	if err != nil {
		return nil, fmt.Errorf("scenario %q: %w", nameOf(sc), err)
	}
	s := sessionOf(p)
	s.Lead = HandshakeLead
	if p.Path != nil {
		s.Lead = PathLead
	}
	s.SampleEvery = result.DefaultSampleEvery
	s.capacity = func(up bool, a, b time.Duration) (float64, bool) {
		caps := p.DownlinkCapacity
		if up {
			caps = p.UplinkCapacity
		}
		bits, capped := caps.Between(a, b)
		return bits, capped > 0
	}
	configure(&s)
	res, err := RunSessionContext(ctx, s)
	if res == nil {
		return nil, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	r := newScenarioResult(sc, p, s, res, err)
	if err != nil {
		return r, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	return r, nil
}
