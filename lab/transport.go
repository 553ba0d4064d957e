package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/netem"
)

// A transport is how a session's two PCs reach each other. It makes the
// network with the session's links (Session.Uplink and Downlink, their
// timelines counted from epoch, their taps from the capture), connects the
// agent and the viewer by QUIC over it, and hands both connections back
// with a way to read the links' counters. Everything above it (the agent,
// the viewer, the ground truth, the samples, the result) is the same
// whichever transport carried the session.
//
// There are four, one file each: the in-memory network in virtual time
// (transport_memory.go), the two-site topology of NATs, relay and
// WebSocket tunnel (transport_topology.go), real UDP sockets through the
// real-time proxy (transport_realtime.go) and the kernel mode's network
// namespaces (transport_kernel_linux.go). A fifth is a new file with a
// type that implements transport, and a case in transportFor.
type transport interface {
	// open makes the network and connects the two PCs. On error it has
	// closed whatever it made.
	open(ctx context.Context, s Session, epoch time.Time, capt *recording) (*opened, error)
}

// opened is a session's connection, whichever transport made it.
type opened struct {
	agent, viewer *quic.Conn
	// stats reads the counters of the viewer's links, up and down: a
	// function rather than the links, because the real-time proxy keeps
	// its links to itself and shows only their counters.
	stats func() (up, down netem.Stats)
	path  *PathResult
	// traffic gives the flows of Session.Traffic their endpoints; nil
	// for a transport that cannot carry them.
	traffic trafficNet
	// finish, when set, adds to a result what only this transport
	// measures (the kernel mode's TCP statistics and competing flow). It
	// runs before close, while the transport's sockets are still there
	// to read.
	finish func(*Result) error
	close  func()
}

// transportFor chooses a session's transport from its switches, refusing
// combinations that do not exist.
func transportFor(s Session) (transport, error) {
	if s.RealTime && s.Path != nil {
		return nil, fmt.Errorf("%w: a real-time session with a Path (the two-site topology exists only in the in-memory network)", ErrUnsupported)
	}
	if s.Kernel != nil && (s.RealTime || s.Path != nil) {
		return nil, fmt.Errorf("%w: a kernel-mode session with RealTime or a Path (it has its own real-time network of two namespaces)", ErrUnsupported)
	}
	if len(s.Traffic) > 0 && s.Path != nil {
		return nil, fmt.Errorf("%w: traffic in a session with a path (the flows run between the plain link's two hosts; the two-site topology has LANs, routers, a relay and a tunnel, and no one place where a download would join the session's path)", ErrUnsupported)
	}
	switch {
	case s.Kernel != nil:
		return kernelTransport{}, nil
	case s.Path != nil:
		return topologyTransport{}, nil
	case s.RealTime:
		return realTimeTransport{}, nil
	}
	return memoryTransport{}, nil
}

// linkStats is opened.stats for links of the in-memory network.
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
