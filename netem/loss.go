package netem

import (
	"fmt"
	"time"
)

func init() { Register("loss", func() Impairment { return &Loss{} }) }

// Loss drops each packet independently with a fixed probability (Bernoulli
// loss), like tc netem's "loss random PERCENT" without correlation. For
// losses that come in bursts, use GilbertElliott.
type Loss struct {
	// Probability that a packet is dropped, in [0, 1].
	Probability float64
}

// Kind implements Impairment.
func (*Loss) Kind() string { return "loss" }

// Stage implements Impairment.
func (*Loss) Stage() Stage { return StageLoss }

// Validate refuses a probability outside [0, 1].
func (l *Loss) Validate() error { return checkProbabilityField("probability", l.Probability) }

// Apply implements Impairment.
func (l *Loss) Apply(_ *Packet, at time.Time, env *Env) Verdict {
	// Draw for every packet, even at probability 0 or 1, so that the
	// source's position depends only on how many packets passed.
	if env.Rand.Float64() < l.Probability {
		return Verdict{Drop: DropLoss}
	}
	return Verdict{At: at}
}

// checkProbabilityField refuses a value outside [0, 1], NaN included.
func checkProbabilityField(name string, p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("%s %v is not in [0, 1]", name, p)
	}
	return nil
}
