// Package result is the lab's result format, latencylab.result/v1: what
// one run of a scenario measured, as per-frame records of the ground
// truth, the viewer's drops and the agent's skips, the controller's
// targets and decisions, a time series, the links' counters, a summary and
// the scenario's expectations evaluated (Check). It reads and writes the
// JSON form (Parse, Read, Write) and refuses another version of it.
// reports/SCHEMA.md documents every field.
//
// Building a result from a session is the lab's job; taking measurements
// from one is package measure's.
package result

import (
	"time"
)

// Version names the JSON form of Run. A change that an
// older reader would misread (a field renamed, a unit changed) takes a new
// version; adding a field does not.
const Version = "latencylab.result/v1"

// A Run is what one run of a scenario measured, in a form that
// survives JSON: everything Measure needs is in it, so a result read back
// from a file measures exactly as the fresh one.
//
// Instants are offsets from the session's time zero (the links' epoch, the
// screen's time zero and the start of the agent), and every duration in
// the JSON form is a whole number of nanoseconds in a field whose name
// ends in _ns; rates are bits per second (_bps). Measurements and the
// bounds of checks use the catalogue's units instead (seconds, bits/s,
// fractions), as scenario files do.
type Run struct {
	// Schema is Version.
	Schema string `json:"schema"`
	// Scenario, File, Description, Findings and Groups are the scenario's.
	Scenario    string   `json:"scenario"`
	File        string   `json:"file,omitempty"`
	Description string   `json:"description,omitempty"`
	Findings    []string `json:"findings,omitempty"`
	Groups      []string `json:"groups,omitempty"`
	// Seed is the run's seed.
	Seed uint64 `json:"seed"`
	// Duration is the scenario's; Ran is how long the session actually
	// ran (shorter when it was interrupted).
	Duration time.Duration `json:"duration_ns"`
	Ran      time.Duration `json:"ran_ns"`
	// Interrupted says why the run stopped early; empty when it did not.
	Interrupted string `json:"interrupted,omitempty"`
	// Handshake is how long QUIC took to connect, before time zero; Late
	// is how long after time zero the agent started because the
	// handshake overran its lead.
	Handshake time.Duration `json:"handshake_ns"`
	Late      time.Duration `json:"late_ns,omitempty"`
	// Refresh is the agent's display refresh, which sets the freeze
	// threshold, FreezeThreshold: max(150 ms, 3 refresh intervals).
	Refresh         float64       `json:"refresh_hz"`
	FreezeThreshold time.Duration `json:"freeze_threshold_ns"`
	// SampleEvery is the period of Series.
	SampleEvery time.Duration `json:"sample_every_ns"`
	// Encoder is the encoder the agent's probe chose; Probe what it tried.
	Encoder string         `json:"encoder"`
	Probe   []ProbeAttempt `json:"probe"`
	// FrameSizes is how the chosen encoder, when it is the H.264 model in
	// software, sized frames: "calibrated" (the preset's sizes fitted to
	// OpenH264) or "budget" (every frame at its share of the target); empty
	// for a hardware model or a real encoder.
	FrameSizes string `json:"frame_sizes,omitempty"`
	// Network describes each direction's phases.
	Network NetworkInfo `json:"network"`
	// Frames is the ground truth of every frame sent, by sequence number.
	Frames []FrameRecord `json:"frames"`
	// ScreenChanges is the ground truth of the agent's screen: element v-1
	// is when version v of its content appeared (1 is the desktop at time
	// zero), so a viewer showing a frame of version v has not shown
	// anything from element v on. The freezes are measured against it.
	// Absent from results written before it was recorded: their freezes
	// are every pause between displayed frames, as they were measured then.
	ScreenChanges []time.Duration `json:"screen_changes_ns,omitempty"`
	// Events are the agent's skips and the viewer's drops, in order.
	Events []EventRecord `json:"events"`
	// Targets are the controller's bitrate and each of its changes.
	Targets []TargetRecord `json:"targets"`
	// Decisions are an adaptive controller's (ABR, GCC): when, from what
	// to what, which rule and on what inputs.
	Decisions []DecisionRecord `json:"decisions,omitempty"`
	// Series samples the session every SampleEvery.
	Series []Point `json:"series"`
	// Links are the links' counters over the session (from time zero).
	Links LinkTotals `json:"links"`
	// Marked counts the session's own packets that arrived at the viewer
	// CE-marked (an ECN-capable session, ecn: classic, through a queue that
	// marks), as the in-memory network's endpoint counts them (0 in real
	// time, whose sockets are the kernel's); the links' marked_packets
	// count every flow's.
	Marked int64 `json:"marked,omitempty"`
	// Hops are each hop's links' counters over the session (from time
	// zero) on a path of several, in the order the video crosses them;
	// Links are then the narrowest hop's. Left out for one pair of links.
	Hops []HopTotals `json:"hops,omitempty"`
	// Summary is the whole session's figures.
	Summary Summary `json:"summary"`
	// Checks are the scenario's expectations, evaluated.
	Checks []Check `json:"checks"`
	// Path is how the PCs connected, for a scenario with a path (N17-N19).
	Path *PathRecord `json:"path,omitempty"`
	// Traffic is the other traffic's flows, in the scenario's order (for
	// a scenario with traffic).
	Traffic []FlowRecord `json:"traffic,omitempty"`
}

