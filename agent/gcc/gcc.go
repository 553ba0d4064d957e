// Package gcc is Google Congestion Control after draft-ietf-rmcat-gcc-02,
// both halves: the delay-based controller (section 5) and the loss-based
// one (section 6), behind the same interface as NuviraHub's adaptive
// bitrate (package abr, findings N10-N14), so that a scenario can hold one
// against the other.
//
// It is the draft's send-side variant (section 3): the sender runs both
// controllers on the receiver's feedback. The delay-based half watches every
// frame's acknowledgement (agent.FrameObserver), which carries the frame's
// send time (agent's clock) and its arrival at the viewer (viewer's clock, of
// which only differences are used, as the draft's own inter-arrival times).
// The loss-based half reads, at every viewer report (250 ms, the lab's
// receiver report), the packets the agent's QUIC sent and declared lost from
// the viewer's acknowledgements (agent.LossObserver): the loss ratio the
// draft's sender computes from the sequence numbers of transport-wide
// feedback. The viewer's report itself is not read.
//
// # Adapting the draft to frames
//
// The draft's packet groups are packets sent within burst_time (5 ms); here
// a group is a frame (the agent hands a frame to QUIC at once), and frames
// handed over within 5 ms of the group's first (refinement passes, N15)
// join it. Its departure T(i) is the send time of its last frame, its
// arrival t(i) the arrival of its last frame. The rest follows the draft:
//
//   - Pre-filtering (5.2): a frame arriving less than burst_time after the
//     group's last one and with a negative delay variation against it (a
//     burst released after an outage) joins the group. Frames that arrive
//     or were sent out of order are ignored by the arrival-time model.
//   - Arrival-time filter (5.3): the scalar Kalman filter on
//     d(i) = t(i) - t(i-1) - (T(i) - T(i-1)), in milliseconds, with
//     q = 10^-3, e(0) = 0.1, chi = 0.01 (the draft's range is
//     [0.001, 0.1]), the noise variance floored at 1 and fed 3-sigma-clipped
//     innovations, alpha = (1-chi)^(30/(1000 f_max)) with f_max over the
//     last 60 groups (the draft leaves K open). This is the draft's Kalman
//     filter, not the trendline (least-squares slope) filter that today's
//     WebRTC uses in its place.
//   - Over-use detector (5.4): m(i) against the adaptive threshold
//     del_var_th (initial 12.5 ms, K_u = 0.01, K_d = 0.00018, clamped to
//     [6, 600] ms, not updated when |m(i)| exceeds it by more than 15 ms),
//     over-use signalled after overuse_time_th = 10 ms above it and only
//     while m(i) >= m(i-1); under-use below -del_var_th.
//   - Rate control (5.5): the Increase / Decrease / Hold state machine of
//     the draft's table; multiplicative increase by
//     1.08^min(time since last update, 1 s), additive increase (half an
//     expected packet per response time, RTT + 100 ms) once the incoming
//     rate is within three standard deviations of its average at past
//     decreases (exponential averages, smoothing 0.95); decrease to
//     beta = 0.85 of the incoming rate R_hat, measured over the last 500 ms
//     of arrivals (with whole frames, from the window's first arrival to its
//     last: see received).
//   - Loss-based control (6), at every report: with a loss ratio p above
//     10% since the previous report, As_hat(i) = As_hat(i-1) (1 - 0.5 p);
//     below 2%, As_hat(i) = 1.05 As_hat(i-1); from 2% to 10% (both
//     included) As_hat is kept. The target is min(As_hat, A_hat) (6: "the
//     actual sending rate is set as the minimum"), clamped to [Min, Max].
//
// Choices where the draft is silent or, read literally, unusable (the
// incoming rate's frame-sized error is another, see received):
//
//   - Scale of m(i). The draft compares the filter's estimate, a delay
//     variation per group, with a threshold in milliseconds of queueing
//     delay. Per group, a sender 20% above capacity adds under 7 ms per
//     30 fps frame, so the literal comparison would only ever see outages.
//     The detector therefore judges the queue the estimated trend builds
//     over a horizon: m(i) = m_hat(i) x Horizon / mean inter-departure time,
//     with Horizon = 300 ms, chosen so that sending one half 8% step (4%)
//     above capacity just crosses the initial 12.5 ms threshold
//     (0.04 x 300 ms = 12 ms).
//   - Additive step. The draft assumes the rate control runs once per
//     period, at least once a response time, and adds
//     max(1000, alpha x packet) bits at each run. Here it runs at every
//     frame group, 30 to 60 times a second, and a floor of 1000 bits per
//     run would climb 30-60 kbit/s a second: faster, at 500 kbit/s, than
//     the multiplicative 8%. The floor is therefore taken per response
//     time like the rest: A_hat grows by
//     min(elapsed / response time, 1) x max(1000, half a packet).
//   - Threshold step. The draft's gain (t(i)-t(i-1)) x K is above 1 for
//     groups more than 100 ms apart (a still screen sends a frame a second);
//     it is capped at 1 so the threshold never overshoots |m(i)|. The
//     detector compares m(i) with the threshold as it was before m(i)
//     updates it.
//   - The bound A_hat < 1.5 R_hat caps increases only: an estimate already
//     above it (the screen went still, the video sends little) is not cut
//     down to it, otherwise every still screen would drop the bitrate to
//     the minimum exactly as N13's old behaviour did. A decrease never
//     raises the estimate (min(A_hat, beta R_hat)), and before 500 ms of
//     arrivals are known it falls once to beta A_hat on entering Decrease.
//   - The delay-based estimate bounds the loss-based one. Section 2 has the
//     delay-based controller pass its estimate to the loss-based one as a
//     maximum, and section 6 takes the minimum of the two. Read alone,
//     section 6 would let As_hat grow 5% a report without end on a
//     loss-free path, and a later loss would cut an estimate far above the
//     rate in force, to no effect. So As_hat never exceeds A_hat: each rule
//     starts from min(As_hat(i-1), A_hat), and an increase that reaches
//     A_hat pins As_hat to it. Pinned, As_hat follows A_hat, so that while
//     loss does not limit, the delay-based ramp moves the target at its own
//     pace between reports, until a report with 2% loss or more sets
//     As_hat free at A_hat's value of then. It starts pinned: the 5% step
//     applies only while the loss-based estimate is the one that limits.
//   - Too few packets. A report of a still screen may cover two packets,
//     and one lost would read as 50%. As WebRTC's implementation does, a
//     loss ratio is taken only over at least 20 packets: reports with fewer
//     add their counts to the next. Reports with no packet sent change
//     nothing.
//   - Section 6 names the round-trip time as an input but gives no rule
//     that uses it (earlier versions bounded As_hat from below by the TFRC
//     equation); none is applied.
//
// What is left of N13 in GCC is the draft's own: an over-use signalled on
// a still screen (sparse frames, jumpy latency) decreases to 0.85 of a tiny
// incoming rate, straight to Min, and the 1.5 R_hat bound then keeps it
// there until the screen moves; from 0.5 to 4 Mbit/s at 8% a second takes
// 27 s. There is no utilisation guard here, on purpose: this is WebRTC's
// controller, held against NuviraHub's.
//
// # Decisions
//
// A Decision is a change of the target by one rule (RuleDelayDecrease,
// RuleDelayIncrease, RuleDelayAdditive, RuleLossDecrease, RuleLossIncrease,
// RuleClamp): steps that leave the target where it was (a Hold, a loss
// ratio between 2% and 10%, an increase while the other half limits) are
// not decisions. Consecutive steps of one rule are one decision, as the
// ABR's one step is: the delay-based rules move the target a little at
// every frame, and a decision there is a run of them, from the first step
// (At, Old) to the last (New, and the inputs that set it). A run ends when
// another rule moves the target or its own half does something else (the
// rate controller leaves the state, a loss report falls in another band).
// So the decision count of GCC reads beside the ABR's: how often the
// controller changed course, not how many frames it saw.
//
// The controller is deterministic and safe for concurrent use.
package gcc

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/internal/wire"
)

