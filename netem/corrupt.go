package netem

import "time"

func init() { Register("corrupt", func() Impairment { return &Corrupt{} }) }

// Corrupt flips one bit of a packet's payload with a fixed probability, like
// tc netem's "corrupt PERCENT": one random bit of one random byte, the
// smallest error a checksum must catch. The packet is marked
// Packet.Corrupted and delivered; what the receiver does with it is the
// receiver's business (QUIC drops it on authentication).
type Corrupt struct {
	// Probability that a packet is corrupted, in [0, 1]. An empty payload
	// has nothing to corrupt and is left alone.
	Probability float64
}

// Kind implements Impairment.
func (*Corrupt) Kind() string { return "corrupt" }

// Stage implements Impairment.
func (*Corrupt) Stage() Stage { return StageLoss }

// Validate refuses a probability outside [0, 1].
func (c *Corrupt) Validate() error { return checkProbabilityField("probability", c.Probability) }

// Apply implements Impairment. It changes p.Data in place: the link owns the
// payload once the packet is sent.
func (c *Corrupt) Apply(p *Packet, at time.Time, env *Env) Verdict {
	if env.Rand.Float64() < c.Probability && len(p.Data) > 0 {
		i := env.Rand.IntN(len(p.Data))
		p.Data[i] ^= 1 << env.Rand.IntN(8)
		p.Corrupted = true
	}
	return Verdict{At: at}
}
