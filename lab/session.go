// Package lab runs remote-desktop sessions against the impairment network
// and measures them: an agent and a viewer talking real QUIC over an
// in-memory network, in virtual time when called inside a testing/synctest
// bubble. It returns the ground truth of every frame beside what the agent
// and viewer themselves saw. The same session also runs in real time over
// loopback UDP through the real-time impairment proxy (Session.RealTime,
// RunRealTime), for live dashboards, and across netem's kernel mode with
// the agent and the viewer in two network namespaces (Session.Kernel), so
// that the kernel's TCP congestion controllers carry the WebSocket tunnel.
//
// Two levels: RunSession runs a Session built in Go (impairments, models,
// switches) and returns the raw ground truth; Run runs a scenario
// (scenarios.Scenario) and returns its result (package result): per-frame
// records, a time series, a summary and the scenario's expectations
// evaluated (package measure takes any measurement of the catalogue over
// any window), in a versioned JSON form that reports can read back.
package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/viewer"
)

// The hosts of a session's network: the viewer dials the agent.
var (
	ViewerAddr = netip.MustParseAddrPort("10.0.0.1:40000")
	AgentAddr  = netip.MustParseAddrPort("10.0.0.2:4433")
)

// HostClock is a PC's clock relative to true time (N1).
type HostClock struct {
	Offset   time.Duration
	DriftPPM float64
}

// Session describes one session. Zero values mean defaults.
type Session struct {
	// Seed seeds every random decision of the run.
	Seed uint64
	// Duration is how long the session runs after the handshake.
	Duration time.Duration
	// Uplink carries viewer -> agent (reports, acks), Downlink agent ->
	// viewer (video). Nil is a perfect link.
	Uplink, Downlink []netem.Impairment
	// Screen is the agent PC's screen; nil is the documented full-screen
	// animation (N3).
	Screen *screen.Config
	// Agent and Viewer configure the two ends; their Seed, Clock, Recorder
	// and Screen are set by the lab.
	Agent  agent.Config
	Viewer viewer.Config
	// AgentClock and ViewerClock offset the PCs' clocks from true time.
	AgentClock, ViewerClock HostClock

	// UplinkTimeline and DownlinkTimeline change the links' impairments
	// at later instants, counted from the links' epoch (see Lead); each
	// phase replaces the whole set, stateful impairments carrying their
	// state over (netem.LinkConfig.Timeline).
	UplinkTimeline, DownlinkTimeline []netem.Phase
	// Lead, when positive, fixes the session's time zero at Lead after the
	// network is made, before the QUIC handshake starts: the links' epoch
	// (their timelines, spikes, outages and traces), the screen's time
	// zero, the controller's steps and Result.Start are all that instant,
	// and the agent and viewer start then. The handshake crosses the links
	// as they are before time zero (their first impairments, with no
	// schedule running yet). A handshake that takes longer than Lead
	// starts the agent late (Result.Late) but moves nothing else, so a
	// scenario's instants never depend on how long QUIC took to connect.
	//
	// Zero keeps the original behaviour: time zero is the end of the
	// handshake and the links count from the network's creation.
	Lead time.Duration
	// SampleEvery, when positive, samples the links' counters from time
	// zero every SampleEvery and at the end (Result.Samples).
	SampleEvery time.Duration
	// Path, when set, puts the PCs in the two-site topology and connects
	// them by its strategy (N17-N19); Uplink and Downlink are then the
	// viewer's access links. Nil is the plain link between the two.
	Path *Path
	// Capture records the session's packets, TLS secrets and qlogs for
	// Wireshark and qvis; zero records nothing.
	Capture Capture
	// RealTime runs the session over real UDP sockets on 127.0.0.1, the
	// viewer's and the agent's, through the real-time impairment proxy
	// (netem.Proxy, Uplink as its forward link and Downlink as its
	// reverse one), rather than over the in-memory network: for a live
	// dashboard, at the pace of the wall clock. Real sockets live outside
	// any testing/synctest bubble, so a real-time session must not run
	// inside one. It cannot have a Path: the two-site topology exists only
	// in the in-memory network.
	RealTime bool
	// Kernel, when set, runs the session in real time across netem's
	// kernel mode: the agent in one network namespace and the viewer in
	// another, their kernels' UDP or TCP traffic crossing Uplink and
	// Downlink (see KernelMode). Like RealTime it must not run inside a
	// testing/synctest bubble, and it cannot have a Path; it excludes
	// RealTime.
	Kernel *KernelMode
	// Traffic is other traffic sharing the session's links: flows that
	// run from their start to their stop, counted from time zero (see
	// Flow). The in-memory transport and the real-time one (through the
	// proxy's links, netem.Proxy.Route) carry every kind; the kernel mode
	// carries tcp-bulk flows over the kernel's TCP and refuses the others;
	// a session with a Path refuses traffic (ErrUnsupported).
	Traffic []Flow
	// Metrics, when set, is fed as the session runs: frames and events as
	// the ground truth records them, the controller's target as it
	// changes, its decisions and the links' counters at every sample
	// (every SampleEvery, or result.DefaultSampleEvery when that is zero),
	// and with Traffic each flow's payload and share. Nil costs nothing.
	Metrics *metrics.Metrics

	// capacity is what the link (the uplink when up) could carry in
	// [a, b) from time zero, and whether it had a bottleneck then: a
	// flow's share in the metrics. A scenario's run sets it from its
	// phases (runConfigured); a Session built in Go has none, and its
	// metrics then leave the shares out.
	capacity func(up bool, a, b time.Duration) (bits float64, capped bool)
}