// Defaults: the ABR's own bounds (N13's 4 Mbit/s start and 0.5 Mbit/s
// floor), so that the two run side by side on equal terms.
const (
	DefaultInitial = abr.DefaultInitial
	DefaultMin     = abr.DefaultMin
	DefaultMax     = abr.DefaultMax
)

// The draft's parameters (section 5.6, Table 1; section 6) and this
// adaptation's.
const (
	burstTime        = 5 * time.Millisecond // groups (4, 5.2)
	stateNoise       = 1e-3                 // q (5.3)
	initialError     = 0.1                  // e(0)
	chi              = 0.01                 // within [0.001, 0.1]
	fMaxGroups       = 60                   // K of f_max: the draft leaves it open
	initialThreshold = 12.5                 // del_var_th(0), ms
	minThreshold     = 6.0                  // ms
	maxThreshold     = 600.0                // ms
	thresholdSkip    = 15.0                 // ms: |m| - del_var_th beyond this: no update
	kUp              = 0.01                 // K_u, per ms
	kDown            = 0.00018              // K_d, per ms
	overuseTime      = 10 * time.Millisecond
	rateWindow       = 500 * time.Millisecond // T of R_hat, within [0.5, 1] s
	beta             = 0.85
	eta              = 1.08  // multiplicative increase per second
	maxOverReceived  = 1.5   // A_hat < 1.5 R_hat
	horizon          = 300.0 // ms: scale of m(i), see the package comment
	avgMaxSmoothing  = 0.95
	assumedFPS       = 30.0 // the draft's for expected_packet_size_bits
	packetBits       = 1200 * 8
	lossHigh         = 0.10 // above: As_hat x (1 - 0.5 p) (6)
	lossLow          = 0.02 // below: As_hat x 1.05 (6)
	lossIncrease     = 1.05
	lossMinPackets   = 20 // a loss ratio needs this many packets (see the package comment)
)