// FlowRecord is one flow of other traffic: what it was and what it
// carried. Byte counts are payload: what its transport was handed and
// what its receiving application got, without headers.
type FlowRecord struct {
	// Name and Kind are the scenario's (traffic[].name, .kind).
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Direction is the link its data crossed: "down" (agent -> viewer)
	// or "up".
	Direction string `json:"direction"`
	// Description sums it up: "TCP-like CUBIC", "64 kbit/s in 160-byte
	// datagrams", "controller gcc".
	Description string `json:"description"`
	// Start and Stop are when it ran (Stop the end when the scenario
	// left it out); Delay its extra one-way delay.
	Start time.Duration `json:"start_ns"`
	Stop  time.Duration `json:"stop_ns"`
	Delay time.Duration `json:"delay_ns,omitempty"`
	// Hops are the hops of a path of several it crossed (the scenario's
	// traffic[].hops); left out, the whole path. Such a flow has no share:
	// a share counts over the path's narrowest hop, which it may not
	// cross.
	Hops []string `json:"hops,omitempty"`
	// SentBytes is the payload handed to its transport, DeliveredBytes
	// what its receiver's application got (a session's: its video).
	SentBytes      int64 `json:"sent_bytes"`
	DeliveredBytes int64 `json:"delivered_bytes"`
	// Delivered is DeliveredBytes by period of SampleEvery from time zero:
	// Delivered[k] arrived in [k x SampleEvery, (k+1) x SampleEvery). A
	// session's counts its frames by arrival.
	Delivered []int64 `json:"delivered"`
	// Packets is the datagrams, data segments or QUIC packets sent,
	// retransmissions included; Lost the datagrams that never arrived
	// (cbr), the segments sent again (tcp-bulk, web) or the packets QUIC
	// declared lost (quic-bulk).
	Packets int64 `json:"packets,omitempty"`
	Lost    int64 `json:"lost,omitempty"`
	// Marked is the data packets that arrived CE-marked (an ECN-capable
	// tcp-bulk flow).
	Marked int64 `json:"marked,omitempty"`
	// Objects are a web flow's fetches.
	Objects []ObjectRecord `json:"objects,omitempty"`
	// Frames are a session's (session, reverse-media) frames.
	Frames []FlowFrame `json:"frames,omitempty"`
	// Error says why the flow could not run, or ended early.
	Error string `json:"error,omitempty"`
}

// ObjectRecord is one object a web flow fetched.
type ObjectRecord struct {
	// Bytes is its size as drawn.
	Bytes int64 `json:"bytes"`
	// Start is when its connection's SYN left, Done when its last byte
	// arrived (0: the flow stopped first).
	Start time.Duration `json:"start_ns"`
	Done  time.Duration `json:"done_ns,omitempty"`
}

// FlowFrame is one frame of a session flow, its instants from time zero
// (0: it did not happen).
type FlowFrame struct {
	Seq       uint64        `json:"seq"`
	Bytes     int           `json:"bytes"`
	Sent      time.Duration `json:"sent_ns,omitempty"`
	Arrived   time.Duration `json:"arrived_ns,omitempty"`
	Displayed time.Duration `json:"displayed_ns,omitempty"`
	// Latency is capture to display, true.
	Latency time.Duration `json:"latency_ns,omitempty"`
}

// PathRecord is how a session with a path connected.
type PathRecord struct {
	// Path is the viewer's path ("direct-lan", "direct-public", "relay",
	// "websocket"), AgentPath the agent's leg.
	Path      string `json:"path"`
	AgentPath string `json:"agent_path"`
	// Connect is from the viewer's first attempt to its QUIC connection.
	Connect time.Duration `json:"connect_ns"`
	// Steps are the viewer's attempts in order.
	Steps []StepRecord `json:"steps"`
}

