// Package metrics owns the lab's Prometheus metrics: their names, types,
// units, help and buckets, registered on a registerer the caller injects
// (never the global one, so that sessions running side by side in tests
// keep their figures apart). A session feeds a *Metrics as it runs
// (lab.Session.Metrics); a finished run's result is replayed through the
// same metrics to export it with timestamps (lab.WriteOpenMetrics), so a
// live dashboard and a past run share one vocabulary.
//
// Names follow lab_<subsystem>_<name>_<unit> in base units (seconds,
// bytes); counters end in _total. Label values come from the code's own
// constants (skip, drop and decision reasons, link directions), never from
// data, so every label's cardinality is bounded; the one exception is the
// flow label, a name from the scenario's traffic list (or main), bounded
// by that list.
package metrics

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/agent/gcc"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/viewer"
)

// Metric names, for queries and dashboards.
const (
	FrameLatency        = "lab_frame_latency_seconds"
	FrameNetworkLatency = "lab_frame_network_latency_seconds"
	FramesSent          = "lab_frames_sent_total"
	FramesDisplayed     = "lab_frames_displayed_total"
	FramesSkipped       = "lab_frames_skipped_total"
	FramesDropped       = "lab_frames_dropped_total"
	FramesDamaged       = "lab_frames_damaged_total"
	RepairsAsked        = "lab_repairs_asked_total"
	VideoSentBytes      = "lab_video_sent_bytes_total"
	ABRTargetRate       = "lab_abr_target_rate_bytes_per_second"
	ABRDecisions        = "lab_abr_decisions_total"
	LinkQueueBytes      = "lab_link_queue_bytes"
	LinkQueueDelay      = "lab_link_queue_delay_seconds"
	LinkDeliveredBytes  = "lab_link_delivered_bytes_total"
	LinkDroppedPackets  = "lab_link_dropped_packets_total"
	FlowDeliveredBytes  = "lab_flow_delivered_bytes_total"
	FlowShare           = "lab_flow_share_ratio"
)

// Link directions, the values of the direction label: Up carries the
// viewer's reports and acknowledgements, Down the video.
const (
	Up   = "up"
	Down = "down"
)

// LatencyBuckets are the upper bounds, in seconds, of the latency
// histograms: 5 ms (a LAN frame) to 5 s (a frame stuck behind a bloated
// queue), closest around 20-300 ms, where the thresholds the ABR and the
// findings care about lie.
var LatencyBuckets = []float64{0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2, 5}

// Metrics are one session's figures. Its methods are safe for concurrent
// use and do nothing on a nil *Metrics, so a component can hold one
// unconditionally.
type Metrics struct {
	frameLatency, networkLatency prometheus.Histogram
	framesSent, framesDisplayed  prometheus.Counter
	framesSkipped, framesDropped *prometheus.CounterVec
	framesDamaged                prometheus.Counter
	repairsAsked                 *prometheus.CounterVec
	sentBytes                    prometheus.Counter
	target                       prometheus.Gauge
	decisions                    *prometheus.CounterVec
	queueBytes, queueDelay       *prometheus.GaugeVec
	delivered, linkDropped       *prometheus.CounterVec
	flowDelivered                *prometheus.CounterVec
	flowShare                    *prometheus.GaugeVec
}

