//go:build linux

package kernel

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxWarmup bounds the start of a bulk flow that Bulk leaves out of its
// goodput: slow start and the first losses are not the steady state the
// controllers are compared on. A flow shorter than 4*MaxWarmup leaves out
// its first quarter.
const MaxWarmup = 2 * time.Second

// bulkChunk is what the sender writes at a time: large enough that system
// calls cost nothing next to a few Mbit/s.
const bulkChunk = 128 << 10

// BulkResult is what one bulk flow measured.
type BulkResult struct {
	// Controller is the flow's TCP congestion controller, as the kernel
	// confirmed it on the socket.
	Controller string
	// Duration is the flow's whole length, Warmup the part of it left out,
	// Window the measured part that follows (close to Duration - Warmup).
	Duration, Warmup, Window time.Duration
	// Bytes is the payload the receiver got during the window.
	Bytes int64
	// Goodput is Bytes over Window, in bit/s: TCP payload, as iperf3
	// reports it.
	Goodput float64
	// Rate is the A-to-B bottleneck's rate in bit/s (0: none).
	Rate int64
	// Utilisation is Goodput over Rate (0 without a rate). Headers cost
	// about 3.5% of a 1500-byte packet, so a full link reads about 0.965.
	Utilisation float64
	// WireUtilisation is the IP bytes the A-to-B link delivered during the
	// window (headers, retransmissions and the receiver's B-to-A traffic
	// excluded) over Rate: how busy the bottleneck was.
	WireUtilisation float64
	// Retransmits is the sender's tcpi_total_retrans over the whole flow,
	// SegmentsOut its tcpi_segs_out (every segment sent, retransmissions
	// included).
	Retransmits, SegmentsOut uint32
	// RTT is the sender's smoothed round-trip time at the end, MinRTT the
	// smallest it saw: their difference is the queueing delay the flow
	// keeps in the bottleneck.
	RTT, MinRTT time.Duration
}

// Bulk runs one TCP flow from namespace A to B for duration, as fast as the
// congestion controller lets it (like iperf3), and measures its goodput
// after a warm-up (see MaxWarmup), its utilisation of the A-to-B link and
// its retransmissions. Controller is the TCP_CONGESTION name ("bbr",
// "cubic", "reno"); the sender's socket gets it before connecting, so the
// handshake already uses it. The pair's links should be idle: another flow
// on them shares the bottleneck.
func Bulk(ctx context.Context, p *Pair, controller string, duration time.Duration) (BulkResult, error) {
	if duration <= 0 {
		return BulkResult{}, fmt.Errorf("kernel: bulk duration %v must be positive", duration)
	}
	if err := ControllerAvailable(controller); err != nil {
		return BulkResult{}, err
	}
	res := BulkResult{Duration: duration, Warmup: min(MaxWarmup, duration/4), Rate: p.rate}

	var ln *net.TCPListener
	if err := p.InB(func() (err error) {
		ln, err = net.ListenTCP("tcp4", &net.TCPAddr{IP: p.addrB.AsSlice()})
		return err
	}); err != nil {
		return res, fmt.Errorf("kernel: bulk receiver: %w", err)
	}
	defer ln.Close()

	var received atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	var rconn net.Conn
	var rmu sync.Mutex
	rconnDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(rconnDone)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		rmu.Lock()
		rconn = c
		rmu.Unlock()
		buf := make([]byte, 256<<10)
		for {
			n, err := c.Read(buf)
			received.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	// The receiver ends when its connection closes; close it on the way
	// out whatever happens, after the listener (so a pending Accept ends).
	defer func() {
		ln.Close()
		rmu.Lock()
		if rconn != nil {
			rconn.Close()
		}
		rmu.Unlock()
	}()

	var sconn *net.TCPConn
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, controller)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("TCP_CONGESTION %s: %w", controller, serr)
		}
		return nil
	}}
	if err := p.InA(func() error {
		c, err := d.DialContext(ctx, "tcp4", ln.Addr().String())
		if err != nil {
			return err
		}
		sconn = c.(*net.TCPConn)
		return nil
	}); err != nil {
		return res, fmt.Errorf("kernel: bulk sender: %w", err)
	}
	defer sconn.Close()
	cc, err := sockoptString(sconn, unix.TCP_CONGESTION)
	if err != nil {
		return res, err
	}
	if cc != controller {
		return res, fmt.Errorf("kernel: asked for congestion controller %s, socket has %s", controller, cc)
	}
	res.Controller = cc

	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, bulkChunk)
		for {
			if _, err := sconn.Write(buf); err != nil {
				return // closed at the end
			}
		}
	}()

	start := time.Now()
	if err := sleepCtx(ctx, start.Add(res.Warmup)); err != nil {
		return res, err
	}
	ab0, _ := p.Stats()
	bytes0, t0 := received.Load(), time.Now()
	if err := sleepCtx(ctx, start.Add(duration)); err != nil {
		return res, err
	}
	ab1, _ := p.Stats()
	bytes1, t1 := received.Load(), time.Now()

	info, err := tcpInfo(sconn)
	if err != nil {
		return res, err
	}
	res.Window = t1.Sub(t0)
	res.Bytes = bytes1 - bytes0
	res.Goodput = float64(res.Bytes) * 8 / res.Window.Seconds()
	if res.Rate > 0 {
		res.Utilisation = res.Goodput / float64(res.Rate)
		wire := float64(ab1.Delivered.Bytes-ab0.Delivered.Bytes) * 8 / res.Window.Seconds()
		res.WireUtilisation = wire / float64(res.Rate)
	}
	res.Retransmits = info.Total_retrans
	res.SegmentsOut = info.Segs_out
	res.RTT = time.Duration(info.Rtt) * time.Microsecond
	res.MinRTT = time.Duration(info.Min_rtt) * time.Microsecond

	// Closing the sender ends the writer; the receiver ends when the
	// deferred close of its connection runs.
	sconn.Close()
	return res, nil
}

// sleepCtx waits until the instant at, or returns ctx's error if it ends
// first. The wait is the measurement window itself, not a wait for an event.
func sleepCtx(ctx context.Context, at time.Time) error {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tcpInfo reads TCP_INFO from a connection's socket.
func tcpInfo(c *net.TCPConn) (*unix.TCPInfo, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var info *unix.TCPInfo
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil {
		return nil, err
	}
	if ierr != nil {
		return nil, fmt.Errorf("kernel: TCP_INFO: %w", ierr)
	}
	return info, nil
}

// sockoptString reads a string socket option of level IPPROTO_TCP.
func sockoptString(c *net.TCPConn, opt int) (string, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var s string
	var serr error
	if err := rc.Control(func(fd uintptr) {
		s, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, opt)
	}); err != nil {
		return "", err
	}
	if serr != nil {
		return "", fmt.Errorf("kernel: getsockopt: %w", serr)
	}
	return s, nil
}