// Rules a Decision may name: the rule that moved the target. Those of the
// delay-based half start with "delay-", those of the loss-based half with
// "loss-".
const (
	// RuleDelayDecrease is over-use (5.5): A_hat to beta x R_hat.
	RuleDelayDecrease = "delay-decrease"
	// RuleDelayIncrease is the multiplicative increase, 8% a second, far
	// from convergence (5.5).
	RuleDelayIncrease = "delay-increase"
	// RuleDelayAdditive is the additive increase near convergence (5.5).
	RuleDelayAdditive = "delay-additive"
	// RuleLossDecrease is a loss ratio p above 10%: As_hat x (1 - 0.5 p) (6).
	RuleLossDecrease = "loss-decrease"
	// RuleLossIncrease is a loss ratio below 2%: As_hat x 1.05 (6).
	RuleLossIncrease = "loss-increase"
	// RuleClamp is an initial bitrate outside [Min, Max], brought inside.
	RuleClamp = "clamp"
)

// States of the delay-based rate controller (5.5).
const (
	StateIncrease = "increase"
	StateDecrease = "decrease"
	StateHold     = "hold"
)

// Signals of the over-use detector.
const (
	SignalNormal   = "normal"
	SignalOveruse  = "overuse"
	SignalUnderuse = "underuse"
)

// Config bounds the controller. Zero values mean the defaults.
type Config struct {
	// Initial is the bitrate at start, in bits per second.
	Initial int64
	// Min and Max bound the bitrate, in bits per second.
	Min, Max int64
}

// WithDefaults returns c with every zero field replaced by its default.
func (c Config) WithDefaults() Config {
	if c.Initial == 0 {
		c.Initial = DefaultInitial
	}
	if c.Min == 0 {
		c.Min = DefaultMin
	}
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	return c
}

// ErrConfig wraps every reason New refuses a configuration.
var ErrConfig = errors.New("gcc: bad config")

