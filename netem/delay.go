package netem

import (
	"fmt"
	"time"
)

func init() { Register("delay", func() Impairment { return &Delay{} }) }

// Delay adds a fixed one-way delay (propagation), like tc netem's
// "delay TIME" without jitter.
type Delay struct {
	// Delay is added to every packet.
	Delay time.Duration
}

// Kind implements Impairment.
func (*Delay) Kind() string { return "delay" }

// Stage implements Impairment.
func (*Delay) Stage() Stage { return StageDelay }

// Validate refuses a negative delay.
func (d *Delay) Validate() error {
	if d.Delay < 0 {
		return fmt.Errorf("delay %v is negative", d.Delay)
	}
	return nil
}

// Apply implements Impairment.
func (d *Delay) Apply(_ *Packet, at time.Time, _ *Env) Verdict {
	return Verdict{At: at.Add(d.Delay)}
}
