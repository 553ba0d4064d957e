// Package lab runs remote-desktop sessions against the impairment network
// and measures them: an agent and a viewer talking real QUIC over an
// in-memory network, in virtual time when called inside a testing/synctest
// bubble. It returns the ground truth of every frame beside what the agent
// and viewer themselves saw. The session's transport (Session.Transport,
// package transport) can carry it otherwise: in real time over loopback
// UDP through the real-time impairment proxy (transport.RealTime,
// RunRealTime), for live dashboards; across netem's kernel mode with the
// agent and the viewer in two network namespaces (transport.Kernel), so
// that the kernel's TCP congestion controllers carry the WebSocket tunnel;
// or across the two-site topology of NATs, relay and tunnel
// (transport.Topology).
//
// Two levels: RunSession runs a Session built in Go (impairments, models,
// switches, transport) and returns the raw ground truth; Run runs a
// scenario (scenarios.Scenario, made a session by package plan) and
// returns its result (package result): per-frame records, a time series,
// a summary and the scenario's expectations evaluated (package measure
// takes any measurement of the catalogue over any window), in a versioned
// JSON form that reports can read back.
package lab

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/viewer"
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
	// UplinkMTU and DownlinkMTU are the links' path MTUs
	// (netem.LinkConfig.MTU); 0 is 1500. QUIC cannot connect below 1308.
	UplinkMTU, DownlinkMTU int
	// ECN makes the session's QUIC connection ECN-capable: quic-go marks
	// its packets ECT(0) and takes CE marks as congestion events
	// (transport.Network.ECN).
	ECN bool
	// Hops, when set, is a path of several hops in place of the links
	// above, in the order the video crosses them (transport.Network.Hops):
	// each hop's Up and Down with their impairments, timelines and MTUs;
	// their names, seeds and epoch are set by the lab. UpBottleneck and
	// DownBottleneck are the places of the hops whose counters stand for
	// the session's links (Result.Uplink, Downlink, Samples). Only the
	// in-memory transport carries it.
	Hops                         []transport.Hop
	UpBottleneck, DownBottleneck int
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
	// Transport carries the session between the two PCs (package
	// transport): nil is the in-memory network (transport.Memory), in
	// virtual time inside a testing/synctest bubble; transport.RealTime
	// real UDP sockets on loopback through the real-time proxy;
	// transport.Kernel netem's kernel mode, the PCs in two network
	// namespaces; transport.Topology the two-site topology (N17-N19),
	// where Uplink and Downlink are the viewer's access links. The real
	// ones must not run inside a testing/synctest bubble.
	Transport transport.Transport
	// Capture records the session's packets, TLS secrets and qlogs for
	// Wireshark and qvis; zero records nothing.
	Capture Capture
	// Traffic is other traffic sharing the session's links: flows that
	// run from their start to their stop, counted from time zero (see
	// traffic.Flow). The in-memory transport and the real-time one
	// (through the proxy's links, netem.Proxy.Route) carry every kind;
	// the kernel mode carries tcp-bulk flows over the kernel's TCP and
	// refuses the others; the topology refuses traffic (ErrUnsupported).
	Traffic []traffic.Flow
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
	// Hops are every hop's counters on a path of several; nil otherwise.
	Hops []transport.HopStats
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
	// Marked counts the session's packets that arrived at the viewer
	// CE-marked (an ECN-capable session's video, marked by a queue), where
	// the transport can tell (transport.Conn.Marked).
	Marked int64
	// Uplink and Downlink are the links' counters.
	Uplink, Downlink netem.Stats
	// Hops are every hop's counters on a path of several; nil otherwise.
	Hops []transport.HopStats
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
	// Path is how the PCs connected when the session's transport chose
	// between paths (transport.Topology); nil for the plain link.
	Path *transport.PathResult
	// Kernel is what a kernel-mode session measured beyond the rest (the
	// congestion controller, the competing flow); nil for the other
	// transports.
	Kernel *transport.KernelResult
	// Traffic is what each flow of Session.Traffic measured, in its
	// order.
	Traffic []traffic.Result
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
//
// It runs in three phases: set-up (the network opened, the PCs connected,
// time zero reached, the agent and the viewer built), run (the two ends
// and the traffic from time zero to the end, the links sampled on the
// way) and collection (the result).
func RunSessionContext(ctx context.Context, s Session) (_ *Result, err error) {
	tr, err := checkSession(s)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n, err := openNetwork(ctx, s, tr)
	if err != nil {
		return nil, err
	}
	defer func() {
		// A capture ends with the network, so that it holds every
		// packet; its failure does not hide what the session measured.
		err = errors.Join(err, n.close())
	}()
	if err := n.waitForZero(ctx); err != nil {
		return nil, err
	}
	e, err := newEnds(s, n.zero)
	if err != nil {
		return nil, err
	}
	defer e.close()
	out, err := runEnds(ctx, s, n, e)
	if err != nil {
		return nil, err
	}
	return collectResult(n, e, out)
}

