// Package traffic is the other traffic that shares a session's links
// (Session.Traffic, a scenario's traffic section): its flows, what each
// measured, the checks that refuse a flow that cannot run, and the
// running of every flow from its start to its stop on a transport's
// network. A transport gives the flows their endpoints (Ends, run by
// RunBetween with the lab's flow generators) or runs them itself
// (Network, as the kernel mode runs tcp-bulk flows over the kernel's TCP).
package traffic

import (
	"fmt"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/tcplike"
	"github.com/nuvirahub/latencylab/viewer"
)

// The kinds of flow (Flow.Kind), the scenario format's names
// (scenarios.FlowKinds).
const (
	KindQUICBulk     = "quic-bulk"
	KindTCPBulk      = "tcp-bulk"
	KindCBR          = "cbr"
	KindWeb          = "web"
	KindSession      = "session"
	KindReverseMedia = "reverse-media"
)

// PortBase is the port of flow i's endpoints, PortBase+i, on both hosts
// of the in-memory network: a capture names each flow's packets by them
// (see lab.Capture.Pcap), and Wireshark's udp.port filter finds a flow by
// its place.
const PortBase = 6000

// DefaultCBRSize is a cbr flow's datagram when Flow.Size is 0.
const DefaultCBRSize = 1200

// Flow is one flow of other traffic in a session: it shares the session's
// links from Start to Stop, between an endpoint at the agent's host (the
// far end: the internet for a download) and one at the viewer's: in the
// in-memory network each on port PortBase plus the flow's place, in real
// time two loopback sockets of its own.
type Flow struct {
	// Name names it in the result and the capture; Kind is one of the
	// Kind constants.
	Name, Kind string
	// Start and Stop are instants from time zero; Stop 0 is the
	// session's end.
	Start, Stop time.Duration
	// Up sends a bulk, cbr or web flow's data up (viewer -> agent)
	// rather than down.
	Up bool
	// Delay is an extra one-way delay on each of its packets, both ways,
	// before the shared links (flows.Delayed).
	Delay time.Duration
	// Hops are the names of the hops of a path of several the flow
	// crosses, consecutive and in the path's order; empty, the whole path.
	Hops []string
	// Congestion is the TCP congestion controller of tcp-bulk and web
	// flows (tcplike's reno or cubic; empty: cubic; bbr only in the
	// kernel mode).
	Congestion string
	// ECN makes a tcp-bulk flow ECN-capable: tcplike.ECNClassic or
	// tcplike.ECNL4S; and a QUIC flow (quic-bulk, session, reverse-media)
	// with "classic", its endpoints passing the bits quic-go sets (netem's
	// PacketConn.PassECN); empty: not.
	ECN string
	// Rate and Size are a cbr flow's bit rate and datagram size (0:
	// DefaultCBRSize).
	Rate int64
	Size int
	// Web is a web flow's law.
	Web flows.WebConfig
	// Agent, Viewer and Screen configure a session or reverse-media
	// flow's two ends as a session's do; their Seed, Clock, Recorder and
	// Screen are set by the lab. A nil Screen is the documented
	// full-screen animation.
	Agent  agent.Config
	Viewer viewer.Config
	Screen *screen.Config
}

// Result is what one flow measured.
type Result struct {
	// Flow is the flow as it ran (Stop resolved to the session's end).
	Flow Flow
	// Stats are its transport's figures; Delivered its receiver's payload
	// by period of the session's sampling (result.DefaultSampleEvery when
	// it has none) from time zero.
	Stats     flows.Stats
	Delivered []int64
	// Frames is a session flow's ground truth.
	Frames []groundtruth.Frame
	// Err is why the flow could not run, or ended early.
	Err error
}

// Media tells whether a flow is a remote-desktop session.
func (f Flow) Media() bool { return f.Kind == KindSession || f.Kind == KindReverseMedia }

// QUICECN tells whether the flow is a QUIC one (quic-bulk or media) that
// is ECN-capable.
func (f Flow) QUICECN() bool { return f.ECN != "" && (f.Kind == KindQUICBulk || f.Media()) }

// DataUp tells whether the flow's data crosses the uplink.
func (f Flow) DataUp() bool { return f.Kind == KindReverseMedia || f.Up && !f.Media() }

// Roles names the flow's ends at the agent's host and at the viewer's by
// what they do: the sender sends the data, the receiver gets it.
func (f Flow) Roles() (agentEnd, viewerEnd string) {
	if f.DataUp() {
		return "receiver", "sender"
	}
	return "sender", "receiver"
}

// Where names flow i in an error: "traffic[1] (download)".
func (f Flow) Where(i int) string { return fmt.Sprintf("traffic[%d] (%s)", i, f.Name) }

// Check refuses flows that cannot run on any transport: an unknown kind
// or controller, an instant outside a session of the given duration, a
// negative delay, names used twice. What a transport cannot carry, it
// refuses itself (CheckModels for the lab's own flow generators).
func Check(fl []Flow, duration time.Duration) error {
	seen := map[string]bool{}
	for i, f := range fl {
		where := f.Where(i)
		switch {
		case f.Name == "" || seen[f.Name]:
			return fmt.Errorf("%w: %s: each flow needs a name of its own", laberr.ErrScenario, where)
		case f.Start < 0 || f.Start >= duration || f.Stop < 0 || (f.Stop > 0 && (f.Stop <= f.Start || f.Stop > duration)):
			return fmt.Errorf("%w: %s: start %v and stop %v: expected 0 <= start < stop <= %v", laberr.ErrScenario, where, f.Start, f.Stop, duration)
		case f.Delay < 0:
			return fmt.Errorf("%w: %s: negative delay %v", laberr.ErrScenario, where, f.Delay)
		}
		seen[f.Name] = true
		switch f.Kind {
		case KindQUICBulk, KindSession, KindReverseMedia:
			if f.QUICECN() && f.Delay != 0 {
				// The delayed endpoint re-sends the datagrams without the
				// bits quic-go sets: the flow would run not ECN-capable.
				return fmt.Errorf("%w: %s: ECN with a delay: the delayed endpoint re-sends its datagrams without the ECN bits quic-go sets", laberr.ErrScenario, where)
			}
		case KindTCPBulk, KindWeb:
			if f.Congestion != "" && f.Congestion != "bbr" && !slices.Contains(tcplike.Controllers, f.Congestion) {
				return fmt.Errorf("%w: %s: unknown congestion controller %q", laberr.ErrScenario, where, f.Congestion)
			}
		case KindCBR:
			if f.Rate <= 0 || (f.Size != 0 && (f.Size < flows.MinCBRSize || f.Size > netem.MaxDatagram)) {
				return fmt.Errorf("%w: %s: cbr at %d bit/s in %d-byte datagrams", laberr.ErrScenario, where, f.Rate, f.Size)
			}
		default:
			return fmt.Errorf("%w: %s: unknown kind %q", laberr.ErrScenario, where, f.Kind)
		}
	}
	return nil
}

// CheckModels refuses flows the lab's own flow generators cannot run (the
// ones RunBetween runs, in virtual and in real time): bbr, which needs
// the kernel's TCP.
func CheckModels(fl []Flow) error {
	for i, f := range fl {
		if (f.Kind == KindTCPBulk || f.Kind == KindWeb) && f.Congestion == "bbr" {
			return fmt.Errorf("%w: %s: congestion bbr needs the kernel's TCP (the kernel mode); the virtual-time TCP-like model has %v", laberr.ErrUnsupported, f.Where(i), tcplike.Controllers)
		}
	}
	return nil
}
