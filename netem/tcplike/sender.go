package tcplike

import (
	"math"
	"time"
)

// segState is what the sender knows of one segment.
type segState struct {
	sent     time.Time
	sacked   bool // SACKed above the cumulative acknowledgement
	lost     bool // judged lost and not sent again since
	inFlight bool // counted in pipe: sent, not acknowledged, not lost
	retrans  bool // sent more than once
}

// sender is one connection's sending side: the segments, the window and
// the timer. Its methods run under the server's lock.
type sender struct {
	srv  *Server
	conn *serverConn
	cfg  Config
	// total is the segments to send, -1 while unbounded.
	total int64
	size  int64 // bytes asked for; 0: unbounded

	segs       []segState // segs[i] is segment base+i
	base       int64
	una, next  int64 // lowest unacknowledged, next new
	pipe       int   // segments in flight (RFC 6675's pipe)
	highSacked int64 // highest segment SACKed, -1: none
	lostHint   int64 // no segment below it is lost and unsent
	lossScan   int64 // segments below it were judged by the SACK rule

	cwnd, ssthresh float64 // segments
	cc             controller
	// fastRecovery: a loss found by SACK cut the window, which stays cut
	// until the cumulative acknowledgement passes recoverPoint. guard:
	// losses of segments below it belong to a loss event already
	// answered (one cut per window).
	fastRecovery bool
	recoverPoint int64
	guard        int64
	// cwrPoint: an ECN echo cuts the window once per window; echoes of
	// segments below it belong to a cut already made.
	cwrPoint int64
	dctcp    dctcp // ECNL4S's estimate of the fraction marked

	srtt, rttvar, rto time.Duration
	timer             *time.Timer
	backoff           int
	done              bool
}

func newSender(srv *Server, c *serverConn, size int64) *sender {
	s := &sender{srv: srv, conn: c, cfg: srv.cfg, size: size, total: -1, highSacked: -1,
		cwnd: float64(srv.cfg.InitialWindow), ssthresh: math.Inf(1), rto: initialRTO}
	if size > 0 {
		s.total = (size + MSS - 1) / MSS
	}
	switch {
	case srv.cfg.Congestion == Reno || srv.cfg.ECN == ECNL4S:
		// A scalable (DCTCP-like) flow grows as Reno does.
		s.cc = &reno{}
	default:
		s.cc = &cubic{}
	}
	s.dctcp.alpha = 1 // RFC 8257: alpha starts at 1
	return s
}

// seg returns segment n's state, growing the table as new ones are sent.
func (s *sender) seg(n int64) *segState {
	for n-s.base >= int64(len(s.segs)) {
		s.segs = append(s.segs, segState{})
	}
	return &s.segs[n-s.base]
}

// payload is segment n's payload length.
func (s *sender) payload(n int64) int {
	if s.total > 0 && n == s.total-1 {
		if r := int(s.size % MSS); r != 0 {
			return r
		}
	}
	return MSS
}

// transmit sends as the window allows: lost segments first (lowest
// first), then new ones.
func (s *sender) transmit(now time.Time) {
	if s.done {
		return
	}
	window := int(s.cwnd)
	rwnd := int64(max(1, s.cfg.ReceiveWindow/MSS))
	for s.pipe < window {
		n, ok := s.nextLost()
		if !ok {
			if (s.total >= 0 && s.next >= s.total) || s.next-s.una >= rwnd {
				break
			}
			n = s.next
			s.next++
		}
		s.send(now, n)
	}
	if s.timer == nil && s.pipe > 0 {
		s.arm()
	}
}

// nextLost finds the lowest segment judged lost and not yet sent again.
func (s *sender) nextLost() (int64, bool) {
	for n := max(s.lostHint, s.una); n < s.next; n++ {
		if st := s.seg(n); st.lost {
			s.lostHint = n
			return n, true
		}
	}
	s.lostHint = s.next
	return 0, false
}