// Sample is the links' counters at one instant of the run.
type Sample struct {
	At               time.Time
	Uplink, Downlink netem.Stats
}

// Target is a change of the bitrate the controller asked for.
type Target struct {
	At  time.Time
	Bps int64
}

// Result is what a session measured.
type Result struct {
	// Frames is the ground truth of every frame, by sequence number.
	Frames []groundtruth.Frame
	// Events are skips, drops and the like, in order.
	Events []groundtruth.Event
	// Agent and Viewer are the two ends' counters.
	Agent  agent.Counters
	Viewer viewer.Counters
	// Probe lists the encoders the agent tried (N5).
	Probe encoder.Attempts
	// Reports are the viewer's reports as the agent received them (N1).
	Reports []wire.Report
	// Uplink and Downlink are the links' counters.
	Uplink, Downlink netem.Stats
	// Start is the session's time zero: the instant the agent started and
	// time zero of the screen (see Session.Lead for when a Lead is set).
	Start time.Time
	// End is when the session was stopped: Start plus the Duration, or
	// earlier when the context was cancelled.
	End time.Time
	// Handshake is how long the QUIC handshake took; Late is how long
	// after Start the agent and viewer started because the handshake
	// overran the Lead (0 when it did not).
	Handshake, Late time.Duration
	// ScreenChanges is the ground truth of the agent's screen: element v-1
	// is when version v appeared, counted from Start, up to End
	// (screen.Model.Changes). A frame's Version says which it shows.
	ScreenChanges []time.Duration
	// Samples are the links' counters every Session.SampleEvery.
	Samples []Sample
	// Targets lists the controller's bitrate each time it changed, the
	// first when the agent started.
	Targets []Target
	// Path is how the PCs connected when the session had a Path; nil for
	// the plain link.
	Path *PathResult
	// Kernel is what a kernel-mode session measured beyond the rest (the
	// congestion controller, the competing flow); nil in other modes.
	Kernel *KernelResult
	// Traffic is what each flow of Session.Traffic measured, in its
	// order.
	Traffic []FlowResult
}

// Displayed returns the frames the viewer displayed.
func (r *Result) Displayed() []groundtruth.Frame {
	var out []groundtruth.Frame
	for _, f := range r.Frames {
		if !f.Displayed.IsZero() {
			out = append(out, f)
		}
	}
	return out
}

// Latencies returns the true capture-to-display latency of every displayed
// frame whose capture is at or after from (counted from Start).
func (r *Result) Latencies(from time.Duration) []time.Duration {
	var out []time.Duration
	for _, f := range r.Displayed() {
		if f.Captured.Sub(r.Start) >= from {
			out = append(out, f.Latency())
		}
	}
	return out
}

// RunSession runs a session. Inside a synctest bubble it runs in virtual time.
func RunSession(s Session) (*Result, error) {
	return RunSessionContext(context.Background(), s)
}

