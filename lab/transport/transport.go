// Package transport carries a session between its two PCs. A transport
// makes the network with the session's links, connects the agent and the
// viewer by QUIC over it, gives the session's other traffic its
// endpoints, and hands the connections back with a way to read the
// links' counters. Everything above it (the agent, the viewer, the ground
// truth, the samples, the result: package lab) is the same whichever
// transport carried the session.
//
// There are four, one file each: Memory, the in-memory network, in
// virtual time inside a testing/synctest bubble (memory.go); Topology,
// the two-site topology of NATs, relay and WebSocket tunnel (topology.go);
// RealTime, real UDP sockets on loopback through the real-time proxy
// (realtime.go); and Kernel, netem's kernel mode of two network
// namespaces (kernel.go, kernel_linux.go). A fifth is a new file with a
// type that implements Transport.
package transport

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/netem"
)

// The hosts of a session's in-memory network: the viewer dials the agent.
var (
	ViewerAddr = netip.MustParseAddrPort("10.0.0.1:40000")
	AgentAddr  = netip.MustParseAddrPort("10.0.0.2:4433")
)

// Transport is how a session's two PCs reach each other.
type Transport interface {
	// Check refuses, before anything is made, a session this transport
	// cannot carry: its own settings when they are wrong, and flows of
	// other traffic it cannot run (the flows passed traffic.Check).
	Check(flows []traffic.Flow) error
	// Open makes the network and connects the two PCs. On error it has
	// closed whatever it made.
	Open(ctx context.Context, nw Network) (*Conn, error)
}

// Network is what a transport makes a session's network of.
type Network struct {
	// Seed seeds the links' random decisions.
	Seed uint64
	// Uplink carries viewer -> agent (reports, acknowledgements),
	// Downlink agent -> viewer (video): the links' names, impairments,
	// timelines and epoch, and their taps when a capture records packets.
	// A transport whose links take their own seed sets Seed in them.
	Uplink, Downlink netem.LinkConfig
	// Hops, when set, is a path of several hops in place of Uplink and
	// Downlink, in the order the video crosses them (only the in-memory
	// transport makes one). UpBottleneck and DownBottleneck are the
	// places in Hops of the hops whose counters stand for the session's
	// up and down links (Conn.Stats): the narrowest in each direction.
	Hops                         []Hop
	UpBottleneck, DownBottleneck int
	// Recorder records the session for the debugging tools; nil records
	// nothing.
	Recorder Recorder
	// ECN makes the session's QUIC connection ECN-capable: its endpoints
	// pass the ECN bits quic-go reads and writes (netem's
	// PacketConn.PassECN), or the real-time proxy carries those quic-go
	// sets on its real sockets (netem.ProxyConfig.ECN). The topology and
	// the kernel mode refuse it (ErrNoECN).
	ECN bool
}

// ErrNoECN is the refusal of an ECN-capable session by a transport whose
// path does not carry the bits quic-go sets.
var ErrNoECN = fmt.Errorf("%w: the session's ecn", laberr.ErrUnsupported)

// Recorder is the part of a session's capture (lab.Capture) that a
// transport feeds as it connects the PCs and the flows.
type Recorder interface {
	// KeyLog is where the TLS secrets of the QUIC connections go, or nil.
	KeyLog() io.Writer
	// QUICConfig is the QUIC configuration of both ends (nil: quic-go's
	// defaults), which writes their qlogs when asked.
	QUICConfig() *quic.Config
	// NamePort names the packets to or from a socket's port at the
	// agent's host as flow's, in the capture (see NamedPorts).
	NamePort(port uint16, flow string)
}

// NamedPorts is implemented by a transport whose sockets get their ports
// from the kernel as they are made (real time, on loopback), rather than
// the fixed ports of the in-memory hosts (AgentAddr, ViewerAddr,
// traffic.PortBase plus a flow's place). It names each socket's port at
// the agent's host through Recorder.NamePort, and a capture names packets
// by those ports alone.
type NamedPorts interface {
	Transport
	// FlowSockets says where each flow's sockets are, for a capture's
	// legend: "sockets of its own on loopback".
	FlowSockets() string
}

// Conn is a session's connection, whichever transport made it.
type Conn struct {
	// Agent and Viewer are the two ends of the session's QUIC connection.
	Agent, Viewer *quic.Conn
	// Stats reads the counters of the viewer's links, up and down: a
	// function rather than the links, because the real-time proxy keeps
	// its links to itself and shows only their counters.
	Stats func() (up, down netem.Stats)
	// Hops reads the counters of every hop of a path of several
	// (Network.Hops), in its order; nil for a path of one pair of links.
	Hops func() []HopStats
	// Path is how the PCs connected, set by a transport that chooses
	// between paths (Topology); nil for the others.
	Path *PathResult
	// Traffic runs the session's flows of other traffic; nil for a
	// transport that carries none.
	Traffic traffic.Network
	// Measure, when set, measures what only this transport can (the
	// kernel mode's TCP statistics and competing flow) over the session's
	// span. It is called before Close, while the transport's sockets are
	// still there to read.
	Measure func(Span) (*KernelResult, error)
	// Marked, when set, counts the session's packets that arrived at
	// the viewer CE-marked (the in-memory network's endpoints count them).
	Marked func() int64
	// Close closes everything the transport made.
	Close func()
}

// Span is a session as a transport's own measurement sees it: from time
// zero to its end, and the ground truth of its frames.
type Span struct {
	Start, End time.Time
	Frames     []groundtruth.Frame
}

// closers are what a transport made that its Conn.Close closes, in the
// order they were made.
type closers []func() error

// add appends what was made last.
func (c *closers) add(fs ...func() error) { *c = append(*c, fs...) }

// close closes everything, last made first, so that nothing is closed
// under what still uses it.
func (c closers) close() {
	for i := len(c) - 1; i >= 0; i-- {
		_ = c[i]()
	}
}

// linkStats is Conn.Stats for links of the in-memory network.
func linkStats(up, down *netem.Link) func() (netem.Stats, netem.Stats) {
	return func() (netem.Stats, netem.Stats) { return statsOf(up), statsOf(down) }
}

// statsOf reads a link's counters; a nil link (a perfect one that was
// never made) has none.
func statsOf(l *netem.Link) netem.Stats {
	if l == nil {
		return netem.Stats{}
	}
	return l.Stats()
}

// keyLog and quicConfig read a recorder that may be nil.
func keyLog(r Recorder) io.Writer {
	if r == nil {
		return nil
	}
	return r.KeyLog()
}

func quicConfig(r Recorder) *quic.Config {
	if r == nil {
		return nil
	}
	return r.QUICConfig()
}
