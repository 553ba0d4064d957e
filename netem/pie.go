package netem

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"time"
)

// The defaults of RFC 8033, section 4 and 5.
const (
	// DefaultPIETarget is the queue delay PIE steers towards (QDELAY_REF).
	DefaultPIETarget = 15 * time.Millisecond
	// DefaultPIEUpdate is how often PIE updates its drop probability
	// (T_UPDATE).
	DefaultPIEUpdate = 15 * time.Millisecond
	// DefaultPIEBurst is the burst PIE lets through untouched after the
	// queue was quiet (MAX_BURST).
	DefaultPIEBurst = 150 * time.Millisecond
	// DefaultPIEAlpha and DefaultPIEBeta are the controller's gains, per
	// second of delay error and of delay change.
	DefaultPIEAlpha = 0.125
	DefaultPIEBeta  = 1.25
	// pieMarkThreshold is the drop probability below which PIE marks an
	// ECN-capable packet instead of dropping it (RFC 8033 section 5.1).
	pieMarkThreshold = 0.1
)

// PIEParams configure PIE (Proportional Integral controller Enhanced, RFC
// 8033) on a bottleneck queue. Zero fields take the RFC's defaults.
//
// PIE drops arriving packets at random with a probability p that a PI
// controller updates every Update from the queue delay: p grows with the
// delay's excess over Target (gain Alpha) and with its growth since the last
// update (gain Beta), both gains scaled down while p is small (the RFC's
// auto-tuning), so that the queue delay settles near Target. After a quiet
// spell it lets a burst of Burst through untouched. An ECN-capable packet is
// marked CE instead of dropped while p is below 10%.
//
// The queue delay PIE measures at an update is the time the queue then
// holds: how long it takes the server to send what has arrived (the RFC's
// estimate from the departure rate, known exactly here since each packet's
// departure is decided when it arrives). The RFC's optional de-randomisation
// (an accumulated probability bounding the gap between drops) is applied.
type PIEParams struct {
	// Target is the queue delay PIE holds the queue to. Default 15 ms.
	Target time.Duration
	// Update is the period of the controller. Default 15 ms.
	Update time.Duration
	// Burst is the burst allowance. Default 150 ms.
	Burst time.Duration
	// Alpha and Beta are the controller's gains (per second). Defaults
	// 0.125 and 1.25.
	Alpha, Beta float64
}

// Validate refuses negative parameters.
func (c *PIEParams) Validate() error {
	switch {
	case c.Target < 0:
		return fmt.Errorf("pie target %v is negative (0 means %v)", c.Target, DefaultPIETarget)
	case c.Update < 0:
		return fmt.Errorf("pie update %v is negative (0 means %v)", c.Update, DefaultPIEUpdate)
	case c.Burst < 0:
		return fmt.Errorf("pie burst %v is negative (0 means %v)", c.Burst, DefaultPIEBurst)
	case c.Alpha < 0 || c.Beta < 0:
		return fmt.Errorf("pie gains alpha %v, beta %v must not be negative (0 means %v, %v)", c.Alpha, c.Beta, DefaultPIEAlpha, DefaultPIEBeta)
	}
	return nil
}

func (c *PIEParams) target() time.Duration { return cmp.Or(c.Target, DefaultPIETarget) }
func (c *PIEParams) update() time.Duration { return cmp.Or(c.Update, DefaultPIEUpdate) }
func (c *PIEParams) burst() time.Duration  { return cmp.Or(c.Burst, DefaultPIEBurst) }
func (c *PIEParams) alpha() float64        { return cmp.Or(c.Alpha, DefaultPIEAlpha) }
func (c *PIEParams) beta() float64         { return cmp.Or(c.Beta, DefaultPIEBeta) }