// RunSessionContext is RunSession that stops when ctx is done: the handshake
// is abandoned, or the session is ended early. A session ended early returns
// what it measured until then (Result.End says when) together with an error
// wrapping the context's cause, so that an interrupted suite still has its
// figures.
func RunSessionContext(ctx context.Context, s Session) (_ *Result, err error) {
	if s.Duration <= 0 {
		return nil, errors.New("lab: session duration must be positive")
	}
	if s.Lead < 0 || s.SampleEvery < 0 {
		return nil, fmt.Errorf("lab: negative lead %v or sampling period %v", s.Lead, s.SampleEvery)
	}
	if err := checkTraffic(s); err != nil {
		return nil, err
	}
	if err := checkOwnImpairments(s); err != nil {
		return nil, err
	}
	tr, err := transportFor(s)
	if err != nil {
		return nil, err
	}
	// With a Lead the links count from time zero, which lies in the
	// future; without one they count from the network's creation.
	var zero, epoch time.Time
	if s.Lead > 0 {
		zero = time.Now().Add(s.Lead)
		epoch = zero
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	capt, err := startCapture(s.Capture, s.Traffic, s.RealTime)
	if err != nil {
		return nil, err
	}
	dialed := time.Now()
	conn, err := tr.open(ctx, s, epoch, capt)
	if err != nil {
		return nil, errors.Join(err, capt.finish(nil))
	}
	defer func() {
		conn.close()
		// A capture ends with the network, so that it holds every
		// packet; its failure does not hide what the session measured.
		err = errors.Join(err, capt.finish(conn.stats))
	}()
	handshake := time.Since(dialed)

	if zero.IsZero() {
		zero = time.Now()
	} else if !sleepUntil(ctx, zero) {
		return nil, fmt.Errorf("lab: stopped before time zero: %w", context.Cause(ctx))
	}
	late := max(0, time.Since(zero))
	start := zero
	var rec *groundtruth.Recorder
	var mainArrived atomic.Int64
	if s.Metrics != nil {
		rec = groundtruth.NewObserved(metricsObserver{m: s.Metrics, arrived: &mainArrived})
	} else {
		rec = groundtruth.New()
	}
	scfg := screen.Config{Timeline: []screen.Phase{{Source: screen.Animation{}}}}
	if s.Screen != nil {
		scfg = *s.Screen
	}
	scr, err := screen.New(s.Seed, scfg)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	acfg := s.Agent
	acfg.Seed, acfg.Recorder, acfg.Screen = s.Seed, rec, scr
	acfg.Clock = clock.New(s.AgentClock.Offset, s.AgentClock.DriftPPM, start)
	acfg.Capture.Epoch = start
	if acfg.Controller == nil {
		acfg.Controller = agent.Fixed{Bps: agent.DefaultBitrate}
	}
	if st, ok := acfg.Controller.(*agent.Steps); ok && st.Start.IsZero() && s.Lead > 0 {
		// Steps count from their first call, the agent's start, which a
		// late handshake would move; a scenario's steps count from time
		// zero like everything else.
		st.Start = start
	}
	decisions := newDecisionFeed(s.Metrics, acfg.Controller)
	targets := &targetRecorder{Controller: acfg.Controller, metrics: s.Metrics}
	acfg.Controller = targets
	pics := &capturedPictures{}
	if acfg.OnPicture == nil {
		acfg.OnPicture = pics.put
	}
	ag, err := agent.New(acfg)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	vcfg := s.Viewer
	vcfg.Seed, vcfg.Recorder = s.Seed, rec
	if pe, ok := ag.Encoder().(encoder.PixelEncoder); ok && vcfg.Decoder == nil {
		// Real bitstreams: the viewer decodes them, and the lab judges
		// what it shows (realcodec.go).
		j, err := newJudge(pe, pics)
		if err != nil {
			return nil, err
		}
		defer j.close()
		vcfg.Decoder = j
	}
	vcfg.Clock = clock.New(s.ViewerClock.Offset, s.ViewerClock.DriftPPM, start)
	vw, err := viewer.New(vcfg)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}

	var samples []Sample
	// Metrics want the links' counters even when the result does not.
	period := s.SampleEvery
	if period == 0 && s.Metrics != nil {
		period = result.DefaultSampleEvery
	}
	links := newLinkFeed(s.Metrics)
	flowsFed := newFlowFeed(s.Metrics, s.Traffic, &mainArrived, s.capacity)
	sample := func(at time.Time) {
		if period == 0 {
			return
		}
		smp := Sample{At: at}
		smp.Uplink, smp.Downlink = conn.stats()
		if s.SampleEvery > 0 {
			samples = append(samples, smp)
		}
		links.feed(smp)
		flowsFed.feed(at.Sub(start))
		decisions.feed()
	}
	sample(time.Now())
	end := start.Add(s.Duration)
	var traffic *trafficRun
	if len(s.Traffic) > 0 {
		if conn.traffic == nil {
			return nil, fmt.Errorf("%w: traffic on this transport", ErrUnsupported)
		}
		traffic = startTraffic(ctx, s, conn.traffic, start, end, capt.keyLog())
		flowsFed.run = traffic
	}
	var wg sync.WaitGroup
	var agentErr, viewerErr error
	session, stop := context.WithCancel(context.Background())
	defer stop()
	wg.Go(func() { agentErr = ag.Run(session, conn.agent) })
	wg.Go(func() { viewerErr = vw.Run(session, conn.viewer) })
	// The samples are taken here, between the waits for the end, rather
	// than by a goroutine of their own: the last one is then certainly
	// taken at the end instant, before the session stops. Each is read a
	// nanosecond after its instant and stands for it: a packet the
	// viewer sends at the very instant (its reports come every 250 ms
	// from its start, as the samples do) is then always counted in it,
	// never only when the goroutines woken at that instant happen to run
	// in one order rather than the other.
	var interrupted error
	for k := 1; ; k++ {
		next := end
		if period > 0 {
			next = minTime(end, start.Add(time.Duration(k)*period))
		}
		if !sleepUntil(ctx, next.Add(sampleSettle)) {
			interrupted = fmt.Errorf("lab: session stopped after %v of %v: %w", time.Since(start), s.Duration, context.Cause(ctx))
			sample(time.Now())
			break
		}
		sample(next)
		if !next.Before(end) {
			break
		}
	}
	stopped := time.Now()
	stop()
	wg.Wait()
	flowResults := traffic.finish()
	if err := errors.Join(agentErr, viewerErr); err != nil {
		return nil, fmt.Errorf("lab: %w", errors.Join(err, interrupted))
	}
	upStats, downStats := conn.stats()
	res := &Result{
		Frames:    rec.Frames(),
		Events:    rec.Events(),
		Agent:     ag.Counters(),
		Viewer:    vw.Counters(),
		Probe:     ag.Probe(),
		Reports:   ag.Reports(),
		Uplink:    upStats,
		Downlink:  downStats,
		Start:     start,
		End:       stopped,
		Handshake: handshake,
		Late:      late,
		Samples:   samples,
		Targets:   targets.changes(),
		Path:      conn.path,
		Traffic:   flowResults,
		// The content is a function of time only: asking after the end
		// changes nothing the agent saw.
		ScreenChanges: scr.Changes(stopped.Sub(start)),
	}
	// Before the deferred close: what the transport alone measures (the
	// kernel senders' TCP_INFO) goes with its sockets.
	if conn.finish != nil {
		if err := conn.finish(res); err != nil {
			return nil, err
		}
	}
	return res, interrupted
}