// Decision is one change of the target by one rule: a run of steps of that
// rule (see the package comment), from the target before its first step
// (Old, at At) to the target after its last (New). The inputs are those of
// the last step, the one that set New. A step that leaves the target where
// it was is no decision.
type Decision struct {
	// At is when the run's first step was taken (agent's time).
	At time.Time
	// Old and New are the target before and after, in bits per second.
	Old, New int64
	// Rule is one of the Rule constants.
	Rule string
	// Signal is the detector's last output, Trend is m(i), the queue the
	// delay trend builds over the horizon, and Threshold the adaptive
	// del_var_th it was compared with (before m(i) moved it).
	Signal           string
	Trend, Threshold time.Duration
	// Received is R_hat in bits per second at that step; zero before
	// 500 ms of arrivals are known.
	Received int64
	// Loss is the loss ratio of the report behind a loss-based rule; zero
	// for the others.
	Loss float64
}

// Estimate is the controller's state, for tests, metrics and logs.
type Estimate struct {
	// Target is min(LossBased, DelayBased) clamped, as Bitrate returns it.
	Target int64
	// DelayBased is A_hat, LossBased As_hat, in bits per second.
	DelayBased, LossBased int64
	// State is the rate controller's (StateIncrease, StateDecrease,
	// StateHold); Signal the detector's last output.
	State, Signal string
	// Trend is m(i) over the horizon; Threshold is del_var_th.
	Trend, Threshold time.Duration
	// Received is R_hat, zero before 500 ms of arrivals.
	Received int64
	// Additive is true in additive increase.
	Additive bool
	// Groups counts the groups the arrival-time filter has processed.
	Groups int
	// Loss is the last loss ratio judged; Reports counts them.
	Loss    float64
	Reports int
}

type group struct {
	firstSent, lastSent, lastArrived time.Time
}

type arrival struct {
	at    time.Time // viewer's clock
	bytes int
}

// GCC is the controller. Create it with New.
type GCC struct {
	mu  sync.Mutex
	cfg Config

	rate     float64 // A_hat, bits per second, within [Min, Max]
	lossRate float64 // As_hat, bits per second, at least Min, unless pinned
	pinned   bool    // As_hat follows A_hat (see the package comment)
	asked    int64   // initial bitrate when clamped, recorded at first call
	touched  bool

	// Groups: the one being filled, and the last complete one.
	cur, prev       group
	haveCur, havePr bool
	groups          int

	filter filter   // arrival-time filter (5.3)
	det    detector // over-use detector (5.4)
	trend  float64  // m(i) over the horizon, ms

	// Rate control (5.5).
	state      string
	lastUpdate time.Time
	haveUpdate bool
	additive   bool
	rtt        float64 // ms, smoothed send-to-ack
	haveRTT    bool
	arrivals   []arrival
	firstArr   time.Time
	latestArr  time.Time
	haveArr    bool
	conv       convergence

	// Loss-based control (6): the counts at the last report judged, and
	// whether there was one.
	lossSent, lossLost uint64
	haveLoss           bool
	loss               float64
	reports            int

	decisions []Decision
	open      int // index of the run that may still grow, -1 for none
}

// New returns a controller for c.WithDefaults().
func New(c Config) (*GCC, error) {
	if c.Initial < 0 || c.Min < 0 || c.Max < 0 {
		return nil, fmt.Errorf("%w: negative bitrate in %+v", ErrConfig, c)
	}
	c = c.WithDefaults()
	if c.Min > c.Max {
		return nil, fmt.Errorf("%w: Min %d above Max %d", ErrConfig, c.Min, c.Max)
	}
	g := &GCC{cfg: c, rate: float64(c.Initial), filter: newFilter(), det: newDetector(),
		state: StateIncrease, open: -1}
	if c.Initial < c.Min || c.Initial > c.Max {
		g.asked = c.Initial
		g.rate = float64(min(max(c.Initial, c.Min), c.Max))
	}
	g.lossRate, g.pinned = g.rate, true
	return g, nil
}

// Config returns the configuration the controller runs with.
func (g *GCC) Config() Config { return g.cfg }

