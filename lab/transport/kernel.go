package transport

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/traffic"
)

// What QUIC crosses the kernel mode's links in (Kernel.Transport).
const (
	// KernelQUIC: QUIC (quic-go, NewReno) straight over UDP between the
	// agent's socket in namespace A and the viewer's in B.
	KernelQUIC = "quic"
	// KernelWebSocket: the same QUIC packets through the relay, the
	// viewer's leg inside a WebSocket over kernel TCP (finding N19), so
	// that the kernel's congestion controller paces the video.
	KernelWebSocket = "websocket"
)

// DefaultKernelController is the TCP congestion controller of the
// WebSocket tunnel when Kernel.Controller is empty: Linux's default,
// so that a tunnel with no choice behaves as the product's would.
const DefaultKernelController = "cubic"

// Kernel runs a session across netem's kernel mode (netem/kernel): two
// network namespaces, A holding the agent and B the viewer, whose IP
// packets cross the session's links (the downlink from A to B, the uplink
// from B to A) in real time. The agent's and the viewer's sockets are created inside
// their namespaces, so everything between them is the kernel's own
// traffic: UDP for QUIC, or TCP with a chosen congestion controller for the
// WebSocket tunnel. It needs Linux, root and /dev/net/tun (see
// kernel.Available); elsewhere the session fails with an error wrapping
// laberr.ErrUnsupported or kernel.ErrUnavailable.
//
// The WebSocket topology follows the two-site one of the in-memory network
// (Topology with Connect "websocket"): the relay runs next to the agent, in A. The agent
// binds to the relay's UDP port over A's loopback (no impairment: the
// relay is on the agent's site), and the viewer, whose UDP is taken to be
// blocked, dials the relay's WebSocket endpoint on A's TUN address from B.
// Its TCP connection is the only one crossing the links; the video leaves
// A on the relay's accepted socket, whose controller (inherited from the
// listening socket) is the one under test. Between the QUIC sender and the
// wire sit the relay's queue for the WebSocket peer (relay.Config's 1 MiB)
// and the socket's send buffer, as in the product.
//
// Like RealTime it must not run inside a testing/synctest bubble. Of the
// session's other traffic it carries tcp-bulk flows, over the kernel's
// TCP between the namespaces, each with its congestion controller, and
// refuses the other kinds.
//
// Its zero value is QUIC without a competing flow.
type Kernel struct {
	// Transport is KernelQUIC ("" too) or KernelWebSocket.
	Transport string
	// Controller is the TCP congestion controller (TCP_CONGESTION: bbr,
	// cubic, reno...) of both ends of the WebSocket tunnel; empty is
	// DefaultKernelController. QUIC's controller is quic-go's NewReno and
	// cannot be chosen, so a Controller with KernelQUIC is refused rather
	// than reported under a name it did not have.
	Controller string
	// Competing, when set, is the congestion controller of one long TCP
	// flow from A to B (like kernel.Bulk) that runs beside the video from
	// the end of the handshake to the end of the session, sharing the
	// downlink's bottleneck: media against a competing long TCP flow.
	Competing string
	// MTU of the TUN devices; zero is kernel.DefaultMTU.
	MTU int
}

// withDefaults checks the mode and fills in its defaults.
func (m Kernel) withDefaults() (Kernel, error) {
	switch m.Transport {
	case "", KernelQUIC:
		m.Transport = KernelQUIC
		if m.Controller != "" {
			return m, fmt.Errorf("%w: kernel mode: congestion controller %q with QUIC (quic-go's is NewReno and cannot be chosen; use the websocket transport)", laberr.ErrUnsupported, m.Controller)
		}
	case KernelWebSocket:
		if m.Controller == "" {
			m.Controller = DefaultKernelController
		}
	default:
		return m, fmt.Errorf("%w: kernel mode transport %q (want quic or websocket)", laberr.ErrUnsupported, m.Transport)
	}
	return m, nil
}

// Check implements Transport: the mode's transport and controller, and
// only tcp-bulk flows, without an extra delay.
func (m Kernel) Check(fl []traffic.Flow) error {
	if _, err := m.withDefaults(); err != nil {
		return err
	}
	return CheckKernelFlows(fl)
}

// CheckKernelFlows refuses flows the kernel mode cannot run: kinds other
// than tcp-bulk (it runs those over the kernel's TCP; the other kinds run
// in virtual time and in real time through the proxy), and an extra
// delay (its flows share the namespaces' one pair of links). lab shell
// runs a scenario's flows by the same rule.
func CheckKernelFlows(fl []traffic.Flow) error {
	for i, f := range fl {
		switch {
		case f.Kind != traffic.KindTCPBulk:
			return fmt.Errorf("%w: %s: a %s flow in the kernel mode (it runs tcp-bulk flows, over the kernel's TCP; the other kinds run in virtual time and in real time through the proxy)", laberr.ErrUnsupported, f.Where(i), f.Kind)
		case f.ECN != "":
			return fmt.Errorf("%w: %s: ecn in the kernel mode (the TCP-like model's, in virtual time)", laberr.ErrUnsupported, f.Where(i))
		case f.Delay > 0:
			return fmt.Errorf("%w: %s: an extra delay in the kernel mode (its flows share the namespaces' one pair of links)", laberr.ErrUnsupported, f.Where(i))
		}
	}
	return nil
}