// New makes a session's metrics and registers them on reg, each with the
// constant labels (a scenario's name, say; nil for none). It fails when
// reg already holds metrics of the same names and labels, and then
// registers nothing.
func New(reg prometheus.Registerer, labels prometheus.Labels) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil registerer")
	}
	m := &Metrics{
		frameLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    FrameLatency,
			Help:    "True capture-to-display latency of the frames displayed.",
			Buckets: LatencyBuckets,
		}),
		networkLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    FrameNetworkLatency,
			Help:    "True network part of the frames' latency: end of encoding to arrival of the whole frame.",
			Buckets: LatencyBuckets,
		}),
		framesSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: FramesSent,
			Help: "Frames the agent handed to QUIC, refinement passes included.",
		}),
		framesDisplayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: FramesDisplayed,
			Help: "Frames the viewer displayed.",
		}),
		framesSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: FramesSkipped,
			Help: "Captures the agent skipped, by reason.",
		}, []string{"reason"}),
		framesDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: FramesDropped,
			Help: "Frames the viewer dropped without displaying them, by reason.",
		}, []string{"reason"}),
		framesDamaged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: FramesDamaged,
			Help: "Frames the viewer displayed with a damaged picture: decoded onto a broken reference chain.",
		}),
		repairsAsked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: RepairsAsked,
			Help: "Repairs of a broken reference chain the viewer asked the agent for, by kind (keyframe, refresh).",
		}, []string{"kind"}),
		sentBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: VideoSentBytes,
			Help: "Encoded video the agent handed to QUIC; its rate is the send rate.",
		}),
		target: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: ABRTargetRate,
			Help: "Rate the rate controller asks the encoder for, in bytes per second (its bits per second / 8).",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ABRDecisions,
			Help: "Changes an adaptive rate controller (ABR, GCC) made, by rule.",
		}, []string{"rule"}),
		queueBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: LinkQueueBytes,
			Help: "Bytes waiting in the link's bottleneck queue, by direction.",
		}, []string{"direction"}),
		queueDelay: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: LinkQueueDelay,
			Help: "Mean wait in the link's bottleneck queue of the packets that reached it during the last sampling period, by direction.",
		}, []string{"direction"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: LinkDeliveredBytes,
			Help: "Bytes the link delivered (QUIC headers and acknowledgements included), by direction.",
		}, []string{"direction"}),
		linkDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: LinkDroppedPackets,
			Help: "Packets the link dropped, by direction and reason.",
		}, []string{"direction", "reason"}),
		flowDelivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: FlowDeliveredBytes,
			Help: "Payload a flow's receiver got (the session's video by arrival for main and session flows); its rate is the flow's throughput. By flow (main, or a name of the scenario's traffic) and the direction its data goes.",
		}, []string{"flow", "direction"}),
		flowShare: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: FlowShare,
			Help: "A flow's payload over the last sampling period as a fraction of the capacity of the link its data crossed; absent while that link has no bottleneck. By flow and direction.",
		}, []string{"flow", "direction"}),
	}
	// Every known label value starts at zero, so that a dashboard shows
	// "none yet" rather than "no data", and rate() sees a counter's
	// first increase.
	for _, r := range []string{agent.SkipSendCap, agent.SkipUnavailable, agent.SkipRateControl} {
		m.framesSkipped.WithLabelValues(r)
	}
	for _, r := range []string{viewer.ReasonCorrupt, viewer.ReasonTruncated, viewer.ReasonOvertaken, viewer.ReasonLate} {
		m.framesDropped.WithLabelValues(r)
	}
	for _, k := range []string{viewer.AskKeyframe, viewer.AskRefresh} {
		m.repairsAsked.WithLabelValues(k)
	}
	for _, r := range []string{abr.RuleDecrease, abr.RuleIncrease, abr.RuleClamp,
		gcc.RuleDelayDecrease, gcc.RuleDelayIncrease, gcc.RuleDelayAdditive, gcc.RuleLossDecrease, gcc.RuleLossIncrease} {
		m.decisions.WithLabelValues(r)
	}
	for _, d := range []string{Up, Down} {
		m.queueBytes.WithLabelValues(d)
		m.queueDelay.WithLabelValues(d)
		m.delivered.WithLabelValues(d)
		for _, r := range []netem.DropReason{netem.DropLoss, netem.DropQueue, netem.DropCoDel, netem.DropPIE, netem.DropDualPI2, netem.DropOutage,
			netem.DropBlocked, netem.DropClosed, netem.DropNoRoute, netem.DropRecvBuf, netem.DropMTU} {
			m.linkDropped.WithLabelValues(d, string(r))
		}
	}

	if err := register(reg, labels, m.frameLatency, m.networkLatency, m.framesSent, m.framesDisplayed, m.framesSkipped,
		m.framesDropped, m.framesDamaged, m.repairsAsked, m.sentBytes, m.target, m.decisions, m.queueBytes, m.queueDelay, m.delivered, m.linkDropped,
		m.flowDelivered, m.flowShare); err != nil {
		return nil, err
	}
	return m, nil
}

// NewLinks makes metrics of the links only (queue, delivered, dropped) and
// registers them on reg: what a program's traffic through the lab's links
// shows (lab shell), where there are no frames or controller to count. Its
// other methods then count nothing anyone can read.
func NewLinks(reg prometheus.Registerer, labels prometheus.Labels) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil registerer")
	}
	m, err := New(prometheus.NewRegistry(), nil) // every metric made, none exposed
	if err != nil {
		return nil, err
	}
	if err := register(reg, labels, m.queueBytes, m.queueDelay, m.delivered, m.linkDropped); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers cs on reg with the constant labels, all or none.
func register(reg prometheus.Registerer, labels prometheus.Labels, cs ...prometheus.Collector) error {
	wrapped := prometheus.WrapRegistererWith(labels, reg)
	var done []prometheus.Collector
	for _, c := range cs {
		if err := wrapped.Register(c); err != nil {
			for _, d := range done {
				wrapped.Unregister(d)
			}
			return fmt.Errorf("metrics: %w", err)
		}
		done = append(done, c)
	}
	return nil
}

// FrameSent counts a frame of bytes handed to QUIC.
func (m *Metrics) FrameSent(bytes int) {
	if m == nil {
		return
	}
	m.framesSent.Inc()
	m.sentBytes.Add(float64(bytes))
}

