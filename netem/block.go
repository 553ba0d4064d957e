package netem

import "time"

func init() { Register("block", func() Impairment { return &Block{} }) }

// Block drops every datagram (DropBlocked): the corporate firewall or
// captive network that lets no UDP through, where a remote desktop must
// fall back to WebSocket over TCP. It is a gate, so blocked packets never
// reach the loss counters or the bottleneck queue. To block only for a
// while, put it in a timeline phase.
type Block struct{}

// Kind implements Impairment.
func (*Block) Kind() string { return "block" }

// Stage implements Impairment.
func (*Block) Stage() Stage { return StageGate }

// Apply implements Impairment.
func (*Block) Apply(*Packet, time.Time, *Env) Verdict {
	return Verdict{Drop: DropBlocked}
}