func (g *GCC) touch(now time.Time) {
	if g.touched {
		return
	}
	g.touched = true
	if g.asked != 0 {
		g.decisions = append(g.decisions, Decision{At: now, Old: g.asked, New: g.target(),
			Rule: RuleClamp, Signal: g.det.signal, Threshold: msDur(g.det.threshold)})
	}
}

// target is the rate in force (6): the smaller estimate, within bounds.
func (g *GCC) target() int64 {
	t := min(max(min(g.rate, g.lossBased()), float64(g.cfg.Min)), float64(g.cfg.Max))
	return int64(math.Round(t))
}

// lossBased is As_hat: A_hat while pinned to it.
func (g *GCC) lossBased() float64 {
	if g.pinned {
		return g.rate
	}
	return g.lossRate
}

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Report implements agent.Controller. Neither half reads the viewer's
// report itself: the delay-based one reads the acknowledgements, the
// loss-based one the packet counts handed over with each report (Loss).
func (g *GCC) Report(now time.Time, _ wire.Report) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.touch(now)
}

// Bitrate implements agent.Controller: min(As_hat, A_hat), clamped to
// [Min, Max].
func (g *GCC) Bitrate(now time.Time) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.touch(now)
	return g.target()
}

// Decisions returns a copy of the decisions so far, oldest first.
func (g *GCC) Decisions() []Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Decision(nil), g.decisions...)
}

// Estimate returns the controller's current state.
func (g *GCC) Estimate() Estimate {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, _ := g.received()
	return Estimate{Target: g.target(), DelayBased: int64(math.Round(g.rate)), LossBased: int64(math.Round(g.lossBased())),
		State: g.state, Signal: g.det.signal, Trend: msDur(g.trend), Threshold: msDur(g.det.threshold),
		Received: int64(math.Round(r)), Additive: g.additive, Groups: g.groups, Loss: g.loss, Reports: g.reports}
}

// FrameSent implements agent.FrameObserver. The acknowledgement carries the
// send time again, so nothing is needed here.
func (g *GCC) FrameSent(now time.Time, _ uint64, _ int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.touch(now)
}

// FrameAcked implements agent.FrameObserver: one frame's send time (agent's
// clock) and arrival (viewer's clock) feed the arrival-time model; its
// bytes feed the incoming rate.
func (g *GCC) FrameAcked(now time.Time, _ uint64, bytes int, sent, arrived time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.touch(now)
	if sent.IsZero() || arrived.IsZero() {
		return
	}
	// Response time (5.5) needs a round trip: send to acknowledgement, both
	// on the agent's clock.
	if s := msOf(now.Sub(sent)); s >= 0 {
		if !g.haveRTT {
			g.rtt, g.haveRTT = s, true
		} else {
			g.rtt = 0.875*g.rtt + 0.125*s
		}
	}
	g.addArrival(arrived, bytes)

	if !g.haveCur {
		g.cur, g.haveCur = group{sent, sent, arrived}, true
		return
	}
	if sent.Before(g.cur.lastSent) || arrived.Before(g.cur.lastArrived) {
		return // out of order: ignored by the arrival-time model (5.1)
	}
	interArr := arrived.Sub(g.cur.lastArrived)
	interDep := sent.Sub(g.cur.lastSent)
	if sent.Sub(g.cur.firstSent) <= burstTime || (interArr < burstTime && interArr-interDep < 0) {
		g.cur.lastSent, g.cur.lastArrived = sent, arrived
		return
	}
	done := g.cur
	g.cur = group{sent, sent, arrived}
	if g.havePr {
		g.process(now, g.prev, done)
	}
	g.prev, g.havePr = done, true
}