// KernelResult is what a kernel-mode session measured beyond the rest
// (lab.Result.Kernel).
type KernelResult struct {
	// Transport is the mode's transport (KernelQUIC or KernelWebSocket).
	Transport string
	// Pair names the namespaces and addresses, for logs.
	Pair string
	// Controller is the video's congestion controller: "newreno
	// (quic-go)" over QUIC, else the TCP controller the kernel confirmed
	// on the tunnel's sockets.
	Controller string
	// Tunnel is the TCP statistics of the relay's socket in A, the one
	// that sends the video into the tunnel (nil over QUIC).
	Tunnel *TCPStats
	// Rate is the downlink's bottleneck rate in bit/s at its start (0:
	// none), which the utilisations are shares of.
	Rate int64
	// Warmup is the start of the session left out of the goodputs, as
	// kernel.Bulk leaves it out (slow start is not the steady state the
	// flows share the link in); Window is the measured rest, from the
	// session's start plus Warmup to its end.
	Warmup, Window time.Duration
	// MediaGoodput is the encoded bytes of the frames that reached the
	// viewer during the window, in bit/s: the video's payload, without
	// QUIC, WebSocket or IP overhead. MediaUtilisation is it over Rate.
	MediaGoodput, MediaUtilisation float64
	// Competing is the competing bulk flow, nil without one.
	Competing *CompetingFlow
}

// CompetingFlow is what the competing bulk flow measured, over the same
// window as the media.
type CompetingFlow struct {
	// Controller is the flow's congestion controller, as the kernel
	// confirmed it on the sender's socket.
	Controller string
	// Goodput is the TCP payload the receiver got during the window, in
	// bit/s (as iperf3 reports it); Utilisation is it over Rate.
	Goodput, Utilisation float64
	// Share is the flow's part of the two goodputs together (the media's
	// is 1 - Share).
	Share float64
	// Sender is the sender's TCP statistics at the end.
	Sender TCPStats
}

// TCPStats is a TCP sender's view of its connection (from TCP_INFO).
type TCPStats struct {
	// Retransmits is tcpi_total_retrans, SegmentsOut tcpi_segs_out
	// (retransmissions included).
	Retransmits, SegmentsOut uint32
	// RTT is the smoothed round-trip time at the end, MinRTT the smallest
	// seen: their difference is the queue the sender keeps.
	RTT, MinRTT time.Duration
}

// kernelRun is a kernel-mode session under way: what its Conn.Measure
// needs at the end to make its KernelResult. The platform's Open fills
// it; the measurement itself is common.
type kernelRun struct {
	mode       Kernel
	pair       string
	controller string
	rate       int64
	maxWarmup  time.Duration
	// tunnel reads the tunnel sender's TCP_INFO; nil over QUIC.
	tunnel func() (TCPStats, error)
	// competing is the bulk flow, nil without one.
	competing *competingRun
}

// competingRun is the bulk flow's side of a kernelRun.
type competingRun struct {
	controller string
	received   flowLog
	sender     func() (TCPStats, error)
}

// result measures the media and the competing flow over the same window
// of res. It runs before the network closes, so the senders' TCP_INFO is
// still there to read.
func (k *kernelRun) result(res Span) (*KernelResult, error) {
	if k == nil {
		return nil, nil
	}
	kr := &KernelResult{Transport: k.mode.Transport, Pair: k.pair, Controller: k.controller, Rate: k.rate}
	if k.tunnel != nil {
		st, err := k.tunnel()
		if err != nil {
			return nil, err
		}
		kr.Tunnel = &st
	}
	kr.Warmup = min(k.maxWarmup, res.End.Sub(res.Start)/4)
	from := res.Start.Add(kr.Warmup)
	kr.Window = res.End.Sub(from)
	if kr.Window <= 0 {
		return kr, nil
	}
	var media int64
	for _, f := range res.Frames {
		if f.Arrived.After(from) && !f.Arrived.After(res.End) {
			media += int64(f.Bytes)
		}
	}
	kr.MediaGoodput = float64(media) * 8 / kr.Window.Seconds()
	kr.MediaUtilisation = share(kr.MediaGoodput, float64(k.rate))
	if c := k.competing; c != nil {
		st, err := c.sender()
		if err != nil {
			return nil, err
		}
		cf := &CompetingFlow{Controller: c.controller, Sender: st}
		cf.Goodput = float64(c.received.between(from, res.End)) * 8 / kr.Window.Seconds()
		cf.Utilisation = share(cf.Goodput, float64(k.rate))
		cf.Share = share(cf.Goodput, cf.Goodput+kr.MediaGoodput)
		kr.Competing = cf
	}
	return kr, nil
}

// share is a/b, or 0 when b is.
func share(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// flowLog records when a stream's bytes arrived, read by read, so that
// its goodput can be taken afterwards over any window, the media's
// included, without a timer sampling it at the window's edges.
type flowLog struct {
	mu    sync.Mutex
	at    []time.Time
	total []int64 // cumulative bytes at at[i]
}

// add records n bytes arriving now.
func (l *flowLog) add(n int) {
	if n <= 0 {
		return
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var t int64
	if k := len(l.total); k > 0 {
		t = l.total[k-1]
	}
	l.at = append(l.at, now)
	l.total = append(l.total, t+int64(n))
}

// between returns the bytes that arrived in (from, to].
func (l *flowLog) between(from, to time.Time) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.upTo(to) - l.upTo(from)
}

// upTo is the cumulative count at t. Call with l.mu held.
func (l *flowLog) upTo(t time.Time) int64 {
	// The first read after t: everything before it arrived by t.
	i, _ := slices.BinarySearchFunc(l.at, t, func(a, t time.Time) int {
		if a.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 {
		return 0
	}
	return l.total[i-1]
}
