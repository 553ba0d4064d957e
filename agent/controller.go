package agent

import (
	"time"

	"github.com/nuvirahub/latencylab/internal/wire"
)

// Controller decides the video bitrate from the viewer's reports (N1: every
// 250 ms, the median and minimum latency and their network part). The ABR
// (finding N10 and its fixes) is one; Fixed is the simplest.
type Controller interface {
	// Report feeds one viewer report, received at now (agent's true time).
	Report(now time.Time, r wire.Report)
	// Bitrate is the target bitrate in bits per second at now.
	Bitrate(now time.Time) int64
}

// FrameObserver is implemented by controllers that want more than the
// viewer's reports: every frame as it is sent and every acknowledgement with
// the frame's arrival at the viewer. A delay-based controller (GCC-like)
// compares arrival spacing with send spacing; an ABR with a utilisation
// guard (N13) compares the bitrate the video uses with its target.
type FrameObserver interface {
	// FrameSent is called when a frame of bytes (header included) is handed
	// to QUIC at now (true time).
	FrameSent(now time.Time, seq uint64, bytes int)
	// FrameAcked is called when the viewer acknowledges frame seq, at now
	// (agent's true time). sent is when it was handed to QUIC (true time);
	// arrived is when it arrived whole, on the viewer's clock: only
	// differences between arrivals mean anything to the agent.
	FrameAcked(now time.Time, seq uint64, bytes int, sent, arrived time.Time)
}

// LossObserver is implemented by controllers that judge packet loss (GCC's
// loss-based half). Nothing the viewer writes carries loss: frames travel on
// reliable QUIC streams, so the viewer sees every frame whole, and QUIC's
// packet numbers are hidden from it. The loss is in the viewer's QUIC
// acknowledgements instead, from which the agent's QUIC sender declares
// packets lost, as a WebRTC sender computes loss from transport-wide
// feedback. The agent reads those counts at every viewer report (every
// 250 ms, the lab's receiver report) and hands them over.
type LossObserver interface {
	// Loss is called at each viewer report, at now (agent's true time),
	// with the connection's totals since it opened: packets the agent's
	// QUIC sent and packets it declared lost from the viewer's
	// acknowledgements. Differences between two calls are the report's.
	Loss(now time.Time, sent, lost uint64)
}

// Fixed keeps one bitrate, whatever the reports say (the N9 set-up).
type Fixed struct {
	// Bps is the bitrate in bits per second.
	Bps int64
}

// Report implements Controller: a fixed bitrate ignores reports.
func (Fixed) Report(time.Time, wire.Report) {}

// Bitrate implements Controller.
func (f Fixed) Bitrate(time.Time) int64 { return f.Bps }

// Steps changes the bitrate at given instants and otherwise ignores
// reports: a scripted controller for tests of what a bitrate change costs
// (N16). Use it as a pointer: it remembers when it was first asked.
type Steps struct {
	// Start is time zero of the steps; zero means the first call (the agent
	// asks when it starts).
	Start time.Time
	// Initial is the bitrate before the first step.
	Initial int64
	// At and Bps list the steps, in increasing order of At.
	At  []time.Duration
	Bps []int64
}

// Report implements Controller.
func (*Steps) Report(time.Time, wire.Report) {}

// Bitrate implements Controller.
func (s *Steps) Bitrate(now time.Time) int64 {
	if s.Start.IsZero() {
		s.Start = now
	}
	b := s.Initial
	for i, at := range s.At {
		if now.Sub(s.Start) >= at {
			b = s.Bps[i]
		}
	}
	return b
}
