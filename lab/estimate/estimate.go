// Package estimate predicts, before a run starts, how long its sessions
// will take: a session's cost grows with the packets its links carry, and
// those follow from the video's bitrate and the session's length. The
// models' coefficients were fitted to measured sessions (the plot and the
// figures are in docs/performance.md, "How cost grows"); the figure is the
// CPU a session takes on a core of its own, so on a machine busy with
// other work a run takes longer than its estimate.
package estimate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/scenarios"
)

// PacketBytes is the size of the video's datagrams as the model counts
// them: quic-go fills packets to about 1 200 bytes on the lab's paths.
const PacketBytes = 1200

// SessionPackets is what each second of a media session adds to its
// packets beyond its bitrate's full datagrams: each frame's last, partial
// datagram, the viewer's reports, and their acknowledgements. Fitted to
// the library's sessions (run natively, 2026-12-01): with it the model's
// packets are within 30% of the links' counts for the sessions that
// carry more than 50 thousand but abr-capacity-drop (28% fewer), and the
// library's total within 2% (lab's TestEstimateCountsTheLibrarysPackets).
const SessionPackets = 100

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
// at seed 1, which the exact model puts at 20 minutes on 2 cores, took 14
// (856 s). Natively the model says 35 s where the grid took about 44 s
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

// step is the resolution at which Packets follows a session's timelines
// (its phases, steps, screen changes and flows start and stop on it or
// close to it).
const step = 100 * time.Millisecond

// Packets is how many packets the model expects a session's links to
// carry, both directions: what every flow sends (the session's video, the
// other traffic's), each direction capped by its bottleneck's rate as the
// timeline sets it, in PacketBytes datagrams, and the acknowledgements
// coming back.
//
// What a flow sends: a fixed or stepped video its bitrate; an adaptive
// one (abr, gcc) its written max or the bottleneck's rate, whichever is
// lower, and where it starts without either (see video); a still screen
// nothing, typing a tenth (see share). Bulk transfers
// fill the bottleneck; cbr sends its rate; web its mean object per think
// time. A link replaying a trace, or without a rate, caps nothing: the
// flows' demand decides. Competing flows are most of the cost of the
// RFC 8867 cases: rmcat-5-5 carries 343 thousand packets where its own
// video's start bitrate would say 7 thousand.
func Packets(sc *scenarios.Scenario) float64 {
	var bits, overhead float64
	for t := time.Duration(0); t < sc.Duration; t += step {
		dt := min(step, sc.Duration-t).Seconds()
		downRate, downCapped := rateAt(sc.Network.Down, t)
		upRate, upCapped := rateAt(sc.Network.Up, t)
		down, up, moving := demand(sc, t, downRate, downCapped, upRate, upCapped)
		overhead += moving * SessionPackets * dt
		if downCapped {
			down = min(down, float64(downRate))
		}
		if upCapped {
			up = min(up, float64(upRate))
		}
		bits += (down + up) * dt
	}
	return bits/(8*PacketBytes)*AckShare + overhead
}

// SessionSeconds is the length of every media session the scenario runs:
// its own, and each session or reverse-media flow's while it runs. Each
// has its screen, encoder, viewer and timers, which cost by the second
// whatever the packets.
func SessionSeconds(sc *scenarios.Scenario) float64 {
	total := sc.Duration
	for _, f := range sc.Traffic {
		if media(f) {
			total += active(sc, f)
		}
	}
	return total.Seconds()
}

// demand is what the flows in force at t send down and up, in bits per
// second, before the bottlenecks (whose rates in force at t it is given),
// and how many media sessions send then (each weighted by its screen's
// share, see share).
func demand(sc *scenarios.Scenario, t time.Duration, downRate int64, downCapped bool, upRate int64, upCapped bool) (down, up, moving float64) {
	moving = share(sc.Screen, t)
	down = moving * video(sc.Controller, downRate, downCapped, t)
	for _, f := range sc.Traffic {
		if t < f.Start || t >= f.Start+active(sc, f) {
			continue
		}
		goesUp := f.Kind == "reverse-media" || f.Direction == "up" && !media(f)
		rate, capped := downRate, downCapped
		if goesUp {
			rate, capped = upRate, upCapped
		}
		var bps float64
		switch f.Kind {
		case "session", "reverse-media":
			c, screen := sc.Controller, sc.Screen
			if f.Controller != nil {
				c = *f.Controller
			}
			if f.Screen != nil {
				screen = f.Screen
			}
			moving += share(screen, t-f.Start)
			bps = share(screen, t-f.Start) * video(c, rate, capped, t-f.Start)
		case "tcp-bulk", "quic-bulk":
			if capped {
				bps = float64(rate) // it fills the bottleneck
			}
		case "cbr":
			bps = float64(f.Rate)
		case "web":
			object, think := float64(flows.DefaultWebMean), flows.DefaultWebThink
			if f.Object != nil && f.Object.Mean > 0 {
				object = float64(f.Object.Mean)
			}
			if f.Think > 0 {
				think = f.Think
			}
			bps = 8 * object / think.Seconds()
		}
		if goesUp {
			up += bps
		} else {
			down += bps
		}
	}
	return down, up, moving
}

