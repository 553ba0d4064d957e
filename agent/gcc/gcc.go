// Package gcc is the delay-based part of Google Congestion Control, after
// draft-ietf-rmcat-gcc-02 section 5, behind the same interface as
// NuviraHub's adaptive bitrate (package abr, findings N10-N14), so that a
// scenario can hold one against the other.
//
// It needs no viewer report (Report is ignored): it watches every frame's
// acknowledgement (agent.FrameObserver), which carries the frame's send time
// (agent's clock) and its arrival at the viewer (viewer's clock, of which
// only differences are used, as the draft's own inter-arrival times).
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
//     last 60 groups (the draft leaves K open).
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
//
// What is left of N13 in GCC is the draft's own: an over-use signalled on
// a still screen (sparse frames, jumpy latency) decreases to 0.85 of a tiny
// incoming rate, straight to Min, and the 1.5 R_hat bound then keeps it
// there until the screen moves; from 0.5 to 4 Mbit/s at 8% a second takes
// 27 s. There is no utilisation guard here, on purpose: this is WebRTC's
// controller, held against NuviraHub's.
//
// The controller is deterministic and safe for concurrent use.
package gcc

import (
	"errors"
	"fmt"
	"math"
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

// The draft's parameters (section 5.6, Table 1) and this adaptation's.
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
)

// Rules a Decision may name: the rate controller's state entered, or a
// clamp.
const (
	RuleIncrease = "increase"
	RuleDecrease = "decrease"
	RuleHold     = "hold"
	RuleClamp    = "clamp"
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

// Decision is one step of the rate controller worth recording: a change of
// state (the draft's Increase, Decrease, Hold), every update in Decrease
// that lowers the estimate, a switch between multiplicative and additive
// increase, or a clamp. Small per-frame increases are not recorded; sample
// Bitrate for the curve.
type Decision struct {
	// At is when it was taken (agent's time).
	At time.Time
	// Old and New are the target before and after, in bits per second.
	Old, New int64
	// Rule is the state entered (RuleIncrease, RuleDecrease, RuleHold) or
	// RuleClamp.
	Rule string
	// Signal is the detector's output that drove it.
	Signal string
	// Trend is m(i), the queue the delay trend builds over the horizon, and
	// Threshold the adaptive del_var_th it was compared with.
	Trend, Threshold time.Duration
	// Received is R_hat in bits per second; zero before 500 ms of
	// arrivals are known.
	Received int64
	// Additive is true when the increase is additive (near convergence).
	Additive bool
}

// Estimate is the controller's state, for tests, metrics and logs.
type Estimate struct {
	// Target is A_hat clamped, as Bitrate returns it.
	Target int64
	// State is the rate controller's (RuleIncrease, RuleDecrease,
	// RuleHold); Signal the detector's last output.
	State, Signal string
	// Trend is m(i) over the horizon; Threshold is del_var_th.
	Trend, Threshold time.Duration
	// Received is R_hat, zero before 500 ms of arrivals.
	Received int64
	// Additive is true in additive increase.
	Additive bool
	// Groups counts the groups the arrival-time filter has processed.
	Groups int
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

	rate    float64 // A_hat, bits per second
	asked   int64   // initial bitrate when clamped, recorded at first call
	touched bool

	// Groups: the one being filled, and the last complete one.
	cur, prev       group
	haveCur, havePr bool
	groups          int

	// Arrival-time filter (5.3), in milliseconds.
	m, e, varV float64
	deltas     [fMaxGroups]float64 // inter-departure times, ms
	nDeltas    int

	// Over-use detector (5.4).
	trend, prevTrend float64 // ms over the horizon
	threshold        float64 // ms
	over             bool
	overSince        time.Time // viewer's clock
	signal           string

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
	avgMax     float64 // incoming rate at past decreases: mean,
	varMax     float64 // variance,
	nMax       int     // and how many (statistics valid from two)
	decisions  []Decision
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
	g := &GCC{cfg: c, rate: float64(c.Initial), e: initialError, varV: 1,
		threshold: initialThreshold, signal: SignalNormal, state: RuleIncrease}
	if c.Initial < c.Min || c.Initial > c.Max {
		g.asked = c.Initial
		g.rate = float64(min(max(c.Initial, c.Min), c.Max))
	}
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
			Rule: RuleClamp, Signal: g.signal, Threshold: msDur(g.threshold)})
	}
}

func (g *GCC) target() int64 { return int64(math.Round(g.rate)) }

func msDur(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Report implements agent.Controller. The delay-based controller needs no
// viewer report: it reads the acknowledgements.
func (g *GCC) Report(now time.Time, _ wire.Report) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.touch(now)
}

// Bitrate implements agent.Controller: the delay-based estimate A_hat,
// clamped to [Min, Max].
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
	return Estimate{Target: g.target(), State: g.state, Signal: g.signal,
		Trend: msDur(g.trend), Threshold: msDur(g.threshold), Received: int64(math.Round(r)),
		Additive: g.additive, Groups: g.groups}
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