// sampleSettle is how long after its instant a sample is read (see
// RunSessionContext).
const sampleSettle = time.Nanosecond

// sleepUntil waits until t; false if ctx ended first.
var sleepUntil = clock.SleepUntil

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// targetRecorder passes a controller's decisions through and remembers
// each change, so that a result can show the bitrate asked for over time
// without calling the controller from outside the agent (an adaptive one
// may change state when asked).
type targetRecorder struct {
	agent.Controller
	// metrics, when set, follows the target.
	metrics *metrics.Metrics

	mu  sync.Mutex
	log []Target
}

// Bitrate implements agent.Controller.
func (r *targetRecorder) Bitrate(now time.Time) int64 {
	b := r.Controller.Bitrate(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.log); n == 0 || r.log[n-1].Bps != b {
		r.log = append(r.log, Target{At: now, Bps: b})
		r.metrics.Target(b)
	}
	return b
}

// FrameSent passes frames on to a controller that watches them (GCC, the
// ABR's utilisation guard): the recorder must not hide that it does.
func (r *targetRecorder) FrameSent(now time.Time, seq uint64, bytes int) {
	if o, ok := r.Controller.(agent.FrameObserver); ok {
		o.FrameSent(now, seq, bytes)
	}
}

// FrameAcked passes acknowledgements on, as FrameSent does frames.
func (r *targetRecorder) FrameAcked(now time.Time, seq uint64, bytes int, sent, arrived time.Time) {
	if o, ok := r.Controller.(agent.FrameObserver); ok {
		o.FrameAcked(now, seq, bytes, sent, arrived)
	}
}

// Loss passes the connection's packet counts on to a controller that
// judges loss (GCC's loss-based half), as FrameSent does frames.
func (r *targetRecorder) Loss(now time.Time, sent, lost uint64) {
	if o, ok := r.Controller.(agent.LossObserver); ok {
		o.Loss(now, sent, lost)
	}
}

func (r *targetRecorder) changes() []Target {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// checkOwnImpairments refuses an impairment instance given to both links:
// an instance belongs to one link (its queue and random state are that
// link's), and two links applying one instance at once is a data race in
// real time and kernel mode, and couples the directions in any mode.
// Only pointers to something are compared: a value carries no state to
// share (and may not be comparable at all), nor does a zero-size type such
// as Block, whose distinct instances Go may place at one address.
func checkOwnImpairments(s Session) error {
	for _, u := range s.Uplink {
		if v := reflect.ValueOf(u); v.Kind() != reflect.Pointer || v.Type().Elem().Size() == 0 {
			continue
		}
		for _, d := range s.Downlink {
			if u == d {
				return fmt.Errorf("lab: the same %s impairment (one instance) on both links: give each link its own", u.Kind())
			}
		}
	}
	return nil
}