// checkSession refuses a session that cannot run, before anything is
// made, and returns its transport.
func checkSession(s Session) (transport.Transport, error) {
	if s.Duration <= 0 {
		return nil, errors.New("lab: session duration must be positive")
	}
	if s.Lead < 0 || s.SampleEvery < 0 {
		return nil, fmt.Errorf("lab: negative lead %v or sampling period %v", s.Lead, s.SampleEvery)
	}
	if err := traffic.Check(s.Traffic, s.Duration); err != nil {
		return nil, err
	}
	if err := checkOwnImpairments(s); err != nil {
		return nil, err
	}
	tr := s.Transport
	if tr == nil {
		tr = transport.Memory{}
	}
	if err := tr.Check(s.Traffic); err != nil {
		return nil, err
	}
	return tr, nil
}

// sessionNet is a session's network once the transport has connected
// the two PCs: the connection, the capture recording it, and the instants
// the session counts from.
type sessionNet struct {
	conn *transport.Conn
	capt *recording
	// zero is the session's time zero (Result.Start): fixed before the
	// handshake with a Lead, its end without one (waitForZero).
	zero time.Time
	// handshake is how long QUIC took to connect; late how long after
	// zero the ends started (Result.Handshake, Result.Late).
	handshake, late time.Duration
}

// openNetwork starts the capture and has the transport make the network
// and connect the PCs, timing the handshake.
func openNetwork(ctx context.Context, s Session, tr transport.Transport) (*sessionNet, error) {
	// With a Lead the links count from time zero, which lies in the
	// future; without one they count from the network's creation.
	n := &sessionNet{}
	var epoch time.Time
	if s.Lead > 0 {
		n.zero = time.Now().Add(s.Lead)
		epoch = n.zero
	}
	capt, err := startCapture(s.Capture, s.Traffic, tr)
	if err != nil {
		return nil, err
	}
	upTap, downTap := capt.taps()
	nw := transport.Network{
		Seed:     s.Seed,
		Uplink:   netem.LinkConfig{Name: "uplink", Epoch: epoch, Impairments: s.Uplink, Timeline: s.UplinkTimeline, MTU: s.UplinkMTU, Tap: upTap},
		Downlink: netem.LinkConfig{Name: "downlink", Epoch: epoch, Impairments: s.Downlink, Timeline: s.DownlinkTimeline, MTU: s.DownlinkMTU, Tap: downTap},
		Recorder: capt.recorder(),
		ECN:      s.ECN,
	}
	if len(s.Hops) > 0 {
		if _, ok := tr.(transport.Memory); !ok {
			return nil, errors.Join(fmt.Errorf("%w: a path of several hops in %T (only the in-memory network makes one)", ErrUnsupported, tr), capt.finish(nil))
		}
		if upTap != nil || downTap != nil {
			// A capture's interfaces are the session's two links; a path
			// of hops has none of its own to tap.
			return nil, errors.Join(fmt.Errorf("%w: a packet capture of a path of several hops", ErrUnsupported), capt.finish(nil))
		}
		for _, h := range s.Hops {
			h.Up.Name, h.Down.Name = "hop/"+h.Name+"/up", "hop/"+h.Name+"/down"
			h.Up.Epoch, h.Down.Epoch = epoch, epoch
			nw.Hops = append(nw.Hops, h)
		}
		nw.UpBottleneck, nw.DownBottleneck = s.UpBottleneck, s.DownBottleneck
	}
	dialed := time.Now()
	conn, err := tr.Open(ctx, nw)
	if err != nil {
		return nil, errors.Join(err, capt.finish(nil))
	}
	n.conn, n.capt, n.handshake = conn, capt, time.Since(dialed)
	return n, nil
}

// waitForZero waits for time zero, or takes the end of the handshake as
// time zero when the session has no Lead.
func (n *sessionNet) waitForZero(ctx context.Context) error {
	if n.zero.IsZero() {
		n.zero = time.Now()
	} else if !sleepUntil(ctx, n.zero) {
		return fmt.Errorf("lab: stopped before time zero: %w", context.Cause(ctx))
	}
	n.late = max(0, time.Since(n.zero))
	return nil
}

// close closes the network, then ends the capture with the links' final
// counters.
func (n *sessionNet) close() error {
	n.conn.Close()
	return n.capt.finish(n.conn.Stats)
}

