package netem

import (
	"io"
	"net"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/netem/internal/wait"
)

// StreamConfig is one direction of an in-memory stream connection. Its zero
// value is an instant, unlimited stream with a 256 KiB window.
type StreamConfig struct {
	// Delay is the one-way delay of every byte.
	Delay time.Duration
	// Rate serialises the bytes at this many bits per second; 0 is unlimited.
	Rate int64
	// Window is how many bytes may be written and not yet read before Write
	// blocks (the send buffer and the peer's receive window together).
	// Default 256 KiB.
	Window int
}

// streamMSS is the segment size: a written byte becomes readable when the
// segment holding it has been serialised and has crossed the delay, as with
// TCP segments on a link with no loss.
const streamMSS = 1448

// StreamPipe returns the two ends of a reliable, ordered byte stream, like a
// TCP connection on a path without loss: ab shapes what a writes to b, ba the
// reverse. The ends report aAddr and bAddr as their local addresses. Nothing
// runs in the background: arrival instants are computed when bytes are
// written and honoured when they are read, so the pipe is safe in a synctest
// bubble and needs no goroutine of its own.
func StreamPipe(ab, ba StreamConfig, aAddr, bAddr net.Addr) (a, b *StreamConn) {
	toB, toA := newStreamDir(ab), newStreamDir(ba)
	a = &StreamConn{in: toA, out: toB, local: aAddr, remote: bAddr}
	b = &StreamConn{in: toB, out: toA, local: bAddr, remote: aAddr}
	return a, b
}

// segment is written bytes on their way, readable from at.
type segment struct {
	at   time.Time
	data []byte
	fin  bool
}

// streamDir is one direction of a StreamPipe.
type streamDir struct {
	cfg StreamConfig

	mu            sync.Mutex
	changed       wait.Signal
	busyUntil     time.Time // when the serialiser is free
	inFlight      []segment // written, not yet arrived, by arrival
	flightBytes   int
	readable      []byte // arrived, not yet read
	eof           bool   // the FIN arrived
	finSent       bool   // the writer closed
	readerClosed  bool   // the reading end closed
	readDeadline  time.Time
	writeDeadline time.Time
}

func newStreamDir(cfg StreamConfig) *streamDir {
	if cfg.Window <= 0 {
		cfg.Window = 256 << 10
	}
	return &streamDir{cfg: cfg}
}

// arrive moves what has arrived by now to the readable buffer; it returns
// the instant of the next arrival (zero if none). Call with the lock held.
func (d *streamDir) arrive(now time.Time) time.Time {
	i := 0
	for ; i < len(d.inFlight) && !d.inFlight[i].at.After(now); i++ {
		s := d.inFlight[i]
		d.flightBytes -= len(s.data)
		d.readable = append(d.readable, s.data...)
		if s.fin {
			d.eof = true
		}
		d.inFlight[i] = segment{}
	}
	d.inFlight = d.inFlight[i:]
	if len(d.inFlight) == 0 {
		return time.Time{}
	}
	return d.inFlight[0].at
}

// send schedules one segment. Call with the lock held.
func (d *streamDir) send(data []byte, fin bool, now time.Time) {
	start := now
	if d.busyUntil.After(start) {
		start = d.busyUntil
	}
	end := start
	if d.cfg.Rate > 0 {
		end = start.Add(time.Duration(int64(len(data)) * 8 * int64(time.Second) / d.cfg.Rate))
	}
	d.busyUntil = end
	d.inFlight = append(d.inFlight, segment{at: end.Add(d.cfg.Delay), data: data, fin: fin})
	d.flightBytes += len(data)
}

// earlier returns the earlier of two instants, a zero one meaning never.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// StreamConn is one end of a StreamPipe: a net.Conn with deadlines that wake
// blocked calls, os.ErrDeadlineExceeded, net.ErrClosed and io.EOF after the
// peer closed and every byte was read.
type StreamConn struct {
	in, out       *streamDir
	local, remote net.Addr

	closeOnce sync.Once
	closed    chan struct{}
}

var _ net.Conn = (*StreamConn)(nil)

func (c *StreamConn) isClosed() bool {
	select {
	case <-c.closedCh():
		return true
	default:
		return false
	}
}

func (c *StreamConn) closedCh() chan struct{} {
	c.closeOnce.Do(func() { c.closed = make(chan struct{}) })
	return c.closed
}

// Read implements net.Conn.
func (c *StreamConn) Read(b []byte) (int, error) {
	d := c.in
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		if c.isClosed() {
			return 0, c.opError("read", net.ErrClosed)
		}
		next := d.arrive(time.Now())
		if len(d.readable) > 0 {
			n := copy(b, d.readable)
			d.readable = d.readable[n:]
			d.changed.Broadcast() // the window opened
			return n, nil
		}
		if d.eof {
			return 0, io.EOF
		}
		if wait.Passed(d.readDeadline) {
			return 0, c.opError("read", errTimeout)
		}
		changed := d.changed.Wait()
		wake := earlier(d.readDeadline, next)
		d.mu.Unlock()
		wait.Until(changed, wake)
		d.mu.Lock()
	}
}

// Write implements net.Conn. It blocks while the window is full.
func (c *StreamConn) Write(b []byte) (int, error) {
	d := c.out
	d.mu.Lock()
	defer d.mu.Unlock()
	written := 0
	for written < len(b) {
		if c.isClosed() || d.finSent {
			return written, c.opError("write", net.ErrClosed)
		}
		if d.readerClosed {
			return written, c.opError("write", io.ErrClosedPipe)
		}
		if wait.Passed(d.writeDeadline) {
			return written, c.opError("write", errTimeout)
		}
		now := time.Now()
		next := d.arrive(now)
		room := d.cfg.Window - d.flightBytes - len(d.readable)
		if room <= 0 {
			changed := d.changed.Wait()
			wake := earlier(d.writeDeadline, next)
			d.mu.Unlock()
			wait.Until(changed, wake)
			d.mu.Lock()
			continue
		}
		n := min(room, streamMSS, len(b)-written)
		d.send(append([]byte(nil), b[written:written+n]...), false, now)
		written += n
		d.changed.Broadcast()
	}
	return written, nil
}

// Close implements net.Conn: the peer reads what was written, then io.EOF;
// blocked calls on this end return net.ErrClosed.
func (c *StreamConn) Close() error {
	if c.isClosed() {
		return c.opError("close", net.ErrClosed)
	}
	close(c.closedCh())
	c.out.mu.Lock()
	if !c.out.finSent {
		c.out.finSent = true
		c.out.send(nil, true, time.Now())
	}
	c.out.changed.Broadcast()
	c.out.mu.Unlock()
	c.in.mu.Lock()
	c.in.readerClosed = true
	c.in.changed.Broadcast()
	c.in.mu.Unlock()
	return nil
}

// LocalAddr implements net.Conn.
func (c *StreamConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr implements net.Conn.
func (c *StreamConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline implements net.Conn.
func (c *StreamConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

// SetReadDeadline implements net.Conn; it wakes a blocked Read.
func (c *StreamConn) SetReadDeadline(t time.Time) error {
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	c.in.readDeadline = t
	c.in.changed.Broadcast()
	return nil
}

// SetWriteDeadline implements net.Conn; it wakes a blocked Write.
func (c *StreamConn) SetWriteDeadline(t time.Time) error {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	c.out.writeDeadline = t
	c.out.changed.Broadcast()
	return nil
}

func (c *StreamConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}