// FrameArrived observes a frame's network part (end of encoding to
// arrival).
func (m *Metrics) FrameArrived(network time.Duration) {
	if m == nil {
		return
	}
	m.networkLatency.Observe(network.Seconds())
}

// FrameDisplayed counts a frame displayed with its capture-to-display
// latency.
func (m *Metrics) FrameDisplayed(latency time.Duration) {
	if m == nil {
		return
	}
	m.framesDisplayed.Inc()
	m.frameLatency.Observe(latency.Seconds())
}

// FrameSkipped counts a capture the agent skipped, by one of the agent's
// Skip* reasons.
func (m *Metrics) FrameSkipped(reason string) {
	if m == nil {
		return
	}
	m.framesSkipped.WithLabelValues(reason).Inc()
}

// FrameDropped counts a frame the viewer dropped, by one of the viewer's
// Reason* reasons.
func (m *Metrics) FrameDropped(reason string) {
	if m == nil {
		return
	}
	m.framesDropped.WithLabelValues(reason).Inc()
}

// FrameDamaged counts a frame the viewer displayed with a damaged picture.
func (m *Metrics) FrameDamaged() {
	if m == nil {
		return
	}
	m.framesDamaged.Inc()
}

// RepairAsked counts a repair the viewer asked for: viewer.AskKeyframe or
// viewer.AskRefresh.
func (m *Metrics) RepairAsked(kind string) {
	if m == nil {
		return
	}
	m.repairsAsked.WithLabelValues(kind).Inc()
}

// Target sets the controller's bitrate, given in bits per second as the
// controllers speak and kept in bytes per second, Prometheus's base unit.
func (m *Metrics) Target(bps int64) {
	if m == nil {
		return
	}
	m.target.Set(float64(bps) / 8)
}

// Decision counts a controller's decision by its rule (abr.Rule*,
// gcc.Rule*).
func (m *Metrics) Decision(rule string) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(rule).Inc()
}

// LinkSample is what one direction of the network did over one sampling
// period: the same figures as a result's time series holds, so that a live
// run and a replayed one agree.
type LinkSample struct {
	// QueueBytes is what waited in the bottleneck's queue at the end.
	QueueBytes int64
	// QueueDelay is the mean wait of the packets that reached the
	// bottleneck during the period; 0 when none did.
	QueueDelay time.Duration
	// DeliveredBytes is what the link delivered during the period.
	DeliveredBytes uint64
	// Dropped counts the packets dropped during the period, by reason.
	Dropped map[string]uint64
}

// LinkSampleOf is the sample of the period between a link's counters prev
// and cur.
func LinkSampleOf(prev, cur netem.Stats) LinkSample {
	s := LinkSample{
		QueueBytes:     int64(cur.Backlog.Bytes),
		DeliveredBytes: cur.Delivered.Bytes - prev.Delivered.Bytes,
	}
	if n := cur.Queued.Packets - prev.Queued.Packets; n > 0 {
		s.QueueDelay = (cur.Queued.Total - prev.Queued.Total) / time.Duration(n)
	}
	for r, c := range cur.Dropped {
		if n := c.Packets - prev.Dropped[r].Packets; n > 0 {
			if s.Dropped == nil {
				s.Dropped = map[string]uint64{}
			}
			s.Dropped[string(r)] = n
		}
	}
	return s
}

// Link feeds one sampling period of the link in direction (Up or Down).
func (m *Metrics) Link(direction string, s LinkSample) {
	if m == nil {
		return
	}
	m.queueBytes.WithLabelValues(direction).Set(float64(s.QueueBytes))
	m.queueDelay.WithLabelValues(direction).Set(s.QueueDelay.Seconds())
	m.delivered.WithLabelValues(direction).Add(float64(s.DeliveredBytes))
	for r, n := range s.Dropped {
		m.linkDropped.WithLabelValues(direction, r).Add(float64(n))
	}
}

// FlowSample is what one flow got over one sampling period.
type FlowSample struct {
	// DeliveredBytes is the payload its receiver got in the period.
	DeliveredBytes uint64
	// Share is that over the capacity of its link in the period, when
	// Capped says the link had a bottleneck (else it is not exported).
	Share  float64
	Capped bool
}

// Flow feeds one sampling period of the flow name (main, or a flow of the
// scenario's traffic) whose data goes in direction (Up or Down). A
// session without traffic feeds none: its video is FrameSent's and the
// link's.
func (m *Metrics) Flow(name, direction string, s FlowSample) {
	if m == nil {
		return
	}
	m.flowDelivered.WithLabelValues(name, direction).Add(float64(s.DeliveredBytes))
	if s.Capped {
		m.flowShare.WithLabelValues(name, direction).Set(s.Share)
	}
}

// Handler serves g's metrics over HTTP, in OpenMetrics when the scraper
// asks for it, for a real-time run's /metrics on loopback.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{EnableOpenMetrics: true})
}
