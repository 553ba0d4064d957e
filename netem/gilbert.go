package netem

import (
	"fmt"
	"math"
	"time"
)

func init() { Register("gilbert", func() Impairment { return &GilbertElliott{} }) }

// GilbertElliott drops packets in bursts with the Gilbert-Elliott model, like
// tc netem's "loss gemodel p [r [1-h [1-k]]]". The path is in a good or a bad
// state; each state loses packets independently with its own probability.
// Every packet is lost or not according to the state it meets, and then the
// state moves on (one transition per packet, as netem does: the state changes
// with packets, not with time).
//
// The parameters keep tc-netem(8)'s names and meaning. Its special cases are
// reached by leaving parameters out, and here a zero R or OneMinusH means
// "left out" (a zero R would trap the path in the bad state forever and a
// zero OneMinusH would make the bad state lossless, neither a loss model):
//
//   - P alone: Bernoulli loss with probability P (R = 1-P, 1-h = 1, 1-k = 0);
//   - P and R: simple Gilbert, every packet lost in the bad state, none in
//     the good one (1-h = 1, 1-k = 0);
//   - P, R and OneMinusH: Gilbert, 1-k = 0;
//   - all four: Gilbert-Elliott.
//
// Those defaults are the man page's ("the others will be set to the default
// values r=1-p, 1-h=1 and 1-k=0", section "loss gemodel"); Effective returns
// the model with them filled in.
//
// The model starts in the good state. It keeps its state across a change of
// the link's configuration (see Inherit), so a timeline phase does not end a
// burst.
type GilbertElliott struct {
	// P is the probability of moving from the good state to the bad one at
	// a packet.
	P float64
	// R is the probability of moving from the bad state back to the good one
	// at a packet. Zero means 1-P.
	R float64
	// OneMinusH is the loss probability in the bad state (1-h, h being the
	// probability that a packet gets through). Zero means 1.
	OneMinusH float64
	// OneMinusK is the loss probability in the good state (1-k).
	OneMinusK float64

	bad bool // the state the next packet meets
}

// Kind implements Impairment.
func (*GilbertElliott) Kind() string { return "gilbert" }

// Stage implements Impairment.
func (*GilbertElliott) Stage() Stage { return StageLoss }

// Validate refuses a parameter outside [0, 1].
func (g *GilbertElliott) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"p", g.P}, {"r", g.R}, {"1-h", g.OneMinusH}, {"1-k", g.OneMinusK}} {
		if err := checkProbabilityField(f.name, f.v); err != nil {
			return fmt.Errorf("gemodel %w", err)
		}
	}
	return nil
}

// Effective returns the model actually run: g's parameters with tc's
// defaults in place of those left out (R = 1-P, OneMinusH = 1).
func (g *GilbertElliott) Effective() GilbertElliott {
	e := GilbertElliott{P: g.P, R: g.R, OneMinusH: g.OneMinusH, OneMinusK: g.OneMinusK}
	if e.R == 0 {
		e.R = 1 - e.P
	}
	if e.OneMinusH == 0 {
		e.OneMinusH = 1
	}
	return e
}

// Inherit implements Inheritor: a Gilbert-Elliott model replacing another
// continues from its state, so that a burst in progress goes on under the
// new parameters.
func (g *GilbertElliott) Inherit(prev Impairment) {
	if p, ok := prev.(*GilbertElliott); ok {
		g.bad = p.bad
	}
}

// Apply implements Impairment.
func (g *GilbertElliott) Apply(_ *Packet, at time.Time, env *Env) Verdict {
	e := g.Effective()
	lossProb := e.OneMinusK
	if g.bad {
		lossProb = e.OneMinusH
	}
	// The transition is drawn before the loss, as netem draws them, so that
	// the same seed gives the same sequence of states whatever the loss
	// probabilities.
	if g.bad {
		g.bad = !(env.Rand.Float64() < e.R)
	} else {
		g.bad = env.Rand.Float64() < e.P
	}
	if env.Rand.Float64() < lossProb {
		return Verdict{Drop: DropLoss}
	}
	return Verdict{At: at}
}

// stationary returns the long-run shares of packets meeting the good and
// the bad state, π_G = r/(p+r) and π_B = p/(p+r).
func (g *GilbertElliott) stationary() (good, bad float64) {
	e := g.Effective()
	// p+r > 0 always: R defaults to 1-P, so both zero is impossible.
	return e.R / (e.P + e.R), e.P / (e.P + e.R)
}

// LossRate is the model's long-run loss probability,
// π_G(1-k) + π_B(1-h) = (r(1-k) + p(1-h)) / (p+r).
func (g *GilbertElliott) LossRate() float64 {
	e := g.Effective()
	good, bad := g.stationary()
	return good*e.OneMinusK + bad*e.OneMinusH
}

// MeanBurstLength is the mean number of consecutive packets lost, a burst
// being a maximal run of losses. It is the share of packets lost divided by
// the share of packets that start a burst (lost after one that was not):
// P(L) / (P(L) - P(L,L)), where P(L,L), the probability that two
// consecutive packets are both lost, sums over the states s, s' of the two
// packets π_s ℓ_s T(s→s') ℓ_s'. For simple Gilbert it is 1/r, the mean stay in
// the bad state; with 1-h < 1 bursts are shorter than stays and with 1-k > 0
// isolated losses in the good state shorten the mean further. It is zero when
// nothing is lost and +Inf when everything is.
func (g *GilbertElliott) MeanBurstLength() float64 {
	e := g.Effective()
	good, bad := g.stationary()
	lg, lb := e.OneMinusK, e.OneMinusH
	pl := good*lg + bad*lb
	if pl == 0 {
		return 0
	}
	pll := good*lg*((1-e.P)*lg+e.P*lb) + bad*lb*(e.R*lg+(1-e.R)*lb)
	if starts := pl - pll; starts > 0 {
		return pl / starts
	}
	return math.Inf(1) // every packet lost: one endless burst

}
