// Package estimate predicts, before a run starts, how long its sessions
// will take: a session's cost grows with the packets its links carry, and
// those follow from the video's bitrate and the session's length. The
// models' coefficients were fitted to measured sessions (the plot and the
// figures are in docs/performance.md, "How cost grows"); the figure is the
// CPU a session takes on a core of its own, so on a machine busy with
// other work a run takes longer than its estimate.
package estimate

import (
	"fmt"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/scenarios"
)

// PacketBytes is the size of the video's datagrams as the model counts
// them: quic-go fills packets to about 1 200 bytes on the lab's paths.
const PacketBytes = 1200

// AckShare is how many packets the links carry in all for each packet of
// video: the viewer's acknowledgements and reports come back about one for
// every two packets down (measured: 68 193 up for 132 823 down at
// 64 Mbit/s).
const AckShare = 1.51

// Model is a session's CPU time as Fixed, plus PerSecond for each second
// of the session, plus PerPacket for each packet its links carry.
type Model struct {
	// Name says which way the sessions run, for the estimate's line.
	Name string
	// Fixed is what every session pays: setting up, the QUIC handshake,
	// the result's way out (and, exact, a fresh WebAssembly instance).
	Fixed time.Duration
	// PerSecond is what a second of session costs with no video: the
	// screen's refreshes, the agent's and viewer's timers.
	PerSecond time.Duration
	// PerPacket is what one packet costs, from the sender's write through
	// both links and QUIC to the reader: the bulk of a busy session.
	PerPacket time.Duration
}

// The two models, fitted by least squares to the LAN animation at a fixed
// 4, 16 and 64 Mbit/s for 5, 10 and 20 s (native) and 2, 5 and 10 s
// (exact): CPU per session on the project's 2-vCPU VM, Go 1.26, measured
// 2026-12-01 at a load average near 20 (TestCostModel in lab/exact
// measures them and draws the plot). A busy machine inflates CPU time
// too, so on a quiet one exact runs take less: the sweep's default grid
// at seed 1, which the exact model puts at 18 minutes on 2 cores, took 14
// (856 s). Natively the model says 31 s where the grid took about 44 s
// (132 s for three seeds): worker processes and the measurements cost
// what the model leaves out; the two 10 s sessions of
// docs/own-scenarios, exact and side by side, took 1.0 s where it says
// 2 s. Take the figures as within a factor of two.
var (
	// Native is a session in a synctest bubble on one P (as the jobs'
	// worker processes run them); the fit's fixed part was below zero.
	Native = Model{Name: "native", Fixed: 0, PerSecond: 1700 * time.Microsecond, PerPacket: 6200 * time.Nanosecond}
	// Exact is a session in its own WebAssembly instance (lab/exact).
	Exact = Model{Name: "exact", Fixed: 126 * time.Millisecond, PerSecond: 84 * time.Millisecond, PerPacket: 168 * time.Microsecond}
)

// Bitrate is the video bitrate the model expects of a scenario: its
// controller's bitrate (fixed, or where an adaptive one starts), or the
// highest of its steps, capped by the tightest rate cap of the downlink.
// Adaptive controllers move around it; a still screen sends less.
func Bitrate(sc *scenarios.Scenario) int64 {
	bps := sc.Controller.Bitrate
	for _, st := range sc.Controller.Steps {
		bps = max(bps, st.Bitrate)
	}
	for _, ph := range sc.Network.Down {
		if ph.Rate > 0 && ph.Rate < bps {
			bps = ph.Rate
		}
	}
	return bps
}

// Packets is how many packets the model expects a session's links to
// carry, both directions: the video's bitrate over the session's length
// in PacketBytes datagrams, and the acknowledgements.
func Packets(sc *scenarios.Scenario) float64 {
	return float64(Bitrate(sc)) * sc.Duration.Seconds() / (8 * PacketBytes) * AckShare
}

// Session is one session's expected CPU time.
func (m Model) Session(sc *scenarios.Scenario) time.Duration {
	return m.Fixed + time.Duration(sc.Duration.Seconds()*(float64(m.PerSecond)+float64(RealEncoderPerSecond(sc.Agent.Encoder)))) +
		time.Duration(Packets(sc)*float64(m.PerPacket))
}

// The real H.264 encoder's work for each second of a session, beyond the
// network's: painting the screen, OpenH264's encode and decode, the
// quality judged. Measured on the LAN animation, 4 s on one core
// (TestRealSpeed in lab, GOMAXPROCS=1, -realspeed), at a load average of 4
// on the 2-vCPU VM, so on a quiet core a session takes less: 2.48 s of CPU
// at 720p (233 frames), 2.99 s at 1080p (46 frames: OpenH264 skips most of
// the 1080p animation's).
const (
	Real720pPerSecond  = 620 * time.Millisecond
	Real1080pPerSecond = 750 * time.Millisecond
)

// RealEncoderPerSecond is what a software encoder preset adds to each
// second of a session: the real H.264 encoder's work for openh264-real
// and its variants, nothing for the models (whose frames are sizes).
func RealEncoderPerSecond(preset string) time.Duration {
	switch {
	case !strings.HasPrefix(preset, "openh264-real"):
		return 0
	case strings.HasSuffix(preset, "-1080p"):
		return Real1080pPerSecond
	default:
		return Real720pPerSecond
	}
}

// Run is what a run of sessions is expected to take on parallel cores:
// the sessions' CPU spread over the cores, or the longest session when
// that is more.
func (m Model) Run(scs []*scenarios.Scenario, parallel int) time.Duration {
	var total, longest time.Duration
	for _, sc := range scs {
		d := m.Session(sc)
		total += d
		longest = max(longest, d)
	}
	return max(total/time.Duration(max(parallel, 1)), longest)
}

// Line is the estimate as a run prints it at its start.
func (m Model) Line(scs []*scenarios.Scenario, parallel int) string {
	var virtual time.Duration
	var packets float64
	for _, sc := range scs {
		virtual += sc.Duration
		packets += Packets(sc)
	}
	count := fmt.Sprintf("%.0f thousand", packets/1e3)
	if packets >= 1e6 {
		count = fmt.Sprintf("%.1f million", packets/1e6)
	}
	return fmt.Sprintf("estimate: %d sessions, %s of session time, about %s packets: about %s %s on %d %s (%s per session, %s per session second, %s per packet; docs/performance.md)",
		len(scs), virtual.Round(time.Second), count, round(m.Run(scs, parallel)), m.Name, parallel, plural(parallel, "core", "cores"),
		m.Fixed, m.PerSecond, m.PerPacket)
}

// round keeps an estimate's figure to what it can claim.
func round(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Minute:
		return d.Round(time.Minute)
	case d >= 10*time.Second:
		return d.Round(time.Second)
	default:
		return d.Round(100 * time.Millisecond)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