// Loss implements agent.LossObserver: the loss-based controller (6) runs
// on the packets sent and declared lost since the last report it judged.
func (g *GCC) Loss(now time.Time, sent, lost uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.touch(now)
	if !g.haveLoss || sent < g.lossSent || lost < g.lossLost {
		// The first counts, or a new connection's: a starting point.
		g.lossSent, g.lossLost, g.haveLoss = sent, lost, true
		return
	}
	n, l := sent-g.lossSent, lost-g.lossLost
	if n < lossMinPackets {
		return // too few to judge: they count with the next report's
	}
	g.lossSent, g.lossLost = sent, lost
	p := min(float64(l)/float64(n), 1)
	g.loss = p
	g.reports++

	old := g.target()
	var rule string
	g.lossRate, g.pinned, rule = lossRule(g.lossBased(), g.rate, p)
	g.lossRate = max(g.lossRate, float64(g.cfg.Min))
	d := Decision{Signal: g.det.signal, Trend: msDur(g.trend), Threshold: msDur(g.det.compared), Loss: p}
	if r, ok := g.received(); ok {
		d.Received = int64(math.Round(r))
	}
	g.note(now, old, rule, "loss-", d)
}

// lossRule is the loss-based controller's rule (6) for a report with loss
// ratio p: As_hat after it, whether it is pinned to A_hat, and the rule
// applied ("" for a hold). Every rule starts from As_hat bounded by the
// delay-based estimate a; an increase that reaches a pins it there (see
// the package comment).
func lossRule(as, a, p float64) (_ float64, pinned bool, rule string) {
	as = min(as, a)
	switch {
	case p > lossHigh:
		return as * (1 - 0.5*p), false, RuleLossDecrease
	case p < lossLow:
		if as *= lossIncrease; as >= a {
			return a, true, RuleLossIncrease
		}
		return as, false, RuleLossIncrease
	}
	return as, false, ""
}

// addArrival keeps the last rateWindow of arrivals for R_hat.
func (g *GCC) addArrival(at time.Time, bytes int) {
	if !g.haveArr {
		g.firstArr, g.latestArr, g.haveArr = at, at, true
	}
	if at.After(g.latestArr) {
		g.latestArr = at
	}
	g.arrivals = append(g.arrivals, arrival{at, bytes})
	i := 0
	for i < len(g.arrivals) && g.latestArr.Sub(g.arrivals[i].at) >= rateWindow {
		i++
	}
	if i > 0 {
		g.arrivals = append(g.arrivals[:0], g.arrivals[i:]...)
	}
}

// received is R_hat (5.5): the incoming rate over the last rateWindow of
// arrivals; ok once arrivals span the whole window.
//
// The draft sums the packets of the window and divides by its length. A
// frame is a large packet (10-20 KB), and whether the window's first frame
// counts makes an error of up to one frame, 7-10% at 30 fps in 500 ms,
// enough to land a decrease well under beta times the link's rate. So when
// the window's frames span at least half of it, the bytes after its first
// arrival are divided by the time since that arrival, which is exact for
// frames queued back to back at the bottleneck and for a steady sender
// alike; sparser arrivals use the draft's sum.
func (g *GCC) received() (float64, bool) {
	if !g.haveArr || g.latestArr.Sub(g.firstArr) < rateWindow {
		return 0, false
	}
	var bytes, firstBytes int
	var first time.Time
	n := 0
	for _, a := range g.arrivals {
		if g.latestArr.Sub(a.at) >= rateWindow {
			continue
		}
		bytes += a.bytes
		if n == 0 || a.at.Before(first) {
			first, firstBytes = a.at, a.bytes
		}
		n++
	}
	if span := g.latestArr.Sub(first); n >= 2 && span >= rateWindow/2 {
		return float64((bytes-firstBytes)*8) / span.Seconds(), true
	}
	return float64(bytes*8) / rateWindow.Seconds(), true
}

// filter is the arrival-time filter (5.3): a scalar Kalman filter on the
// inter-group delay variation, in milliseconds.
type filter struct {
	m, e, varV float64
	deltas     [fMaxGroups]float64 // inter-departure times, ms
	n          int
}

func newFilter() filter { return filter{e: initialError, varV: 1} }

