package lab

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/tcplike"
	"github.com/nuvirahub/latencylab/viewer"
)

// The kinds of competing traffic (Flow.Kind), the scenario format's names
// (scenarios.FlowKinds).
const (
	FlowQUICBulk     = "quic-bulk"
	FlowTCPBulk      = "tcp-bulk"
	FlowCBR          = "cbr"
	FlowWeb          = "web"
	FlowSession      = "session"
	FlowReverseMedia = "reverse-media"
)

// FlowPortBase is the port of flow i's endpoints, FlowPortBase+i, on both
// hosts: a capture names each flow's packets by them (see Capture.Pcap),
// and Wireshark's udp.port filter finds a flow by its place.
const FlowPortBase = 6000

// DefaultCBRSize is a cbr flow's datagram when Flow.Size is 0.
const DefaultCBRSize = 1200

// Flow is one flow of other traffic in a session (Session.Traffic): it
// shares the session's links from Start to Stop, between an endpoint at
// the agent's host (the far end: the internet for a download) and one at
// the viewer's: in the in-memory network each on port FlowPortBase plus
// the flow's place, in real time two loopback sockets of its own.
type Flow struct {
	// Name names it in the result and the capture; Kind is one of the
	// Flow* constants.
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
	// Congestion is the TCP congestion controller of tcp-bulk and web
	// flows (tcplike's reno or cubic; empty: cubic; bbr only in the
	// kernel mode).
	Congestion string
	// Rate and Size are a cbr flow's bit rate and datagram size (0:
	// DefaultCBRSize).
	Rate int64
	Size int
	// Web is a web flow's law.
	Web flows.WebConfig
	// Agent, Viewer and Screen configure a session or reverse-media
	// flow's two ends as Session's do; their Seed, Clock, Recorder and
	// Screen are set by the lab. A nil Screen is the documented
	// full-screen animation.
	Agent  agent.Config
	Viewer viewer.Config
	Screen *screen.Config
}

// FlowResult is what one flow measured.
type FlowResult struct {
	// Flow is the flow as it ran (Stop resolved to the session's end).
	Flow Flow
	// Stats are its transport's figures; Delivered its receiver's payload
	// by period of Session.SampleEvery (result.DefaultSampleEvery when
	// that is 0) from time zero.
	Stats     flows.Stats
	Delivered []int64
	// Frames is a session flow's ground truth.
	Frames []groundtruth.Frame
	// Err is why the flow could not run, or ended early.
	Err error
}

// media tells whether a flow is a remote-desktop session.
func (f Flow) media() bool { return f.Kind == FlowSession || f.Kind == FlowReverseMedia }

// dataUp tells whether the flow's data crosses the uplink.
func (f Flow) dataUp() bool { return f.Kind == FlowReverseMedia || f.Up && !f.media() }

// roles names the flow's ends at the agent's host and at the viewer's by
// what they do: the sender sends the data, the receiver gets it.
func (f Flow) roles() (agentEnd, viewerEnd string) {
	if f.dataUp() {
		return "receiver", "sender"
	}
	return "sender", "receiver"
}