// sessionEnds are a session's agent and viewer, recording into one
// ground truth.
type sessionEnds struct {
	rec *groundtruth.Recorder
	// arrived counts the video's bytes by arrival, for the flows' metrics.
	arrived   *atomic.Int64
	scr       *screen.Model
	ag        *agent.Agent
	vw        *viewer.Viewer
	targets   *targetRecorder
	decisions *decisionFeed
	// judge decodes real bitstreams for the viewer; nil for the models.
	judge *judge
}

// newEnds builds the agent and the viewer, their clocks and screen
// counted from start, time zero.
func newEnds(s Session, start time.Time) (_ *sessionEnds, err error) {
	e := &sessionEnds{arrived: new(atomic.Int64)}
	if s.Metrics != nil {
		e.rec = groundtruth.NewObserved(metricsObserver{m: s.Metrics, arrived: e.arrived})
	} else {
		e.rec = groundtruth.New()
	}
	scfg := screen.Config{Timeline: []screen.Phase{{Source: screen.Animation{}}}}
	if s.Screen != nil {
		scfg = *s.Screen
	}
	if e.scr, err = screen.New(s.Seed, scfg); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	pics := &capturedPictures{}
	if e.ag, err = agent.New(e.agentConfig(s, start, pics)); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	vcfg := s.Viewer
	vcfg.Seed, vcfg.Recorder = s.Seed, e.rec
	if pe, ok := e.ag.Encoder().(encoder.PixelEncoder); ok && vcfg.Decoder == nil {
		// Real bitstreams: the viewer decodes them, and the lab judges
		// what it shows (realcodec.go).
		if e.judge, err = newJudge(pe, pics); err != nil {
			return nil, err
		}
		vcfg.Decoder = e.judge
	}
	vcfg.Clock = clock.New(s.ViewerClock.Offset, s.ViewerClock.DriftPPM, start)
	if e.vw, err = viewer.New(vcfg); err != nil {
		e.close()
		return nil, fmt.Errorf("lab: %w", err)
	}
	return e, nil
}

// agentConfig completes the session's agent configuration: the lab's
// seed, recorder, screen and clock, the default controller, and the
// recorder of its targets wrapped around it. pics keeps the captured
// pictures for a judge of real bitstreams.
func (e *sessionEnds) agentConfig(s Session, start time.Time, pics *capturedPictures) agent.Config {
	acfg := s.Agent
	acfg.Seed, acfg.Recorder, acfg.Screen = s.Seed, e.rec, e.scr
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
	e.decisions = newDecisionFeed(s.Metrics, acfg.Controller)
	e.targets = &targetRecorder{Controller: acfg.Controller, metrics: s.Metrics}
	acfg.Controller = e.targets
	if acfg.OnPicture == nil {
		acfg.OnPicture = pics.put
	}
	return acfg
}

// close releases the judge's decoder, if any.
func (e *sessionEnds) close() {
	if e.judge != nil {
		e.judge.close()
	}
}

// ran is what the run phase measured beside the ground truth.
type ran struct {
	// stopped is when the session was stopped (Result.End).
	stopped time.Time
	samples []Sample
	traffic []traffic.Result
	// interrupted says why the session ended early; nil when it ran to
	// its end.
	interrupted error
}

// runEnds runs the agent, the viewer and the traffic from time zero to
// the session's end, or until ctx ends, sampling the links on the way.
func runEnds(ctx context.Context, s Session, n *sessionNet, e *sessionEnds) (*ran, error) {
	sm := newSampler(s, n, e)
	sm.take(time.Now())
	end := n.zero.Add(s.Duration)
	var flows *traffic.Run
	if len(s.Traffic) > 0 {
		if n.conn.Traffic == nil {
			return nil, fmt.Errorf("%w: traffic on this transport", ErrUnsupported)
		}
		sch := traffic.Schedule{Seed: s.Seed, Zero: n.zero, End: end, Period: s.SampleEvery, KeyLog: n.capt.keyLog()}
		flows = traffic.Start(ctx, n.conn.Traffic, s.Traffic, sch)
		sm.flows.run = flows
	}
	var wg sync.WaitGroup
	var agentErr, viewerErr error
	session, stop := context.WithCancel(context.Background())
	defer stop()
	wg.Go(func() { agentErr = e.ag.Run(session, n.conn.Agent) })
	wg.Go(func() { viewerErr = e.vw.Run(session, n.conn.Viewer) })
	out := &ran{interrupted: sm.until(ctx, end)}
	out.stopped = time.Now()
	stop()
	wg.Wait()
	out.traffic = flows.Finish()
	if err := errors.Join(agentErr, viewerErr); err != nil {
		return nil, fmt.Errorf("lab: %w", errors.Join(err, out.interrupted))
	}
	out.samples = sm.samples
	return out, nil
}