func (s *sender) send(now time.Time, n int64) {
	st := s.seg(n)
	length := s.payload(n)
	if st.sent.IsZero() {
		s.srv.stats.Bytes += int64(length)
	} else {
		st.retrans = true
		s.srv.stats.Retransmits++
	}
	st.sent, st.lost, st.inFlight = now, false, true
	s.pipe++
	s.srv.stats.Segments++
	s.srv.write(s.conn, segment{typ: typeData, conn: s.conn.id, seq: n, ts: now.UnixNano(), length: length}, HeaderBytes+length)
}

// onAck takes an acknowledgement: the cumulative one, the SACK blocks and
// the echoed timestamp.
func (s *sender) onAck(now time.Time, a segment) {
	if s.done || a.seq > s.next {
		return
	}
	acked := 0
	advanced := a.seq > s.una
	for n := s.una; n < a.seq; n++ {
		st := s.seg(n)
		if !st.sacked {
			acked++
		}
		if st.inFlight {
			s.pipe--
		}
	}
	if advanced {
		s.segs = s.segs[a.seq-s.base:]
		s.base = a.seq
		s.una = a.seq
		s.backoff = 0
	}
	for _, b := range a.blocks {
		for n := max(b[0], s.una); n < min(b[1], s.next); n++ {
			st := s.seg(n)
			if st.sacked {
				continue
			}
			st.sacked, st.lost = true, false
			if st.inFlight {
				st.inFlight = false
				s.pipe--
			}
			acked++
			s.highSacked = max(s.highSacked, n)
		}
	}
	if a.ts > 0 && (advanced || acked > 0) {
		s.sample(time.Duration(now.UnixNano() - a.ts))
	}
	// A hole with three SACKed segments above it is lost (RFC 6675's
	// DupThresh). A segment sent again is judged only by the timer: the
	// segments SACKed above it left before it did.
	newLoss := false
	n := max(s.una, s.lossScan)
	for ; n+3 <= s.highSacked; n++ {
		st := s.seg(n)
		if st.sacked || st.lost || st.retrans || !st.inFlight {
			continue
		}
		st.inFlight = false
		s.pipe--
		st.lost = true
		s.lostHint = min(s.lostHint, n)
		if n >= s.guard {
			newLoss = true
		}
	}
	s.lossScan = n
	if s.fastRecovery && s.una >= s.recoverPoint {
		s.fastRecovery = false
	}
	ce := a.flags&flagECE != 0
	if ce {
		s.srv.stats.Marked++
	}
	if s.cfg.ECN == ECNL4S {
		s.dctcp.ack(s, acked, ce)
	}
	if newLoss {
		s.srv.stats.Recoveries++
		s.cc.onLoss(now, s)
		s.fastRecovery, s.recoverPoint, s.guard = true, s.next, s.next
		s.cwrPoint = s.next
	} else if ce && !s.fastRecovery && s.una >= s.cwrPoint {
		s.srv.stats.ECNCuts++
		s.ecnCut(now)
		s.cwrPoint = s.next
	} else if acked > 0 && !s.fastRecovery {
		if s.cwnd < s.ssthresh {
			s.cwnd += float64(acked)
			s.cc.slowStart(now, s)
		} else {
			s.cc.avoid(now, s, acked)
		}
	}
	if s.total >= 0 && s.una >= s.total {
		s.finish()
		return
	}
	if advanced {
		s.arm()
	}
	s.transmit(now)
}

// ecnCut is the once-per-window answer to an ECN echo: classic ECN as a
// loss (RFC 3168), L4S ECN by alpha/2 (RFC 8257).
func (s *sender) ecnCut(now time.Time) {
	if s.cfg.ECN == ECNL4S {
		s.cwnd = max(s.cwnd*(1-s.dctcp.alpha/2), 2)
		s.ssthresh = s.cwnd
		return
	}
	s.cc.onLoss(now, s)
}