// checkTraffic refuses flows that cannot run: an unknown kind, an instant
// outside the session, names used twice.
func checkTraffic(s Session) error {
	seen := map[string]bool{}
	for i, f := range s.Traffic {
		where := fmt.Sprintf("traffic[%d] (%s)", i, f.Name)
		switch {
		case f.Name == "" || seen[f.Name]:
			return fmt.Errorf("%w: %s: each flow needs a name of its own", ErrScenario, where)
		case f.Start < 0 || f.Start >= s.Duration || f.Stop < 0 || (f.Stop > 0 && (f.Stop <= f.Start || f.Stop > s.Duration)):
			return fmt.Errorf("%w: %s: start %v and stop %v: expected 0 <= start < stop <= %v", ErrScenario, where, f.Start, f.Stop, s.Duration)
		case f.Delay < 0:
			return fmt.Errorf("%w: %s: negative delay %v", ErrScenario, where, f.Delay)
		case s.Kernel != nil && f.Kind != FlowTCPBulk:
			return fmt.Errorf("%w: %s: a %s flow in the kernel mode (it runs tcp-bulk flows, over the kernel's TCP; the other kinds run in virtual time and in real time through the proxy)", ErrUnsupported, where, f.Kind)
		case s.Kernel != nil && f.Delay > 0:
			return fmt.Errorf("%w: %s: an extra delay in the kernel mode (its flows share the namespaces' one pair of links)", ErrUnsupported, where)
		}
		seen[f.Name] = true
		switch f.Kind {
		case FlowQUICBulk, FlowSession, FlowReverseMedia:
		case FlowTCPBulk, FlowWeb:
			if f.Congestion == "bbr" && s.Kernel == nil {
				return fmt.Errorf("%w: %s: congestion bbr needs the kernel's TCP (the kernel mode); the virtual-time TCP-like model has %v", ErrUnsupported, where, tcplike.Controllers)
			}
			if f.Congestion != "" && f.Congestion != "bbr" && !slices.Contains(tcplike.Controllers, f.Congestion) {
				return fmt.Errorf("%w: %s: unknown congestion controller %q", ErrScenario, where, f.Congestion)
			}
		case FlowCBR:
			if f.Rate <= 0 || (f.Size != 0 && (f.Size < flows.MinCBRSize || f.Size > netem.MaxDatagram)) {
				return fmt.Errorf("%w: %s: cbr at %d bit/s in %d-byte datagrams", ErrScenario, where, f.Rate, f.Size)
			}
		default:
			return fmt.Errorf("%w: %s: unknown kind %q", ErrScenario, where, f.Kind)
		}
	}
	return nil
}

// trafficNet is how a transport runs the flows on its network.
type trafficNet interface {
	// run runs flow i until ctx ends: its kind between its two ends,
	// its payload counted in env.meter.
	run(ctx context.Context, f Flow, i int, env flowEnv) (flows.Stats, []groundtruth.Frame, error)
}

// flowEnv is what every flow of a session shares.
type flowEnv struct {
	seed   uint64
	meter  *flows.Meter
	zero   time.Time
	keyLog io.Writer
}

// flowEnds makes a flow's two endpoints on a transport's network, the
// one at the agent's host and the one at the viewer's. Each reaches the
// other at the other's LocalAddr, as the flows address their peers, and
// what each sends waits the flow's Delay before the shared links.
type flowEnds interface {
	ends(f Flow, i int) (agentEnd, viewerEnd net.PacketConn, err error)
}

// memoryTraffic is trafficNet on the in-memory network: the flows'
// endpoints share the hosts, and so the links, of the session's two PCs.
type memoryTraffic struct{ n *netem.Network }

func (m memoryTraffic) run(ctx context.Context, f Flow, i int, env flowEnv) (flows.Stats, []groundtruth.Frame, error) {
	return runFlow(ctx, f, i, env, m)
}

// ends binds port FlowPortBase+i at both hosts.
func (m memoryTraffic) ends(f Flow, i int) (net.PacketConn, net.PacketConn, error) {
	port := uint16(FlowPortBase + i)
	agentRole, viewerRole := f.roles()
	a, err := m.endpoint(true, port, f.Delay, "traffic/"+f.Name+"/"+agentRole)
	if err != nil {
		return nil, nil, err
	}
	v, err := m.endpoint(false, port, f.Delay, "traffic/"+f.Name+"/"+viewerRole)
	if err != nil {
		a.Close()
		return nil, nil, err
	}
	return a, v, nil
}

// endpoint binds port at the agent's host (agentSide) or the viewer's,
// its datagrams delayed by delay before the shared links.
func (m memoryTraffic) endpoint(agentSide bool, port uint16, delay time.Duration, name string) (net.PacketConn, error) {
	host := ViewerAddr.Addr()
	if agentSide {
		host = AgentAddr.Addr()
	}
	c, err := m.n.Listen(netip.AddrPortFrom(host, port))
	if err != nil {
		return nil, err
	}
	if delay == 0 {
		return c, nil
	}
	d, err := flows.Delayed(m.n, c, delay, name)
	if err != nil {
		c.Close()
		return nil, err
	}
	return d, nil
}

