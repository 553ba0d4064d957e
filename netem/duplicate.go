package netem

import "time"

func init() { Register("duplicate", func() Impairment { return &Duplicate{} }) }

// Duplicate sends an extra copy of a packet with a fixed probability, like
// tc netem's "duplicate PERCENT". The copy is identical to the original,
// payload included, is marked Packet.Duplicate, and meets the impairments
// after this one on its own (it may be lost or delayed differently).
type Duplicate struct {
	// Probability that a packet is duplicated, in [0, 1].
	Probability float64
}

// Kind implements Impairment.
func (*Duplicate) Kind() string { return "duplicate" }

// Stage implements Impairment.
func (*Duplicate) Stage() Stage { return StageLoss }

// Validate refuses a probability outside [0, 1].
func (d *Duplicate) Validate() error { return checkProbabilityField("probability", d.Probability) }

// Apply implements Impairment.
func (d *Duplicate) Apply(_ *Packet, at time.Time, env *Env) Verdict {
	if env.Rand.Float64() < d.Probability {
		return Verdict{At: at, Duplicates: 1}
	}
	return Verdict{At: at}
}