// update feeds one group's delay variation d, dT after the previous group's
// departure (both ms), and returns m_hat(i) and the mean inter-departure
// time of the last groups.
func (f *filter) update(d, dT float64) (m, meanDT float64) {
	f.deltas[f.n%fMaxGroups] = dT
	f.n++
	n := min(f.n, fMaxGroups)
	minDT, sumDT := math.Inf(1), 0.0
	for _, x := range f.deltas[:n] {
		minDT = min(minDT, x)
		sumDT += x
	}
	// f_max = 1/minDT per ms; 30/(1000 f_max) = 0.03 minDT.
	alpha := math.Pow(1-chi, 30*minDT/1000)
	z := d - f.m
	zc := z
	if lim := 3 * math.Sqrt(f.varV); math.Abs(zc) > lim {
		zc = math.Copysign(lim, zc)
	}
	f.varV = max(alpha*f.varV+(1-alpha)*zc*zc, 1)
	k := (f.e + stateNoise) / (f.varV + f.e + stateNoise)
	f.m += z * k
	f.e = (1 - k) * (f.e + stateNoise)
	return f.m, sumDT / float64(n)
}

// detector is the over-use detector (5.4) with its adaptive threshold.
type detector struct {
	threshold float64 // del_var_th, ms
	compared  float64 // del_var_th(i-1), the last m(i) was judged against
	prevTrend float64
	over      bool
	overSince time.Time // viewer's clock
	signal    string
}

func newDetector() detector {
	return detector{threshold: initialThreshold, compared: initialThreshold, signal: SignalNormal}
}

// detect judges m(i) (trend, ms) of a group that arrived at arrived, dt ms
// after the previous group (t(i) - t(i-1)), against the threshold as it
// was, then moves the threshold: up by K_u while |m(i)| is above it, down
// by K_d while below, not at all when |m(i)| is more than 15 ms beyond it.
func (d *detector) detect(trend float64, arrived time.Time, dt float64) string {
	d.compared = d.threshold
	sig := SignalNormal
	switch {
	case trend > d.threshold:
		if !d.over {
			d.over, d.overSince = true, arrived
		}
		if arrived.Sub(d.overSince) >= overuseTime && trend >= d.prevTrend {
			sig = SignalOveruse
		}
	case trend < -d.threshold:
		d.over = false
		sig = SignalUnderuse
	default:
		d.over = false
	}
	if abs := math.Abs(trend); abs-d.threshold <= thresholdSkip {
		k := kUp
		if abs < d.threshold {
			k = kDown
		}
		gain := min(k*dt, 1)
		d.threshold = min(max(d.threshold+gain*(abs-d.threshold), minThreshold), maxThreshold)
	}
	d.prevTrend = trend
	d.signal = sig
	return sig
}

// process runs the arrival-time filter, the detector and the rate control
// on one complete group against the previous one.
func (g *GCC) process(now time.Time, prev, cur group) {
	dT := msOf(cur.lastSent.Sub(prev.lastSent))
	dt := msOf(cur.lastArrived.Sub(prev.lastArrived))
	if dT <= 0 {
		return
	}
	g.groups++
	m, meanDT := g.filter.update(dt-dT, dT) // d(i) (5.1)
	// The detector judges the queue the trend builds over the horizon.
	g.trend = m * horizon / meanDT
	g.control(now, g.det.detect(g.trend, cur.lastArrived, dt))
}

// next is the draft's state table (5.5): blank fields keep the state.
func next(state, sig string) string {
	switch sig {
	case SignalOveruse:
		return StateDecrease
	case SignalUnderuse:
		return StateHold
	}
	if state == StateDecrease {
		return StateHold
	}
	return StateIncrease
}

// multiplicative is A_hat after a multiplicative increase (5.5) elapsed
// seconds after the last update: 8% a second, at most one second's worth.
func multiplicative(rate, elapsed float64) float64 {
	return rate * math.Pow(eta, min(elapsed, 1))
}