// trafficRun is the flows of a session under way.
type trafficRun struct {
	results []FlowResult
	// meters count each flow's payload as it arrives: read while the
	// flows run (a session's metrics), and their buckets at the end.
	meters []*flows.Meter
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// startTraffic starts every flow's goroutine: each waits for its start
// (counted from zero), runs until its stop or the session's end (end),
// and records what it measured. Their random choices derive from seed,
// the flow's place and its name.
func startTraffic(ctx context.Context, s Session, tn trafficNet, zero, end time.Time, keyLog io.Writer) *trafficRun {
	ctx, cancel := context.WithCancel(ctx)
	t := &trafficRun{results: make([]FlowResult, len(s.Traffic)), meters: make([]*flows.Meter, len(s.Traffic)), cancel: cancel}
	period := s.SampleEvery
	if period <= 0 {
		period = result.DefaultSampleEvery
	}
	for i, f := range s.Traffic {
		if f.Stop == 0 {
			f.Stop = end.Sub(zero)
		}
		t.results[i].Flow = f
		meter := flows.NewMeter(zero, period)
		t.meters[i] = meter
		t.wg.Go(func() {
			res := &t.results[i]
			if sleepUntil(ctx, zero.Add(f.Start)) {
				fctx, stop := context.WithDeadline(ctx, zero.Add(f.Stop))
				env := flowEnv{seed: s.Seed, meter: meter, zero: zero, keyLog: keyLog}
				res.Stats, res.Frames, res.Err = tn.run(fctx, f, i, env)
				stop()
			}
			res.Delivered = meter.Buckets()
		})
	}
	return t
}

// finish stops the flows still running and returns what each measured.
func (t *trafficRun) finish() []FlowResult {
	if t == nil {
		return nil
	}
	t.cancel()
	t.wg.Wait()
	return t.results
}

// flowSeed is the seed of flow i's random sources: the run's seed, its
// place and its name.
func flowSeed(seed uint64, i int, name string) uint64 {
	return seeded.New(seed, "traffic", strconv.Itoa(i), name).Uint64()
}

// runFlow runs flow i between its two endpoints on the transport's
// network until ctx ends.
func runFlow(ctx context.Context, f Flow, i int, env flowEnv, network flowEnds) (flows.Stats, []groundtruth.Frame, error) {
	seed, meter, zero, keyLog := env.seed, env.meter, env.zero, env.keyLog
	agentEnd, viewerEnd, err := network.ends(f, i)
	if err != nil {
		return flows.Stats{}, nil, fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	// The sender is at the agent's host unless the data goes up; a
	// session's agent sends, its viewer receives.
	sender, receiver := agentEnd, viewerEnd
	if f.dataUp() {
		sender, receiver = viewerEnd, agentEnd
	}
	var st flows.Stats
	switch f.Kind {
	case FlowQUICBulk:
		st, err = flows.QUICBulk(ctx, sender, receiver, meter, keyLog)
	case FlowTCPBulk:
		st, err = flows.TCPBulk(ctx, sender, receiver, tcplike.Config{Congestion: f.Congestion}, meter)
	case FlowCBR:
		st, err = flows.CBR(ctx, sender, receiver, f.Rate, cmp.Or(f.Size, DefaultCBRSize), meter)
	case FlowWeb:
		web := f.Web
		web.TCP.Congestion = f.Congestion
		st, err = flows.Web(ctx, sender, receiver, web, seeded.New(seed, "traffic", strconv.Itoa(i), f.Name, "web"), meter)
	case FlowSession, FlowReverseMedia:
		var frames []groundtruth.Frame
		frames, err = runSessionFlow(ctx, f, flowSeed(seed, i, f.Name), sender, receiver, zero, keyLog, meter)
		for _, fr := range frames {
			if !fr.Arrived.IsZero() {
				st.Delivered += int64(fr.Bytes)
			}
			if !fr.Sent.IsZero() {
				st.Sent += int64(fr.Bytes)
			}
		}
		return st, frames, err
	default:
		sender.Close()
		receiver.Close()
		return st, nil, fmt.Errorf("%w: flow %s: kind %q", ErrUnsupported, f.Name, f.Kind)
	}
	return st, nil, err
}