// pieState is the per-queue state of RFC 8033's pseudocode.
type pieState struct {
	started    bool
	nextUpdate time.Time     // the controller's next tick
	p          float64       // drop_prob_
	qdelayOld  time.Duration // the queue delay at the last tick
	burst      time.Duration // burst_allowance_
	accu       float64       // accu_prob_, the de-randomisation
	rng        *rand.Rand    // used when the link gives none
}

// tick runs the controller for every update instant up to now; drain(t) is
// the queue delay at instant t.
func (s *pieState) tick(c *PIEParams, epoch, now time.Time, drain func(time.Time) time.Duration) {
	if !s.started {
		s.started = true
		s.burst = c.burst()
		s.nextUpdate = epoch.Add(c.update())
		for s.nextUpdate.Before(now) && !s.nextUpdate.Add(c.update()).After(now) {
			s.nextUpdate = s.nextUpdate.Add(c.update())
		}
	}
	for !s.nextUpdate.After(now) {
		qdelay := drain(s.nextUpdate)
		if qdelay == 0 && s.qdelayOld == 0 && s.p == 0 && s.burst == c.burst() {
			// Idle and reset: every tick until now would leave the
			// state as it is.
			n := now.Sub(s.nextUpdate) / c.update()
			s.nextUpdate = s.nextUpdate.Add((n + 1) * c.update())
			break
		}
		s.update(c, qdelay)
		s.nextUpdate = s.nextUpdate.Add(c.update())
	}
}

// update is RFC 8033's calculate_drop_prob, with the auto-tuning of section
// 4.2 and the burst allowance of section 4.4.
func (s *pieState) update(c *PIEParams, qdelay time.Duration) {
	ref := c.target()
	delta := c.alpha()*(qdelay-ref).Seconds() + c.beta()*(qdelay-s.qdelayOld).Seconds()
	for _, a := range pieAutoTune {
		if s.p < a.below {
			delta /= a.scale
			break
		}
	}
	if s.p >= 0.1 && delta > 0.02 {
		delta = 0.02 // cap the step once p is large
	}
	s.p += delta
	if qdelay == 0 && s.qdelayOld == 0 {
		s.p *= 0.98 // decay when congestion is gone
	}
	s.p = min(max(s.p, 0), 1)
	s.burst = max(s.burst-c.update(), 0)
	if s.p == 0 && qdelay < ref/2 && s.qdelayOld < ref/2 {
		s.burst = c.burst()
	}
	s.qdelayOld = qdelay
}

// pieAutoTune scales the controller's step down while p is small (RFC 8033
// section 4.2): the first row whose bound p is below applies.
var pieAutoTune = [...]struct{ below, scale float64 }{
	{0.000001, 2048}, {0.00001, 512}, {0.0001, 128}, {0.001, 32}, {0.01, 8}, {0.1, 2},
}

// decide is RFC 8033's enqueue decision for a packet arriving while the
// queue holds bytes: whether it is dropped, or marked (ecn capable, p below
// 10%).
func (s *pieState) decide(c *PIEParams, bytes int, ecn bool, rng *rand.Rand) (drop, mark bool) {
	if s.burst > 0 {
		return false, false
	}
	// Work conserving: no drop while the queue is short.
	if (s.qdelayOld < c.target()/2 && s.p < 0.2) || bytes <= 2*pieMeanPacket {
		return false, false
	}
	if s.p == 0 {
		s.accu = 0
	}
	s.accu += s.p
	if s.accu < 0.85 {
		return false, false
	}
	if s.accu < 8.5 {
		if rng == nil {
			if s.rng == nil {
				s.rng = rand.New(rand.NewPCG(8033, 8033))
			}
			rng = s.rng
		}
		if rng.Float64() >= s.p {
			return false, false
		}
	}
	s.accu = 0
	if ecn && s.p < pieMarkThreshold {
		return false, true
	}
	return true, false
}

// pieMeanPacket is MEAN_PKTSIZE, the RFC's typical packet (1500 bytes).
const pieMeanPacket = 1500