// dctcp keeps DCTCP's alpha (RFC 8257 section 3.3): over each window of
// data, the fraction F of the segments acknowledged that were marked, and
// alpha = (1-g)*alpha + g*F.
type dctcp struct {
	alpha         float64
	acked, marked int
	windowEnd     int64
}

// dctcpGain is g, RFC 8257's recommended 1/16.
const dctcpGain = 1.0 / 16

// ack counts an acknowledgement of acked segments, ce if it echoes a mark,
// and ends the observation window once the cumulative acknowledgement
// passed its end.
func (d *dctcp) ack(s *sender, acked int, ce bool) {
	d.acked += acked
	if ce {
		d.marked++
	}
	if s.una < d.windowEnd || d.acked == 0 {
		return
	}
	f := min(float64(d.marked)/float64(d.acked), 1)
	d.alpha = (1-dctcpGain)*d.alpha + dctcpGain*f
	d.acked, d.marked, d.windowEnd = 0, 0, s.next
}

// sample updates the round-trip estimate and the timeout (RFC 6298).
func (s *sender) sample(r time.Duration) {
	if r <= 0 {
		return
	}
	if s.srtt == 0 {
		s.srtt, s.rttvar = r, r/2
	} else {
		d := s.srtt - r
		if d < 0 {
			d = -d
		}
		s.rttvar = (3*s.rttvar + d) / 4
		s.srtt = (7*s.srtt + r) / 8
	}
	s.rto = min(maxRTO, max(s.cfg.MinRTO, s.srtt+max(time.Millisecond, 4*s.rttvar)))
	s.cc.rtt(r)
}

// arm (re)starts the retransmission timer from now.
func (s *sender) arm() {
	if s.timer != nil {
		s.timer.Stop()
	}
	d := min(maxRTO, s.rto<<s.backoff)
	s.timer = time.AfterFunc(d, func() { s.srv.locked(func(now time.Time) { s.timeout(now) }) })
}

// timeout is the retransmission timer's expiry: every segment in flight
// is lost, the window falls to one segment and the timer backs off.
func (s *sender) timeout(now time.Time) {
	s.timer = nil
	if s.done || s.una >= s.next {
		return
	}
	s.srv.stats.Timeouts++
	s.cc.onTimeout(now, s)
	for n := s.una; n < s.next; n++ {
		st := s.seg(n)
		if st.sacked {
			continue
		}
		if st.inFlight {
			st.inFlight = false
			s.pipe--
		}
		st.lost = true
	}
	s.lostHint = s.una
	// Everything outstanding is to be sent again: a loss found in it is
	// this event's.
	s.fastRecovery, s.guard = false, s.next
	s.backoff = min(s.backoff+1, 10)
	s.transmit(now)
	s.arm()
}

