//go:build linux

package transport

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/kernel"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/netem/relay"
)

// KernelAvailable says why the kernel mode cannot run here (it needs
// root, /dev/net/tun and the ip command: kernel.Available), or nil when
// it can: for a command to refuse in one line before it sets anything up.
func KernelAvailable() error { return kernel.Available() }

// Open implements Transport, the kernel-mode set-up: a kernel.Pair with
// the session's links, the agent's sockets in A and the viewer's in B,
// QUIC between them directly or through the WebSocket tunnel, and the
// competing bulk flow when asked for. Everything it made is closed by the
// returned Conn's Close, or on error before it returns.
func (m Kernel) Open(ctx context.Context, nw Network) (_ *Conn, err error) {
	mode, err := m.withDefaults()
	if err != nil {
		return nil, err
	}
	if nw.ECN {
		return nil, fmt.Errorf("%w in the kernel mode: its links do not read or set the ECN bits of the IP packets they carry, so their queues cannot mark them: run it in virtual time", ErrNoECN)
	}
	if nw.Uplink.Tap != nil || nw.Downlink.Tap != nil {
		// netem/pcap wraps bare UDP payloads in synthetic headers; the
		// kernel links carry whole IP packets, which it would wrap again.
		return nil, fmt.Errorf("%w: a pcap capture in kernel mode (capture the TUN devices with tcpdump inside the namespaces instead)", laberr.ErrUnsupported)
	}
	for _, c := range []string{mode.Controller, mode.Competing} {
		if c == "" {
			continue
		}
		if err := kernel.ControllerAvailable(c); err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
	}

	// Last made, first closed: QUIC before the tunnel that carries it,
	// the tunnel and the flows before the links under them.
	var made closers
	defer func() {
		if err != nil {
			made.close()
		}
	}()
	// The links get the seed and the names the in-memory and real-time
	// transports give them, so that their random decisions are those of
	// the other modes.
	atob, btoa := nw.Downlink, nw.Uplink
	atob.Seed, btoa.Seed = nw.Seed, nw.Seed
	pair, err := kernel.New(kernel.Config{AtoB: atob, BtoA: btoa, MTU: mode.MTU})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	made.add(pair.Close)
	run := &kernelRun{mode: mode, pair: pair.String(), rate: pair.Rate(), maxWarmup: kernel.MaxWarmup}

	var qp *quicpair.Pair
	switch mode.Transport {
	case KernelQUIC:
		qp, err = kernelQUIC(ctx, pair, nw.Recorder, &made)
		run.controller = "newreno (quic-go)"
	case KernelWebSocket:
		qp, err = kernelWebSocket(ctx, nw.Seed, pair, mode.Controller, nw.Recorder, &made, run)
	}
	if err != nil {
		return nil, err
	}
	made.add(qp.Close)

	if mode.Competing != "" {
		// After the handshake, so that the flow does not slow the session's
		// set-up; it has until time zero and the warm-up to settle.
		b, err := startCompeting(ctx, pair, mode.Competing)
		if err != nil {
			return nil, err
		}
		// The flow closes before QUIC does: it is the last one made.
		made.add(b.close)
		run.competing = &b.run
	}
	return &Conn{
		Agent: qp.Server, Viewer: qp.Client,
		// A is the agent: its outgoing link is the viewer's down link.
		Stats: func() (up, down netem.Stats) {
			ab, ba := pair.Stats()
			return ba, ab
		},
		Measure: run.result,
		Traffic: kernelFlows{pair: pair},
		Close:   made.close,
	}, nil
}

// kernelFlows runs a kernel-mode session's tcp-bulk flows as the
// kernel's own TCP connections between the namespaces (Check refuses the
// other kinds), each with its congestion controller, like the competing
// flow of Kernel but from its start to its stop. The far end (the
// agent's, the internet for a download) is A, or B with farB (lab shell,
// whose B is the host: ShellTraffic).
type kernelFlows struct {
	pair *kernel.Pair
	farB bool
}