// process runs the arrival-time filter, the detector and the rate control
// on one complete group against the previous one.
func (g *GCC) process(now time.Time, prev, cur group) {
	dT := msOf(cur.lastSent.Sub(prev.lastSent))
	dt := msOf(cur.lastArrived.Sub(prev.lastArrived))
	if dT <= 0 {
		return
	}
	g.groups++
	d := dt - dT // inter-group delay variation (5.1)

	// Arrival-time filter (5.3).
	g.deltas[g.nDeltas%fMaxGroups] = dT
	g.nDeltas++
	n := min(g.nDeltas, fMaxGroups)
	minDT, sumDT := math.Inf(1), 0.0
	for _, x := range g.deltas[:n] {
		minDT = min(minDT, x)
		sumDT += x
	}
	// f_max = 1/minDT per ms; 30/(1000 f_max) = 0.03 minDT.
	alpha := math.Pow(1-chi, 30*minDT/1000)
	z := d - g.m
	zc := z
	if lim := 3 * math.Sqrt(g.varV); math.Abs(zc) > lim {
		zc = math.Copysign(lim, zc)
	}
	g.varV = max(alpha*g.varV+(1-alpha)*zc*zc, 1)
	k := (g.e + stateNoise) / (g.varV + g.e + stateNoise)
	g.m += z * k
	g.e = (1 - k) * (g.e + stateNoise)

	// Over-use detector (5.4), on the queue built over the horizon.
	g.trend = g.m * horizon / (sumDT / float64(n))
	sig := SignalNormal
	switch {
	case g.trend > g.threshold:
		if !g.over {
			g.over, g.overSince = true, cur.lastArrived
		}
		if cur.lastArrived.Sub(g.overSince) >= overuseTime && g.trend >= g.prevTrend {
			sig = SignalOveruse
		}
	case g.trend < -g.threshold:
		g.over = false
		sig = SignalUnderuse
	default:
		g.over = false
	}
	if abs := math.Abs(g.trend); abs-g.threshold <= thresholdSkip {
		kk := kUp
		if abs < g.threshold {
			kk = kDown
		}
		gain := min(kk*dt, 1)
		g.threshold = min(max(g.threshold+gain*(abs-g.threshold), minThreshold), maxThreshold)
	}
	g.prevTrend = g.trend
	g.signal = sig

	g.control(now, sig)
}

// next is the draft's state table (5.5): blank fields keep the state.
func next(state, sig string) string {
	switch sig {
	case SignalOveruse:
		return RuleDecrease
	case SignalUnderuse:
		return RuleHold
	}
	if state == RuleDecrease {
		return RuleHold
	}
	return RuleIncrease
}

// control runs one update of the rate controller (5.5) at now.
func (g *GCC) control(now time.Time, sig string) {
	var elapsed float64 // seconds since the last update
	if g.haveUpdate {
		elapsed = max(now.Sub(g.lastUpdate).Seconds(), 0)
	}
	g.lastUpdate, g.haveUpdate = now, true

	old := g.state
	g.state = next(old, sig)
	r, valid := g.received()
	oldRate := g.rate
	wasAdditive := g.additive
	rate := g.rate

	switch g.state {
	case RuleIncrease:
		std := math.Sqrt(g.varMax)
		if g.nMax >= 2 && valid && r > g.avgMax+3*std {
			g.nMax = 0 // the congestion level changed: start over
		}
		g.additive = g.nMax >= 2 && valid && math.Abs(r-g.avgMax) <= 3*std
		if g.additive {
			response := 100 + g.rtt
			a := 0.5 * min(elapsed*1000/response, 1)
			bitsPerFrame := rate / assumedFPS
			packets := math.Max(math.Ceil(bitsPerFrame/packetBits), 1)
			rate += max(1000, a*bitsPerFrame/packets)
		} else {
			rate *= math.Pow(eta, min(elapsed, 1))
		}
		if valid && rate > maxOverReceived*r {
			rate = max(g.rate, maxOverReceived*r)
		}
	case RuleDecrease:
		if old != RuleDecrease && valid {
			// The incoming rate at decreases: where convergence is.
			if g.nMax == 0 {
				g.avgMax, g.varMax = r, 0
			} else {
				dev := r - g.avgMax
				g.avgMax = avgMaxSmoothing*g.avgMax + (1-avgMaxSmoothing)*r
				g.varMax = avgMaxSmoothing*g.varMax + (1-avgMaxSmoothing)*dev*dev
			}
			g.nMax++
		}
		switch {
		case valid:
			rate = min(rate, beta*r)
		case old != RuleDecrease:
			// No incoming rate yet: once per episode, not once per group,
			// or a start-up over-use would compound 0.85 every frame.
			rate *= beta
		}
		g.additive = false
	}
	clamped := min(max(rate, float64(g.cfg.Min)), float64(g.cfg.Max))
	g.rate = clamped

	d := Decision{At: now, Old: int64(math.Round(oldRate)), New: g.target(), Rule: g.state, Signal: sig,
		Trend: msDur(g.trend), Threshold: msDur(g.threshold), Additive: g.additive}
	if valid {
		d.Received = int64(math.Round(r))
	}
	switch {
	case g.state != old, g.state == RuleIncrease && g.additive != wasAdditive:
	case g.state == RuleDecrease && d.New < d.Old:
	case clamped != rate && d.New != d.Old:
		d.Rule = RuleClamp
	default:
		return
	}
	g.decisions = append(g.decisions, d)
}