// finish ends the connection once everything was acknowledged.
func (s *sender) finish() {
	s.done = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// controller is a congestion controller: it grows the window in slow
// start and congestion avoidance and cuts it on a loss or a timeout.
type controller interface {
	// slowStart runs after slow start grew the window, to leave it early
	// (CUBIC's HyStart).
	slowStart(now time.Time, s *sender)
	// avoid grows the window in congestion avoidance for acked segments.
	avoid(now time.Time, s *sender, acked int)
	// onLoss cuts the window on a loss found by SACK.
	onLoss(now time.Time, s *sender)
	// onTimeout cuts it on a retransmission timeout.
	onTimeout(now time.Time, s *sender)
	// rtt takes a round-trip sample.
	rtt(r time.Duration)
}

// reno is RFC 5681's: one segment more per window, half on a loss.
type reno struct{}

func (*reno) slowStart(time.Time, *sender) {}
func (*reno) rtt(time.Duration)            {}

func (*reno) avoid(_ time.Time, s *sender, acked int) {
	s.cwnd += float64(acked) / s.cwnd
}

// onLoss halves the window, as Linux's Reno does (tcp_reno_ssthresh).
func (*reno) onLoss(_ time.Time, s *sender) {
	s.ssthresh = max(s.cwnd/2, 2)
	s.cwnd = s.ssthresh
}

func (*reno) onTimeout(_ time.Time, s *sender) {
	s.ssthresh = max(s.cwnd/2, 2)
	s.cwnd = 1
}

// cubic is RFC 9438's window (C = 0.4, beta = 0.7, fast convergence and
// the Reno-friendly estimate) with Linux's HyStart delay detection in
// slow start.
type cubic struct {
	wmax       float64 // the window before the last reduction
	epoch      time.Time
	k, origin  float64
	west       float64 // the Reno-friendly estimate
	minRTT     time.Duration
	lastRTT    time.Duration // the latest sample
	roundEnd   int64         // HyStart's round: until una passes it
	roundMin   time.Duration // the round's smallest of its first samples
	lastMin    time.Duration // the previous round's
	roundCount int
}

const (
	cubicC    = 0.4
	cubicBeta = 0.7
	// hystartLowWindow: HyStart watches the delay from this window on
	// (Linux's hystart_low_window).
	hystartLowWindow = 16
	// hystartSamples: the samples of a round whose minimum is compared.
	hystartSamples = 8
)

func (c *cubic) rtt(r time.Duration) {
	c.lastRTT = r
	if c.minRTT == 0 || r < c.minRTT {
		c.minRTT = r
	}
	if c.roundCount < hystartSamples {
		c.roundCount++
		if c.roundMin == 0 || r < c.roundMin {
			c.roundMin = r
		}
	}
}

// slowStart leaves slow start when a round's delay rose above the last
// round's by an eighth of it (clamped to 4-16 ms), as Linux's HyStart
// delay detection does: the queue has started to build.
func (c *cubic) slowStart(_ time.Time, s *sender) {
	if s.una < c.roundEnd {
		if s.cwnd >= hystartLowWindow && c.lastMin > 0 && c.roundCount >= hystartSamples {
			eta := min(16*time.Millisecond, max(4*time.Millisecond, c.lastMin/8))
			if c.roundMin >= c.lastMin+eta {
				s.ssthresh = s.cwnd
			}
		}
		return
	}
	// A new round.
	if c.roundCount > 0 {
		c.lastMin = c.roundMin
	}
	c.roundEnd, c.roundMin, c.roundCount = s.next, 0, 0
}

func (c *cubic) avoid(now time.Time, s *sender, acked int) {
	if c.epoch.IsZero() {
		c.epoch = now
		if s.cwnd < c.wmax {
			c.k = math.Cbrt((c.wmax - s.cwnd) / cubicC)
			c.origin = c.wmax
		} else {
			c.k, c.origin = 0, s.cwnd
		}
		c.west = s.cwnd
	}
	t := now.Sub(c.epoch) + s.srtt
	d := t.Seconds() - c.k
	target := c.origin + cubicC*d*d*d
	target = min(max(target, s.cwnd), 1.5*s.cwnd)
	if target > s.cwnd {
		s.cwnd += (target - s.cwnd) / s.cwnd * float64(acked)
	} else {
		s.cwnd += 0.01 * float64(acked) / s.cwnd
	}
	// The Reno-friendly region: never slower than Reno would be.
	alpha := 3 * (1 - cubicBeta) / (1 + cubicBeta)
	c.west += alpha * float64(acked) / s.cwnd
	s.cwnd = max(s.cwnd, c.west)
}

func (c *cubic) reduce(s *sender) {
	if s.cwnd < c.wmax {
		c.wmax = s.cwnd * (1 + cubicBeta) / 2 // fast convergence
	} else {
		c.wmax = s.cwnd
	}
	c.epoch = time.Time{}
}

func (c *cubic) onLoss(_ time.Time, s *sender) {
	c.reduce(s)
	s.ssthresh = max(s.cwnd*cubicBeta, 2)
	s.cwnd = s.ssthresh
}

func (c *cubic) onTimeout(_ time.Time, s *sender) {
	c.reduce(s)
	s.ssthresh = max(s.cwnd*cubicBeta, 2)
	s.cwnd = 1
}