// share is the part of its bitrate a media session sends at t (from its
// own start) with this screen: a still screen nothing (a few refinement
// passes), typing a tenth (the library's typing scenarios carry 8-21% of
// the packets their fixed bitrate would), moving content all of it.
func share(screen []scenarios.ScreenPhase, t time.Duration) float64 {
	for i := len(screen) - 1; i >= 0; i-- {
		if screen[i].At <= t {
			switch screen[i].Source {
			case "still":
				return 0
			case "typing":
				return 0.1
			}
			break
		}
	}
	return 1
}

// video is the bitrate a media session's controller aims at, at t from
// the session's start.
func video(c scenarios.Controller, rate int64, capped bool, t time.Duration) float64 {
	switch c.Kind {
	case "fixed":
		return float64(c.Bitrate)
	case "steps":
		bps := c.Bitrate
		for _, st := range c.Steps {
			if st.At <= t {
				bps = st.Bitrate
			}
		}
		return float64(bps)
	}
	// Adaptive: with a ceiling written (max), it climbs to the ceiling or
	// to the bottleneck's rate, whichever is lower; without one, or on a
	// link whose rate the model cannot read (none, or a trace's), it is
	// taken where it starts (the library's ABR scenarios without a max
	// stay near their start; a busy encoder's frames stay below it).
	if c.Max > 0 && capped {
		return float64(min(c.Max, rate))
	}
	return float64(c.Bitrate)
}

// rateAt is the bottleneck's rate in force at t, and whether there is one
// the model can read (a trace's capacity varies: the flows' demand decides).
func rateAt(phases []scenarios.Phase, t time.Duration) (int64, bool) {
	for i := len(phases) - 1; i >= 0; i-- {
		if phases[i].At <= t {
			ph := phases[i]
			return ph.Rate, ph.Rate > 0 && ph.Trace == nil
		}
	}
	return 0, false
}

// media says whether a flow is a session of the lab's own (with its
// screen, encoder and viewer).
func media(f scenarios.Flow) bool { return f.Kind == "session" || f.Kind == "reverse-media" }

// active is how long a flow runs within the session.
func active(sc *scenarios.Scenario, f scenarios.Flow) time.Duration {
	stop := f.Stop
	if stop == 0 || stop > sc.Duration {
		stop = sc.Duration
	}
	return max(stop-f.Start, 0)
}

// Session is one session's expected CPU time: every media session's
// seconds and every packet of its links.
func (m Model) Session(sc *scenarios.Scenario) time.Duration {
	return m.Fixed + time.Duration(SessionSeconds(sc)*float64(m.PerSecond)) +
		time.Duration(sc.Duration.Seconds()*float64(RealEncoderPerSecond(sc.Agent.Encoder))) +
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

// Longest orders scenarios for a run on parallel cores: the costliest
// first (stable among equals), so that the short ones fill the cores
// beside the long ones at the end rather than a long one starting last
// and running alone. On the library, whose longest session (rmcat-5-5,
// 300 s with five media flows) is a fifth of its CPU, that ordering is
// the difference between the run ending with it and ending with the rest.
func (m Model) Longest(scs []*scenarios.Scenario) []*scenarios.Scenario {
	cost := make(map[*scenarios.Scenario]time.Duration, len(scs))
	for _, sc := range scs {
		cost[sc] = m.Session(sc)
	}
	out := slices.Clone(scs)
	slices.SortStableFunc(out, func(a, b *scenarios.Scenario) int { return cmp.Compare(cost[b], cost[a]) })
	return out
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