// StepRecord is one connection attempt. Start counts from the first
// attempt's start.
type StepRecord struct {
	Path     string        `json:"path"`
	Start    time.Duration `json:"start_ns"`
	Duration time.Duration `json:"duration_ns"`
	Error    string        `json:"error,omitempty"`
}

// ProbeAttempt is one encoder the agent's start-up probe tried (N5).
type ProbeAttempt struct {
	Name     string        `json:"name"`
	Hardware bool          `json:"hardware,omitempty"`
	Error    string        `json:"error,omitempty"` // why it did not open; empty for the one chosen
	Took     time.Duration `json:"took_ns"`
}

// NetworkInfo lists the phases of both directions: Down carries the video.
type NetworkInfo struct {
	Up   []PhaseInfo `json:"up"`
	Down []PhaseInfo `json:"down"`
}

// PhaseInfo describes one phase of a direction's timeline.
type PhaseInfo struct {
	// At is when the phase starts.
	At time.Duration `json:"at_ns"`
	// Description sums the phase up: "delay 25ms, loss 1%, rate 5 Mbit/s".
	Description string `json:"description"`
	// RateBps is the rate cap (0: none); Trace the trace replayed instead,
	// as the scenario names it (a path of a file outside the library
	// written absolute by the loader). The segment that ran, the trace's
	// offset and whether it was played once, is in Description: two more
	// fields here would change the size of every result, and with it the
	// garbage collector's timing, which moves an exact session whose
	// outcome hinges on one race (docs/determinism.md).
	RateBps int64  `json:"rate_bps,omitempty"`
	Trace   string `json:"trace,omitempty"`
}

// FrameRecord is one frame's ground truth. Instants are offsets from time
// zero; 0 in Sent, Arrived or Displayed means it did not happen (none of
// them can happen at time zero itself: a frame is captured at the earliest
// then and takes time to encode), 0 in Estimate means the viewer had no
// clock estimate yet.
type FrameRecord struct {
	Seq  uint64 `json:"seq"`
	Pass int    `json:"pass,omitempty"` // refinement pass, 0 for a new image (N15)
	// Version is the version of the screen the frame shows (Run.ScreenChanges);
	// a refinement pass shows the version it refines. 0: not recorded.
	Version  uint64  `json:"version,omitempty"`
	Keyframe bool    `json:"keyframe,omitempty"`
	Bytes    int     `json:"bytes"` // the encoded frame, without the lab's frame header
	Quality  float64 `json:"quality"`
	// PSNR is the quality shown, with a real encoder and decoder: the
	// viewer's picture after decoding this frame against the picture
	// the agent captured for it, luma PSNR in dB (100 for identical
	// pictures); absent for a model's frame and a frame not decoded.
	PSNR float64 `json:"psnr_db,omitempty"`
	// SSIM is the same picture's structural similarity to the captured one
	// (luma, 8x8 windows as ffmpeg's ssim filter computes it, 1 for
	// identical pictures); present where PSNR is.
	SSIM float64 `json:"ssim,omitempty"`
	// Damaged: the viewer decoded the frame onto a broken reference chain
	// (a frame it depends on was never decoded), so its picture is not the
	// one encoded; DamageAge counts the damaged frames decoded since the
	// chain broke, this one included. Absent for a whole picture.
	Damaged   bool `json:"damaged,omitempty"`
	DamageAge int  `json:"damage_age,omitempty"`
	// Captured, EncodeEnd, Sent, Arrived and Displayed are the frame's
	// true instants.
	Captured  time.Duration `json:"captured_ns"`
	EncodeEnd time.Duration `json:"encode_end_ns"`
	Sent      time.Duration `json:"sent_ns,omitempty"`
	Arrived   time.Duration `json:"arrived_ns,omitempty"`
	Displayed time.Duration `json:"displayed_ns,omitempty"`
	// Latency is capture to display, Network end of encoding to arrival
	// (N12), both true; Estimate and EstimateNetwork are the viewer's own
	// figures for them, made through its clock-offset estimate (N1).
	Latency         time.Duration `json:"latency_ns,omitempty"`
	Network         time.Duration `json:"network_ns,omitempty"`
	Estimate        time.Duration `json:"estimate_ns,omitempty"`
	EstimateNetwork time.Duration `json:"estimate_network_ns,omitempty"`
	// Dropped is why the viewer never displayed the frame.
	Dropped string `json:"dropped,omitempty"`
}

// WasDisplayed tells whether the frame reached the viewer's screen.
func (f FrameRecord) WasDisplayed() bool { return f.Displayed > 0 }

// Event kinds of EventRecord.
const (
	EventSkip = "skip" // the agent skipped a capture (agent.Skip* reasons)
	EventDrop = "drop" // the viewer dropped a frame (viewer.Reason* reasons)
	EventAsk  = "ask"  // the viewer asked for a repair ("keyframe" or "refresh")
)