// collectResult builds the session's result from what the ends recorded and
// the run measured, and adds what only the transport measures.
func collectResult(n *sessionNet, e *sessionEnds, out *ran) (*Result, error) {
	upStats, downStats := n.conn.Stats()
	res := &Result{
		Frames:    e.rec.Frames(),
		Events:    e.rec.Events(),
		Agent:     e.ag.Counters(),
		Viewer:    e.vw.Counters(),
		Probe:     e.ag.Probe(),
		Reports:   e.ag.Reports(),
		Uplink:    upStats,
		Downlink:  downStats,
		Hops:      hopStats(n.conn),
		Start:     n.zero,
		End:       out.stopped,
		Handshake: n.handshake,
		Late:      n.late,
		Samples:   out.samples,
		Targets:   e.targets.changes(),
		Path:      n.conn.Path,
		Traffic:   out.traffic,
		// The content is a function of time only: asking after the end
		// changes nothing the agent saw.
		ScreenChanges: e.scr.Changes(out.stopped.Sub(n.zero)),
	}
	if n.conn.Marked != nil {
		res.Marked = n.conn.Marked()
	}
	// Before the network closes: what the transport alone measures (the
	// kernel senders' TCP_INFO) goes with its sockets.
	if n.conn.Measure != nil {
		var err error
		if res.Kernel, err = n.conn.Measure(transport.Span{Start: res.Start, End: res.End, Frames: res.Frames}); err != nil {
			return nil, err
		}
	}
	return res, out.interrupted
}

// sampleSettle is how long after its instant a sample is read (see
// sampler.until).
const sampleSettle = time.Nanosecond

// sampler takes the links' samples of a session's run and feeds each to
// the metrics: the result keeps them only when the session asks for
// samples (Session.SampleEvery), but metrics want the links' counters
// even when the result does not.
type sampler struct {
	// period is the time between two samples; 0 takes none.
	period time.Duration
	// keep keeps the samples for the result.
	keep    bool
	samples []Sample
	start   time.Time
	stats   func() (up, down netem.Stats)
	hops    func() []transport.HopStats

	links     *linkFeed
	flows     *flowFeed
	decisions *decisionFeed
}

func newSampler(s Session, n *sessionNet, e *sessionEnds) *sampler {
	period := s.SampleEvery
	if period == 0 && s.Metrics != nil {
		period = result.DefaultSampleEvery
	}
	return &sampler{
		period: period, keep: s.SampleEvery > 0, start: n.zero, stats: n.conn.Stats,
		hops:      func() []transport.HopStats { return hopStats(n.conn) },
		links:     newLinkFeed(s.Metrics),
		flows:     newFlowFeed(s.Metrics, s.Traffic, e.arrived, s.capacity),
		decisions: e.decisions,
	}
}

// take samples the links at instant at.
func (sm *sampler) take(at time.Time) {
	if sm.period == 0 {
		return
	}
	smp := Sample{At: at, Hops: sm.hops()}
	smp.Uplink, smp.Downlink = sm.stats()
	if sm.keep {
		sm.samples = append(sm.samples, smp)
	}
	sm.links.feed(smp)
	sm.flows.feed(at.Sub(sm.start))
	sm.decisions.feed()
}

// until waits for the session's end, taking the samples on the way, and
// returns why the session ended early (nil when it did not).
//
// The samples are taken here, between the waits for the end, rather
// than by a goroutine of their own: the last one is then certainly taken
// at the end instant, before the session stops. Each is read a
// nanosecond after its instant and stands for it: a packet the viewer
// sends at the very instant (its reports come every 250 ms from its
// start, as the samples do) is then always counted in it, never only
// when the goroutines woken at that instant happen to run in one order
// rather than the other.
func (sm *sampler) until(ctx context.Context, end time.Time) error {
	for k := 1; ; k++ {
		next := end
		if sm.period > 0 {
			next = minTime(end, sm.start.Add(time.Duration(k)*sm.period))
		}
		if !sleepUntil(ctx, next.Add(sampleSettle)) {
			err := fmt.Errorf("lab: session stopped after %v of %v: %w", time.Since(sm.start), end.Sub(sm.start), context.Cause(ctx))
			sm.take(time.Now())
			return err
		}
		sm.take(next)
		if !next.Before(end) {
			return nil
		}
	}
}

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

// hopStats reads the counters of a path of hops; nil for the one pair of
// links.
func hopStats(c *transport.Conn) []transport.HopStats {
	if c.Hops == nil {
		return nil
	}
	return c.Hops()
}