// Run implements traffic.Network.
func (k kernelFlows) Run(ctx context.Context, f traffic.Flow, _ int, env traffic.Env) (flows.Stats, []groundtruth.Frame, error) {
	var st flows.Stats
	controller := cmp.Or(f.Congestion, DefaultKernelController)
	if err := kernel.ControllerAvailable(controller); err != nil {
		return st, nil, fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	// The far end sends a download, the near end an upload.
	inSender, inReceiver, receiverAddr := k.pair.InA, k.pair.InB, k.pair.AddrB()
	if f.Up != k.farB {
		inSender, inReceiver, receiverAddr = k.pair.InB, k.pair.InA, k.pair.AddrA()
	}
	var ln net.Listener
	if err := inReceiver(func() (err error) {
		ln, err = net.Listen("tcp4", net.JoinHostPort(receiverAddr.String(), "0"))
		return err
	}); err != nil {
		return st, nil, fmt.Errorf("lab: flow %s: receiver: %w", f.Name, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var receiver net.Conn
	closed := false
	// Accepting on a goroutine of its own: the sender's first data may
	// be what completes the handshake when its last ACK is lost.
	wg.Go(func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		mu.Lock()
		if closed {
			mu.Unlock()
			c.Close()
			return
		}
		receiver = c
		mu.Unlock()
		buf := make([]byte, 256<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				env.Meter.Add(time.Now(), n)
				mu.Lock()
				st.Delivered += int64(n)
				mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	})
	var sender *net.TCPConn
	d := net.Dialer{Control: congestionControl(controller)}
	err := inSender(func() error {
		c, err := d.DialContext(ctx, "tcp4", ln.Addr().String())
		if err == nil {
			sender = c.(*net.TCPConn)
		}
		return err
	})
	if err == nil {
		err = checkController(sender, controller)
	}
	// The end: the sender's statistics as they stand, then both ends
	// closed, which ends the writes and the reads.
	var ts TCPStats
	stop := func() {
		if sender != nil {
			ts, _ = tcpStats(sender)
			// Reset rather than drain: the send buffer holds seconds of
			// data at the lab's rates, which nobody will read.
			_ = sender.SetLinger(0)
			sender.Close()
		}
		ln.Close()
		mu.Lock()
		closed = true
		if receiver != nil {
			receiver.Close()
		}
		mu.Unlock()
	}
	if err != nil {
		stop()
		wg.Wait()
		if ctx.Err() != nil {
			return st, nil, nil // stopped before it connected
		}
		return st, nil, fmt.Errorf("lab: flow %s: sender: %w", f.Name, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		stop()
	}()
	buf := make([]byte, 128<<10)
	var sent int64
	for {
		n, err := sender.Write(buf)
		sent += int64(n)
		if err != nil {
			break
		}
	}
	<-done
	wg.Wait()
	st.Sent, st.Packets, st.Lost = sent, int64(ts.SegmentsOut), int64(ts.Retransmits)
	return st, nil, nil
}

// kernelQUIC makes the agent's UDP socket in A and the viewer's in B and
// opens QUIC between them, across the pair's links.
func kernelQUIC(ctx context.Context, pair *kernel.Pair, rec Recorder, made *closers) (*quicpair.Pair, error) {
	var agentConn, viewerConn *net.UDPConn
	if err := pair.InA(func() (err error) {
		agentConn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrA().AsSlice()})
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: agent socket: %w", err)
	}
	made.add(agentConn.Close)
	if err := pair.InB(func() (err error) {
		viewerConn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: pair.AddrB().AsSlice()})
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: viewer socket: %w", err)
	}
	made.add(viewerConn.Close)
	qp, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, nil, quicConfig(rec), keyLog(rec))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return qp, nil
}

// kernelWebSocket builds the tunnel topology Kernel describes and opens
// QUIC through it. It records the tunnel's controller and how to read its
// sender's statistics in run.
func kernelWebSocket(ctx context.Context, seed uint64, pair *kernel.Pair, controller string, rec Recorder, made *closers, run *kernelRun) (*quicpair.Pair, error) {
	srv := relay.New(relay.Config{})
	id := kernelSessionID(seed)
	srv.Register(id)

	loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	var relayPort, agentConn *net.UDPConn
	var tcpLn net.Listener
	lc := net.ListenConfig{Control: congestionControl(controller)}
	if err := pair.InA(func() (err error) {
		if relayPort, err = net.ListenUDP("udp4", loopback); err != nil {
			return err
		}
		if agentConn, err = net.ListenUDP("udp4", loopback); err != nil {
			relayPort.Close()
			return err
		}
		// A listening socket's controller passes to the sockets it
		// accepts: the relay's end, which sends the video.
		if tcpLn, err = lc.Listen(ctx, "tcp4", net.JoinHostPort(pair.AddrA().String(), "0")); err != nil {
			relayPort.Close()
			agentConn.Close()
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: relay sockets in %s: %w", pair.NamespaceA(), err)
	}
	ln := &acceptedListener{Listener: tcpLn}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	var serving sync.WaitGroup
	serving.Go(func() { _ = srv.ServeUDP(relayPort) })
	serving.Go(func() { _ = hs.Serve(ln) })
	made.add(agentConn.Close, func() error {
		// The relay closes its port and its WebSocket peers (hijacked
		// connections, which the HTTP server no longer tracks), then the
		// HTTP server its listener.
		err := errors.Join(srv.Close(), hs.Close())
		serving.Wait()
		return err
	})

	agentRC, err := relay.Bind(ctx, agentConn, relayPort.LocalAddr(), id, relay.Agent)
	if err != nil {
		return nil, fmt.Errorf("lab: agent: %w", err)
	}
	made.add(agentRC.Close)

	d := net.Dialer{Control: congestionControl(controller)}
	addr := tcpLn.Addr().String()
	dial := func(ctx context.Context) (net.Conn, error) {
		var c net.Conn
		err := pair.InB(func() (err error) {
			c, err = d.DialContext(ctx, "tcp4", addr)
			return err
		})
		if err != nil {
			return nil, err
		}
		if err := checkController(c, controller); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	viewerRC, err := relay.DialWebSocket(ctx, dial, "ws://"+addr+"/", id, relay.Viewer)
	if err != nil {
		return nil, fmt.Errorf("lab: viewer: %w", err)
	}
	made.add(viewerRC.Close)

	// The relay answered the viewer's bind on the accepted connection, so
	// it was accepted by now.
	sender := ln.first()
	if sender == nil {
		return nil, errors.New("lab: the relay's accepted connection is missing")
	}
	if err := checkController(sender, controller); err != nil {
		return nil, fmt.Errorf("lab: relay side of the tunnel: %w", err)
	}
	run.controller = controller
	run.tunnel = func() (TCPStats, error) { return tcpStats(sender) }

	qp, err := quicpair.OpenKeyLog(ctx, agentRC, viewerRC, viewerRC.PeerAddr(), quicConfig(rec), keyLog(rec))
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	return qp, nil
}

// kernelSessionID draws the relay session's id from the seed, as every
// random decision of a session is drawn.
func kernelSessionID(seed uint64) relay.SessionID {
	h := fnv.New64a()
	h.Write([]byte("kernel relay session"))
	r := rand.New(rand.NewPCG(seed, h.Sum64()))
	var id relay.SessionID
	for i := range id {
		id[i] = byte(r.Uint32())
	}
	return id
}

// acceptedListener remembers the first connection it accepted: the
// relay's end of the tunnel, whose TCP_INFO the result reads.
type acceptedListener struct {
	net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

// Accept implements net.Listener.
func (l *acceptedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.conns = append(l.conns, c)
		l.mu.Unlock()
	}
	return c, err
}

func (l *acceptedListener) first() net.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) == 0 {
		return nil
	}
	return l.conns[0]
}

// competing is the competing bulk flow: a TCP connection from A to B that
// the sender fills as fast as its controller lets it, like kernel.Bulk's,
// but open for as long as the session and read over any window.
type competing struct {
	run    competingRun
	ln     net.Listener
	sender *net.TCPConn
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	receiver net.Conn
}

// startCompeting opens the flow and starts filling it.
func startCompeting(ctx context.Context, pair *kernel.Pair, controller string) (_ *competing, err error) {
	b := &competing{run: competingRun{controller: controller}}
	if err := pair.InB(func() (err error) {
		b.ln, err = net.Listen("tcp4", net.JoinHostPort(pair.AddrB().String(), "0"))
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: competing flow's receiver: %w", err)
	}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	// Accepting on a goroutine of its own: the sender's first data may be
	// what completes the handshake when its last ACK is lost.
	b.wg.Go(func() {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.receiver = c
		b.mu.Unlock()
		buf := make([]byte, 256<<10)
		for {
			n, err := c.Read(buf)
			b.run.received.add(n)
			if err != nil {
				return
			}
		}
	})
	d := net.Dialer{Control: congestionControl(controller)}
	if err := pair.InA(func() error {
		c, err := d.DialContext(ctx, "tcp4", b.ln.Addr().String())
		if err == nil {
			b.sender = c.(*net.TCPConn)
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("lab: competing flow's sender: %w", err)
	}
	if err := checkController(b.sender, controller); err != nil {
		return nil, fmt.Errorf("lab: competing flow: %w", err)
	}
	sender := b.sender
	b.run.sender = func() (TCPStats, error) { return tcpStats(sender) }
	b.wg.Go(func() {
		buf := make([]byte, 128<<10)
		for {
			if _, err := sender.Write(buf); err != nil {
				return // closed at the end
			}
		}
	})
	return b, nil
}

// close ends both ends of the flow and waits for its goroutines.
func (b *competing) close() error {
	if b.sender != nil {
		// Reset rather than drain: the send buffer holds seconds of data
		// at the lab's rates, which nobody will read.
		_ = b.sender.SetLinger(0)
		b.sender.Close()
	}
	b.ln.Close() // ends an Accept still waiting
	b.mu.Lock()
	b.closed = true
	if b.receiver != nil {
		b.receiver.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	return nil
}

// congestionControl is a Dialer's or ListenConfig's Control that sets the
// socket's TCP congestion controller before it connects or listens, so
// that the handshake already runs under it.
func congestionControl(name string) func(network, address string, rc syscall.RawConn) error {
	return func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("TCP_CONGESTION %s: %w", name, serr)
		}
		return nil
	}
}

// checkController confirms that the kernel runs controller name on c.
func checkController(c net.Conn, name string) error {
	rc, err := rawConn(c)
	if err != nil {
		return err
	}
	var got string
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		return err
	}
	if gerr != nil {
		return fmt.Errorf("getsockopt TCP_CONGESTION: %w", gerr)
	}
	if got != name {
		return fmt.Errorf("asked for congestion controller %s, socket has %s", name, got)
	}
	return nil
}

// tcpStats reads a connection's TCP_INFO.
func tcpStats(c net.Conn) (TCPStats, error) {
	rc, err := rawConn(c)
	if err != nil {
		return TCPStats{}, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return TCPStats{}, fmt.Errorf("lab: TCP_INFO: %w", err)
	}
	if ierr != nil {
		return TCPStats{}, fmt.Errorf("lab: TCP_INFO: %w", ierr)
	}
	return TCPStats{
		Retransmits: info.Total_retrans, SegmentsOut: info.Segs_out,
		RTT:    time.Duration(info.Rtt) * time.Microsecond,
		MinRTT: time.Duration(info.Min_rtt) * time.Microsecond,
	}, nil
}

// rawConn reaches a TCP connection's socket.
func rawConn(c net.Conn) (syscall.RawConn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("lab: %T has no socket", c)
	}
	return sc.SyscallConn()
}