// EventRecord is a skip or a drop.
type EventRecord struct {
	At     time.Duration `json:"at_ns"`
	Kind   string        `json:"kind"`
	Reason string        `json:"reason"`
	Seq    uint64        `json:"seq,omitempty"`
}

// TargetRecord is the controller's bitrate from At on.
type TargetRecord struct {
	At  time.Duration `json:"at_ns"`
	Bps int64         `json:"bps"`
}

// Point is one bucket of the time series, [From, To): SampleEvery long
// except perhaps the last.
type Point struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
	// Displayed counts the frames displayed in the bucket, LatencyMedian
	// is the median of their true latency (0 when none was displayed).
	Displayed     int           `json:"displayed"`
	LatencyMedian time.Duration `json:"latency_median_ns"`
	// TargetBps is the controller's bitrate at To; SendBps the encoded
	// video handed to QUIC during the bucket.
	TargetBps int64   `json:"target_bps"`
	SendBps   float64 `json:"send_bps"`
	// Up and Down are the links.
	Up   LinkPoint `json:"up"`
	Down LinkPoint `json:"down"`
}

// LinkPoint is one direction during one bucket.
type LinkPoint struct {
	// QueueBytes is what waited in the bottleneck's queue at To.
	QueueBytes int64 `json:"queue_bytes"`
	// QueueDelay is the mean time the packets that reached the
	// bottleneck during the bucket waited in its queue.
	QueueDelay time.Duration `json:"queue_delay_ns"`
	// ThroughputBps is what the link delivered (every packet, QUIC's
	// headers and acknowledgements included).
	ThroughputBps float64 `json:"throughput_bps"`
	// CapacityBps is what the bottleneck (rate or trace) could carry,
	// averaged over the bucket; Capped says a bottleneck was there for at
	// least part of it. Without one there is no capacity to speak of.
	CapacityBps float64 `json:"capacity_bps"`
	Capped      bool    `json:"capped"`
}

// LinkTotals are both directions' counters over the session.
type LinkTotals struct {
	Up   LinkTotal `json:"up"`
	Down LinkTotal `json:"down"`
}

// HopTotals are one hop's links' counters, named as the scenario names
// the hop.
type HopTotals struct {
	Name string `json:"name"`
	LinkTotals
}

// LinkTotal is one direction's counters from time zero to the end.
type LinkTotal struct {
	OfferedPackets   uint64            `json:"offered_packets"`
	OfferedBytes     uint64            `json:"offered_bytes"`
	DeliveredPackets uint64            `json:"delivered_packets"`
	DeliveredBytes   uint64            `json:"delivered_bytes"`
	Dropped          map[string]uint64 `json:"dropped"` // packets, by reason
	// Marked counts the packets the bottleneck's queue marked CE instead of
	// dropping them (ECN); they are delivered.
	Marked uint64 `json:"marked_packets,omitempty"`
	// QueueMean is the mean wait in the bottleneck's queue of the packets
	// of the session; QueueMax the longest since the link was made.
	QueueMean time.Duration `json:"queue_mean_ns"`
	QueueMax  time.Duration `json:"queue_max_ns"`
}

// Summary is the whole session's figures, each computed as Measure
// computes it over [0, Ran).
type Summary struct {
	// Frames counts frames sent (refinement passes included); Displayed
	// those displayed; FirstDisplay is when the first one was.
	Frames       int           `json:"frames"`
	Displayed    int           `json:"displayed"`
	FirstDisplay time.Duration `json:"first_display_ns"`
	// Latency is the true capture-to-display latency of displayed frames.
	Latency LatencySummary `json:"latency"`
	// NetworkMedian is the median network part (N12).
	NetworkMedian time.Duration `json:"network_median_ns"`
	// EstimateErrorMax is the viewer's worst latency estimate (N1).
	EstimateErrorMax time.Duration `json:"estimate_error_max_ns"`
	// FPS is frames displayed per second.
	FPS float64 `json:"fps"`
	// Freezes are the stretches longer than the freeze threshold in which
	// the screen had changed and the display did not (see
	// scenarios/FORMAT.md, measurement freezes); FreezeLongest is the
	// longest such stretch, freeze or not.
	Freezes       []Interval    `json:"freezes"`
	FreezeLongest time.Duration `json:"freeze_longest_ns"`
	// Skipped and Dropped count the agent's skips and the viewer's drops
	// by reason.
	Skipped map[string]int `json:"skipped"`
	Dropped map[string]int `json:"dropped"`
	// BitrateMean is the video sent, BitrateMin the lowest target.
	BitrateMean float64 `json:"bitrate_mean_bps"`
	BitrateMin  int64   `json:"bitrate_min_bps"`
	// QualityFinal is the quality of the last frame displayed (N15).
	QualityFinal float64 `json:"quality_final"`
	// Refinements counts refinement passes sent (N15).
	Refinements int `json:"refinements"`
	// Utilisation is the video delivered over the downlink's capacity;
	// absent when the downlink has no bottleneck.
	Utilisation *float64 `json:"utilisation,omitempty"`
	// Recovery is the time to recover after each network phase change.
	Recovery []Recovery `json:"recovery"`
	// Flows sums up the scenario's own session (main) and every flow of
	// its traffic, each over the time it ran (a scenario with traffic).
	Flows []FlowSummary `json:"flows,omitempty"`
	// Fairness is Jain's index over the media sessions on the downlink
	// (main and the session flows) over the whole run; absent without a
	// session flow.
	Fairness *float64 `json:"fairness_jain,omitempty"`
}

