package lab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlogwriter"

	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/pcap"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Capture records a session for the tools engineers debug QUIC with:
// a pcapng capture of the viewer's links for Wireshark, the TLS
// key log that lets Wireshark decrypt it, and a qlog of each endpoint for
// qvis. Its zero value records nothing and costs nothing.
type Capture struct {
	// Pcap, when set, receives a pcapng capture of the session's Uplink
	// and Downlink (over transport.Topology, the viewer's access links):
	// interfaces uplink-in, uplink-out, downlink-in and downlink-out, each packet
	// offered to a link on its -in interface with its fate as the packet
	// comment ("dropped: loss", "delivered after 25ms"), see netem/pcap.
	// The capture ends once the session's network is closed, with the
	// links' final counters as the interfaces' statistics. A session
	// with traffic names each packet's flow in a second comment, "flow
	// main" for the session's own and "flow NAME" for the others (in
	// Wireshark: frame.comment == "flow download"), and lists the flows
	// with their ports in the capture's comment.
	Pcap io.Writer
	// KeyLog, when set, receives the TLS secrets of the session's QUIC
	// connections in NSS key log format, Wireshark's tls.keylog_file.
	KeyLog io.Writer
	// QlogDir, when set, is a directory (made if missing) where each
	// endpoint writes a qlog in JSON-SEQ, the form qvis opens:
	// agent.sqlog and viewer.sqlog. transport.Topology may make several
	// connections while it tries its strategies; the later ones of an
	// endpoint are agent-2.sqlog, agent-3.sqlog and so on.
	QlogDir string
}

// enabled reports whether anything is to be recorded.
func (c Capture) enabled() bool {
	return c.Pcap != nil || c.KeyLog != nil || c.QlogDir != ""
}

// recording is a Capture under way: the session's transport feeds it
// through transport.Recorder. A nil *recording records nothing, so
// sessions without a Capture go the way they always went.
type recording struct {
	cfg      Capture
	pcap     *pcap.Writer
	up, down *pcap.Tap

	// ports names the flows of a session over a transport that names its
	// ports (transport.NamedPorts: real time) by the port of their socket
	// at the agent's host, which the kernel chose (port -> name); the
	// in-memory network's fixed ports need no table.
	ports sync.Map

	mu    sync.Mutex
	qlogs map[string]int // connections traced per endpoint
	err   error          // the first qlog error
	open  sync.WaitGroup // qlog files not yet closed
}

// startCapture prepares the recording of a session with its traffic over
// transport tr; nil when c is zero.
func startCapture(c Capture, flows []traffic.Flow, tr transport.Transport) (*recording, error) {
	if !c.enabled() {
		return nil, nil
	}
	r := &recording{cfg: c, qlogs: map[string]int{}}
	if c.Pcap != nil {
		r.pcap = pcap.NewWriter(c.Pcap)
		if len(flows) > 0 {
			named, _ := tr.(transport.NamedPorts)
			r.pcap.Describe(flowLegend(flows, named))
			r.pcap.NameFlows(r.flowNamer(flows, named != nil))
		}
		var err error
		if r.up, err = r.pcap.Tap("uplink"); err != nil {
			return nil, fmt.Errorf("lab: capture: %w", err)
		}
		if r.down, err = r.pcap.Tap("downlink"); err != nil {
			return nil, fmt.Errorf("lab: capture: %w", err)
		}
	}
	if c.QlogDir != "" {
		if err := os.MkdirAll(c.QlogDir, 0o755); err != nil {
			return nil, fmt.Errorf("lab: capture: %w", err)
		}
	}
	return r, nil
}

// taps returns the taps for the uplink and the downlink; nil interfaces
// (not nil pointers in them) when there is no pcap, so the links pay
// nothing.
func (r *recording) taps() (up, down netem.Tap) {
	if r == nil || r.pcap == nil {
		return nil, nil
	}
	return r.up, r.down
}

// recorder is the recording as the transport sees it: nil, not a nil
// *recording, when there is none, so that a transport that sets up its
// TLS and QUIC configurations only for a capture (transport.Topology)
// sees none.
func (r *recording) recorder() transport.Recorder {
	if r == nil {
		return nil
	}
	return r
}

// keyLog is where the TLS secrets go, or nil.
func (r *recording) keyLog() io.Writer {
	if r == nil {
		return nil
	}
	return r.cfg.KeyLog
}

// KeyLog implements transport.Recorder.
func (r *recording) KeyLog() io.Writer { return r.keyLog() }

// QUICConfig implements transport.Recorder: the QUIC configuration both
// ends use, quic-go's defaults (nil) unless the endpoints are to write
// qlogs.
func (r *recording) QUICConfig() *quic.Config {
	if r == nil || r.cfg.QlogDir == "" {
		return nil
	}
	return &quic.Config{Tracer: r.tracer}
}