// additive is A_hat after an additive increase (5.5) elapsed seconds after
// the last update, with a round trip of rtt ms: half an expected packet per
// response time (RTT + 100 ms), the packet's size from the rate at 30
// frames a second, and at least 1000 bits per response time (see the
// package comment).
func additive(rate, elapsed, rtt float64) float64 {
	response := 100 + rtt
	share := min(elapsed*1000/response, 1)
	bitsPerFrame := rate / assumedFPS
	packets := math.Max(math.Ceil(bitsPerFrame/packetBits), 1)
	return rate + share*max(1000, 0.5*bitsPerFrame/packets)
}

// convergence is the average and variance of the incoming rate at past
// decreases (5.5): close to it, the increase is additive.
type convergence struct {
	avg, vari float64
	n         int // statistics are valid from two
}

// decreased adds the incoming rate r at a decrease.
func (c *convergence) decreased(r float64) {
	if c.n == 0 {
		c.avg, c.vari = r, 0
	} else {
		dev := r - c.avg
		c.avg = avgMaxSmoothing*c.avg + (1-avgMaxSmoothing)*r
		c.vari = avgMaxSmoothing*c.vari + (1-avgMaxSmoothing)*dev*dev
	}
	c.n++
}

// near tells whether the incoming rate r is within three standard
// deviations of the average; a rate above that range means the congestion
// level changed, and the statistics start over.
func (c *convergence) near(r float64) bool {
	if c.n < 2 {
		return false
	}
	std := math.Sqrt(c.vari)
	if r > c.avg+3*std {
		c.n = 0
		return false
	}
	return math.Abs(r-c.avg) <= 3*std
}

// control runs one update of the rate controller (5.5) at now.
func (g *GCC) control(now time.Time, sig string) {
	var elapsed float64 // seconds since the last update
	if g.haveUpdate {
		elapsed = max(now.Sub(g.lastUpdate).Seconds(), 0)
	}
	g.lastUpdate, g.haveUpdate = now, true

	oldState := g.state
	g.state = next(oldState, sig)
	r, valid := g.received()
	old := g.target()
	rate := g.rate
	var rule string

	switch g.state {
	case StateIncrease:
		g.additive = valid && g.conv.near(r)
		if g.additive {
			rate, rule = additive(rate, elapsed, g.rtt), RuleDelayAdditive
		} else {
			rate, rule = multiplicative(rate, elapsed), RuleDelayIncrease
		}
		if valid && rate > maxOverReceived*r {
			rate = max(g.rate, maxOverReceived*r)
		}
	case StateDecrease:
		if oldState != StateDecrease && valid {
			g.conv.decreased(r) // where convergence is
		}
		switch {
		case valid:
			rate = min(rate, beta*r)
		case oldState != StateDecrease:
			// No incoming rate yet: once per episode, not once per group,
			// or a start-up over-use would compound 0.85 every frame.
			rate *= beta
		}
		g.additive = false
		rule = RuleDelayDecrease
	}
	g.rate = min(max(rate, float64(g.cfg.Min)), float64(g.cfg.Max))

	d := Decision{Signal: sig, Trend: msDur(g.trend), Threshold: msDur(g.det.compared)}
	if valid {
		d.Received = int64(math.Round(r))
	}
	g.note(now, old, rule, "delay-", d)
}

// note records what one step of a half (prefix "delay-" or "loss-") did:
// rule is the rule it applied ("" for none), old the target before it, in
// the inputs of d. A step that moved the target continues the open run of
// its rule or starts a decision; a step of the half that owns the open run
// but applied another rule ends that run.
func (g *GCC) note(now time.Time, old int64, rule, half string, in Decision) {
	cur := g.target()
	if g.open >= 0 {
		run := &g.decisions[g.open]
		switch {
		case run.Rule == rule && cur != old:
			run.New, run.Signal, run.Trend, run.Threshold = cur, in.Signal, in.Trend, in.Threshold
			run.Received, run.Loss = in.Received, in.Loss
			return
		case strings.HasPrefix(run.Rule, half) && run.Rule != rule, cur != old:
			g.open = -1
		}
	}
	if cur == old || rule == "" {
		return
	}
	in.At, in.Old, in.New, in.Rule = now, old, cur, rule
	g.decisions = append(g.decisions, in)
	g.open = len(g.decisions) - 1
}