// FlowSummary is one flow's figures over the time it ran, [start, stop).
type FlowSummary struct {
	Name string `json:"name"`
	// ThroughputBps is the payload its receiver got, per second.
	ThroughputBps float64 `json:"throughput_bps"`
	// Share is that over the capacity of the link it crossed; absent
	// when that link has no bottleneck.
	Share *float64 `json:"share,omitempty"`
	// Latency is a session's capture-to-display latency (main, session,
	// reverse-media); absent for the others or with nothing displayed.
	Latency *LatencySummary `json:"latency,omitempty"`
}

// LatencySummary is a latency distribution's figures.
type LatencySummary struct {
	Median time.Duration `json:"median_ns"`
	P95    time.Duration `json:"p95_ns"`
	P99    time.Duration `json:"p99_ns"`
	Min    time.Duration `json:"min_ns"`
	Max    time.Duration `json:"max_ns"`
}

// Interval is a stretch of the session.
type Interval struct {
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
}

// Recovery is how the latency came back after a network phase change: in
// the summary, back near its level before the change (measurement
// recovery); in a recovery.under check, back under the check's latency
// bound.
type Recovery struct {
	// At is the change, in Direction ("up", "down" or "both").
	At        time.Duration `json:"at_ns"`
	Direction string        `json:"direction"`
	// Before is the median latency over the second before the change (0
	// in a recovery.under check when no frame was displayed in it).
	Before time.Duration `json:"before_ns"`
	// Recovered tells whether the latency came back: in the summary, a
	// second's median within 20% of Before, and After is when that second
	// started; in a recovery.under check, the median of the last second
	// under the bound for good (until the next change or the window's
	// end), and After is from when. Both count After from the change; when
	// the latency never came back, After is the time from the change to
	// the end of what was looked at.
	Recovered bool          `json:"recovered"`
	After     time.Duration `json:"after_ns"`
}

// Passed tells whether every check passed (and none failed to measure); a
// check not judged (a run shorter than its window) fails nothing.
func (r *Run) Passed() bool {
	for _, c := range r.Checks {
		if !c.Pass {
			return false
		}
	}
	return true
}

// DecisionRecord is one change an adaptive controller made to the bitrate.
type DecisionRecord struct {
	At   time.Duration `json:"at_ns"`
	Old  int64         `json:"old_bps"`
	New  int64         `json:"new_bps"`
	Rule string        `json:"rule"`
	// The ABR's inputs: the window's median latency, the baseline and the
	// share of the target the video used.
	Median      time.Duration `json:"median_ns,omitempty"`
	Baseline    time.Duration `json:"baseline_ns,omitempty"`
	Utilisation float64       `json:"utilisation,omitempty"`
	// GCC's: the detector's signal, the delay trend against its adaptive
	// threshold, the received rate, and for its loss-based rules the loss
	// ratio of the report.
	Signal    string        `json:"signal,omitempty"`
	Trend     time.Duration `json:"trend_ns,omitempty"`
	Threshold time.Duration `json:"threshold_ns,omitempty"`
	Received  int64         `json:"received_bps,omitempty"`
	Loss      float64       `json:"loss,omitempty"`
}

// FreezeAfter is the freeze threshold for a display refreshing at refresh
// Hz: max(150 ms, 3 frame intervals).
func FreezeAfter(refresh float64) time.Duration {
	return max(150*time.Millisecond, time.Duration(3*float64(time.Second)/refresh))
}

// DefaultSampleEvery is the period of a result's time series: the viewer's
// report period (N1), so the series sees what the controller sees.
const DefaultSampleEvery = 250 * time.Millisecond