// tracer is quic.Config.Tracer: one JSON-SEQ file per connection, named by
// the endpoint's role. The lab's agent always accepts and its viewer
// always dials, so the perspective says which is which.
func (r *recording) tracer(_ context.Context, isClient bool, odcid quic.ConnectionID) qlogwriter.Trace {
	role := "agent"
	if isClient {
		role = "viewer"
	}
	r.mu.Lock()
	r.qlogs[role]++
	name := role + ".sqlog"
	if k := r.qlogs[role]; k > 1 {
		name = fmt.Sprintf("%s-%d.sqlog", role, k)
	}
	r.mu.Unlock()
	f, err := os.Create(filepath.Join(r.cfg.QlogDir, name))
	if err != nil {
		r.fail(err)
		return nil // quic-go then traces nothing for this connection
	}
	r.open.Add(1)
	trace := qlogwriter.NewConnectionFileSeq(&qlogFile{Writer: bufio.NewWriter(f), f: f, r: r}, isClient, odcid)
	// The trace's writer goroutine ends when quic-go closes the
	// connection's recorder; finish waits for that through r.open.
	go trace.Run()
	return trace
}

func (r *recording) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = fmt.Errorf("lab: qlog: %w", err)
	}
}

// qlogFile buffers a qlog file and tells the recording when it is
// complete.
type qlogFile struct {
	*bufio.Writer
	f    *os.File
	r    *recording
	once sync.Once
}

// Close implements io.Closer.
func (q *qlogFile) Close() error {
	q.once.Do(func() {
		defer q.r.open.Done()
		if err := errors.Join(q.Flush(), q.f.Close()); err != nil {
			q.r.fail(err)
		}
	})
	return nil
}

// finish completes the recording once the session's network and
// connections are closed: the links' final counters (packets lost at
// Close included), read from stats, end the pcap (nil when the session
// never connected), and the qlog files are complete. It returns the first
// error any part met.
func (r *recording) finish(stats func() (up, down netem.Stats)) error {
	if r == nil {
		return nil
	}
	var errs []error
	if r.pcap != nil {
		if stats != nil {
			up, down := stats()
			errs = append(errs, r.pcap.WriteStats("uplink", up), r.pcap.WriteStats("downlink", down))
		}
		errs = append(errs, r.pcap.Close())
	}
	r.open.Wait()
	r.mu.Lock()
	errs = append(errs, r.err)
	r.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lab: capture: %w", err)
	}
	return nil
}

// flowLegend lists a session's flows and their ports for a capture's
// comment. Over a transport that names its ports (real time) they are
// the kernel's choice, one socket per flow at each end; named is nil for
// the in-memory network's fixed ports.
func flowLegend(flows []traffic.Flow, named transport.NamedPorts) string {
	var b strings.Builder
	if named != nil {
		b.WriteString("flows: main (the session)")
	} else {
		fmt.Fprintf(&b, "flows: main (the session: agent %v, viewer %v)", transport.AgentAddr, transport.ViewerAddr)
	}
	for i, f := range flows {
		dir := "down"
		if f.DataUp() {
			dir = "up"
		}
		if named != nil {
			fmt.Fprintf(&b, "; %s (%s, %s, %s)", f.Name, f.Kind, dir, named.FlowSockets())
		} else {
			fmt.Fprintf(&b, "; %s (%s, %s, udp port %d at both hosts)", f.Name, f.Kind, dir, traffic.PortBase+i)
		}
	}
	return b.String()
}

// NamePort implements transport.Recorder: it names the packets to or
// from a socket's port (see recording.ports); a no-op without a pcap.
func (r *recording) NamePort(port uint16, name string) {
	if r == nil || r.pcap == nil {
		return
	}
	r.ports.Store(port, name)
}

// flowNamer names a packet's flow by its ports: by the ports the
// transport named (NamePort) when it names them, else the session's own
// or a flow's traffic.PortBase+i.
func (r *recording) flowNamer(flows []traffic.Flow, named bool) func(*netem.Packet) string {
	return func(p *netem.Packet) string {
		for _, a := range []net.Addr{p.From, p.To} {
			var port uint16
			switch u := a.(type) {
			case *net.UDPAddr:
				port = u.AddrPort().Port()
			case nil:
				continue
			default:
				// The real-time proxy's clients are addresses of their own
				// type; their String is the address.
				ap, err := netip.ParseAddrPort(a.String())
				if err != nil {
					continue
				}
				port = ap.Port()
			}
			if named {
				if name, ok := r.ports.Load(port); ok {
					return name.(string)
				}
				continue
			}
			if port == transport.AgentAddr.Port() || port == transport.ViewerAddr.Port() {
				return scenarios.MainFlow
			}
			if i := int(port) - traffic.PortBase; i >= 0 && i < len(flows) {
				return flows[i].Name
			}
		}
		return ""
	}
}
