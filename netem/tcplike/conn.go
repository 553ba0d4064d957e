package tcplike

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/netem"
)

// Server sends what clients ask for: each connection's request names a
// number of bytes (0: as many as the path takes, until the server
// closes), sent under the server's congestion controller. It owns its
// PacketConn.
type Server struct {
	conn net.PacketConn
	cfg  Config
	wg   sync.WaitGroup

	mu      sync.Mutex
	conns   map[connKey]*serverConn
	stats   SenderStats
	scratch []byte
	closed  bool
	ecn     netem.ECN // what the conn's datagrams now carry
}

// ecnWriter is a PacketConn that sets the ECN field of what it sends.
type ecnWriter interface{ SetECN(netem.ECN) }

// ecnReader is a PacketConn that reports the ECN field of what it reads.
type ecnReader interface {
	ReadFromECN(b []byte) (int, net.Addr, netem.ECN, error)
}

type connKey struct {
	peer string
	id   uint32
}

// serverConn is one client connection as the server sees it.
type serverConn struct {
	peer   net.Addr
	id     uint32
	sender *sender // nil until the request came
}

// Serve starts serving on conn, which the Server then owns (Close closes
// it).
func Serve(conn net.PacketConn, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{conn: conn, cfg: cfg, conns: map[connKey]*serverConn{}}
	s.wg.Go(s.read)
	return s, nil
}

// Close stops every connection, closes the PacketConn and waits for the
// server's goroutine.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		if c.sender != nil {
			c.sender.finish()
		}
	}
	s.mu.Unlock()
	err := s.conn.Close()
	s.wg.Wait()
	return err
}

// Stats returns what the server's senders did so far.
func (s *Server) Stats() SenderStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// locked runs f under the server's lock, unless it is closed.
func (s *Server) locked(f func(now time.Time)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		f(time.Now())
	}
}

// write sends a segment to the connection's peer, padded to size. A
// failed write is a lost segment: the sender's timer recovers it, as
// TCP's would.
func (s *Server) write(c *serverConn, seg segment, size int) {
	if w, ok := s.conn.(ecnWriter); ok {
		want := netem.NotECT
		if seg.typ == typeData {
			switch s.cfg.ECN {
			case ECNClassic:
				want = netem.ECT0
			case ECNL4S:
				want = netem.ECT1
			}
		}
		if want != s.ecn {
			w.SetECN(want)
			s.ecn = want
		}
	}
	s.scratch = seg.encode(s.scratch, size)
	_, _ = s.conn.WriteTo(s.scratch, c.peer)
}

func (s *Server) read() {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		seg, ok := decode(buf[:n])
		if !ok {
			continue
		}
		s.locked(func(now time.Time) { s.handle(now, from, seg) })
	}
}

func (s *Server) handle(now time.Time, from net.Addr, seg segment) {
	key := connKey{from.String(), seg.conn}
	c := s.conns[key]
	switch seg.typ {
	case typeSYN:
		if c == nil {
			// A client fetches one object at a time: its earlier
			// connections are over.
			for k, old := range s.conns {
				if k.peer == key.peer {
					if old.sender != nil {
						old.sender.finish()
					}
					delete(s.conns, k)
				}
			}
			c = &serverConn{peer: from, id: seg.conn}
			s.conns[key] = c
		}
		// The SYN-ACK carries the server's clock, which the request
		// echoes: the first round trip measured.
		s.write(c, segment{typ: typeSYNACK, conn: c.id, ts: now.UnixNano()}, synBytes)
	case typeReq:
		if c == nil || c.sender != nil {
			return
		}
		c.sender = newSender(s, c, seg.seq)
		if seg.ts > 0 {
			// The handshake's round trip is the first sample, as TCP
			// takes it from the SYN-ACK.
			c.sender.sample(time.Duration(now.UnixNano() - seg.ts))
		}
		c.sender.transmit(now)
	case typeAck:
		if c != nil && c.sender != nil {
			c.sender.onAck(now, seg)
		}
	}
}

// Client fetches from servers, one connection at a time. It owns its
// PacketConn.
type Client struct {
	// AckEverySegment turns delayed acknowledgements off: every segment
	// is acknowledged at once, as the model did before it had them (and
	// as Linux does with quickack set on the route). Set it before the
	// first Fetch. The model's sender does not pace, so an
	// acknowledgement of two segments sends two back to back: behind a
	// marking step shorter than two packets' serialisation (DualPI2's
	// 1 ms at 10 Mbit/s) the second of each pair is marked
	// (TestDualPI2L4SFlowBesideAClassicFlow).
	AckEverySegment bool

	conn net.PacketConn
	wg   sync.WaitGroup

	mu      sync.Mutex
	nextID  uint32
	fetches map[uint32]*fetch
	scratch []byte
	closed  bool
}

// NewClient starts a client on conn, which it then owns (Close closes
// it).
func NewClient(conn net.PacketConn) *Client {
	c := &Client{conn: conn, fetches: map[uint32]*fetch{}}
	c.wg.Go(c.read)
	return c
}

// Close ends every fetch, closes the PacketConn and waits for the
// client's goroutine.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	for _, f := range c.fetches {
		f.stop()
	}
	c.mu.Unlock()
	err := c.conn.Close()
	c.wg.Wait()
	return err
}

// FetchResult is what one fetch measured.
type FetchResult struct {
	// Bytes is the payload delivered in order.
	Bytes int64
	// Started is when the SYN left, FirstByte when the first payload
	// arrived in order and Done when the last did (zero when it did not).
	Started, FirstByte, Done time.Time
	// Marked counts the data segments that arrived CE-marked.
	Marked int64
}

// fetch is one connection as the client sees it.
type fetch struct {
	c      *Client
	id     uint32
	server net.Addr
	size   int64
	total  int64 // segments; -1 unbounded
	// delivered is called with the payload's bytes as they arrive in
	// order, under the client's lock.
	delivered func(now time.Time, n int)

	expected int64      // the next segment in order
	ranges   [][2]int64 // received above expected, sorted, disjoint
	// Delayed acknowledgements: unacked counts the segments received in
	// order since the last ACK, ackTS is the first one's timestamp (the
	// one the ACK echoes), quick the ACKs still sent at once; ackTimer
	// sends a held ACK after DelayedAck, ackGen tells its expiry from an
	// older timer's.
	unacked  int
	ackTS    int64
	quick    int
	ackTimer *time.Timer
	ackGen   int
	res      FetchResult
	echo     int64 // the server's clock from the SYN-ACK, echoed
	state    int   // fetchSYN, fetchReq, fetchData
	timer    *time.Timer
	backoff  int
	done     chan struct{}
	finished bool
}

const (
	fetchSYN = iota
	fetchReq
	fetchData
)

// Fetch asks server for size bytes (0: as many as it sends, until ctx
// ends) over a new connection and returns once they all arrived, or when
// ctx ends, with what arrived by then. delivered, when not nil, is called
// with the bytes delivered in order as they arrive (from the client's
// goroutine, briefly: it holds the client's lock).
func (c *Client) Fetch(ctx context.Context, server net.Addr, size int64, delivered func(now time.Time, n int)) (FetchResult, error) {
	if size < 0 {
		return FetchResult{}, fmt.Errorf("tcplike: fetch of %d bytes", size)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return FetchResult{}, net.ErrClosed
	}
	c.nextID++
	f := &fetch{c: c, id: c.nextID, server: server, size: size, total: -1, delivered: delivered, done: make(chan struct{}), quick: maxQuickAcks}
	if size > 0 {
		f.total = (size + MSS - 1) / MSS
	}
	// Earlier connections are over: their late segments find no fetch
	// now (until then a finished fetch still acknowledges them).
	for id, old := range c.fetches {
		old.stop()
		delete(c.fetches, id)
	}
	c.fetches[f.id] = f
	now := time.Now()
	f.res.Started = now
	f.sendSYN(now)
	c.mu.Unlock()

	var err error
	select {
	case <-f.done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	res := f.res
	if err != nil {
		f.stop()
	}
	return res, err
}

func (c *Client) write(to net.Addr, seg segment, size int) {
	c.scratch = seg.encode(c.scratch, size)
	_, _ = c.conn.WriteTo(c.scratch, to)
}

func (f *fetch) sendSYN(now time.Time) {
	f.c.write(f.server, segment{typ: typeSYN, conn: f.id, ts: now.UnixNano()}, synBytes)
	f.retryIn()
}

func (f *fetch) sendReq() {
	f.c.write(f.server, segment{typ: typeReq, conn: f.id, seq: f.size, ts: f.echo}, requestBytes)
	f.retryIn()
}

// retryIn arms the handshake's retransmission: 1 s, doubling (RFC 6298).
func (f *fetch) retryIn() {
	if f.timer != nil {
		f.timer.Stop()
	}
	d := min(maxRTO, initialRTO<<f.backoff)
	f.backoff = min(f.backoff+1, 10)
	f.timer = time.AfterFunc(d, func() {
		f.c.mu.Lock()
		defer f.c.mu.Unlock()
		if f.c.closed || f.finished {
			return
		}
		switch f.state {
		case fetchSYN:
			f.sendSYN(time.Now())
		case fetchReq:
			// The request's first data is late: the request, or every
			// segment sent for it, was lost.
			f.sendReq()
		}
	})
}

func (f *fetch) stop() {
	if f.timer != nil {
		f.timer.Stop()
	}
	if f.ackTimer != nil {
		f.ackTimer.Stop()
		f.ackTimer = nil
		f.ackGen++
	}
	if !f.finished {
		f.finished = true
		close(f.done)
	}
}

func (c *Client) read() {
	buf := make([]byte, 64<<10)
	readECN, _ := c.conn.(ecnReader)
	for {
		var n int
		var err error
		ecn := netem.NotECT
		if readECN != nil {
			n, _, ecn, err = readECN.ReadFromECN(buf)
		} else {
			n, _, err = c.conn.ReadFrom(buf)
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		seg, ok := decode(buf[:n])
		if !ok {
			continue
		}
		c.mu.Lock()
		if f := c.fetches[seg.conn]; f != nil && !c.closed {
			f.handle(time.Now(), seg, ecn == netem.CE)
		}
		c.mu.Unlock()
	}
}

func (f *fetch) handle(now time.Time, seg segment, ce bool) {
	switch seg.typ {
	case typeSYNACK:
		if f.state == fetchSYN {
			f.state, f.backoff = fetchReq, 0
		}
		if f.state == fetchReq {
			f.echo = seg.ts
			f.sendReq()
		}
	case typeData:
		if f.state != fetchData {
			f.state = fetchData
			if f.timer != nil {
				f.timer.Stop()
			}
		}
		f.data(now, seg, ce)
	}
}

// Delayed acknowledgements, as Linux's receiver sends them (RFC 1122
// 4.2.3.2, RFC 5681 4.2).
const (
	// DelayedAck is how long an ACK for a single segment is held:
	// Linux's delayed-ACK timeout for a bulk receiver, TCP_ATO_MIN
	// (segments arriving closer together than it keep it there).
	DelayedAck = 40 * time.Millisecond
	// ackEvery: an ACK goes out once this many segments arrived in order
	// since the last one (Linux's: more than one full-sized segment).
	ackEvery = 2
	// maxQuickAcks: a connection's first segments, and those after a
	// duplicate, are acknowledged at once (Linux's quick-ACK mode,
	// TCP_MAX_QUICKACKS).
	maxQuickAcks = 16
)

// data takes a data segment and acknowledges it, with the SACK blocks of
// what arrived above the hole: the block holding this segment first, then
// the highest others (RFC 2018). A segment in order with no hole is
// acknowledged with the next one, or after DelayedAck; one out of order,
// one that fills a hole, a duplicate, the quick ACKs and the fetch's last
// segment at once. ce says the segment arrived CE-marked: it is
// acknowledged at once, and its acknowledgement echoes it (flagECE), so
// that each echo stands for one marked segment (a DCTCP receiver's
// immediate ACK on a change of the CE state, RFC 8257 3.2).
func (f *fetch) data(now time.Time, seg segment, ce bool) {
	n := seg.seq
	if f.total >= 0 && n >= f.total {
		return
	}
	var first int = -1
	atOnce := false // acknowledge at once
	switch {
	case n == f.expected:
		got := int64(seg.length)
		f.expected++
		// A segment that fills (part of) a hole.
		atOnce = len(f.ranges) > 0
		for len(f.ranges) > 0 && f.ranges[0][0] == f.expected {
			// The hole is filled: everything up to the range's end
			// arrives in order now.
			got += (f.ranges[0][1] - f.ranges[0][0]) * MSS
			if f.total >= 0 && f.ranges[0][1] == f.total {
				got += int64(f.lastPayload()) - MSS
			}
			f.expected = f.ranges[0][1]
			f.ranges = f.ranges[1:]
		}
		f.deliver(now, got)
	case n > f.expected:
		first = f.insert(n)
		atOnce = true
	default:
		// A duplicate: the sender retransmitted what arrived.
		atOnce = true
		f.quick = maxQuickAcks
	}
	if f.unacked == 0 {
		f.ackTS = seg.ts
	}
	f.unacked++
	if ce {
		f.res.Marked++
		atOnce = true
	}
	if f.c.AckEverySegment {
		atOnce = true
	}
	last := f.total >= 0 && f.expected >= f.total
	if atOnce || last || f.quick > 0 || f.unacked >= ackEvery {
		f.quick = max(0, f.quick-f.unacked)
		f.ack(first, ce)
	} else if f.ackTimer == nil {
		f.ackGen++
		gen := f.ackGen
		f.ackTimer = time.AfterFunc(DelayedAck, func() {
			f.c.mu.Lock()
			defer f.c.mu.Unlock()
			if f.c.closed || gen != f.ackGen || f.unacked == 0 {
				return
			}
			f.ack(-1, false)
		})
	}
	if last && !f.finished {
		f.res.Done = now
		f.stop()
	}
}

// ack sends the acknowledgement of what arrived, with the SACK block at
// index first (-1: none) before the highest others, echoing the timestamp
// of the first segment it acknowledges, and ECE when ece (a CE-marked
// segment's acknowledgement), and cancels a held one.
func (f *fetch) ack(first int, ece bool) {
	blocks := make([][2]int64, 0, maxSACK)
	if first >= 0 {
		blocks = append(blocks, f.ranges[first])
	}
	for i := len(f.ranges) - 1; i >= 0 && len(blocks) < maxSACK; i-- {
		if i != first {
			blocks = append(blocks, f.ranges[i])
		}
	}
	ack := segment{typ: typeAck, conn: f.id, seq: f.expected, ts: f.ackTS, blocks: blocks}
	if ece {
		ack.flags |= flagECE
	}
	f.c.write(f.server, ack, ackSize(len(blocks)))
	f.unacked = 0
	if f.ackTimer != nil {
		f.ackTimer.Stop()
		f.ackTimer = nil
		f.ackGen++
	}
}

// lastPayload is the last segment's payload.
func (f *fetch) lastPayload() int {
	if r := int(f.size % MSS); r != 0 {
		return r
	}
	return MSS
}

// deliver counts payload that arrived in order.
func (f *fetch) deliver(now time.Time, n int64) {
	if n <= 0 {
		return
	}
	if f.res.FirstByte.IsZero() {
		f.res.FirstByte = now
	}
	f.res.Bytes += n
	if f.delivered != nil {
		f.delivered(now, int(n))
	}
}

// insert records segment n above the hole and returns the index of the
// range holding it.
func (f *fetch) insert(n int64) int {
	for i := range f.ranges {
		r := &f.ranges[i]
		switch {
		case n >= r[0] && n < r[1]:
			return i // a duplicate
		case n == r[1]:
			r[1]++
			if i+1 < len(f.ranges) && f.ranges[i+1][0] == r[1] {
				r[1] = f.ranges[i+1][1]
				f.ranges = append(f.ranges[:i+1], f.ranges[i+2:]...)
			}
			return i
		case n+1 == r[0]:
			r[0] = n
			return i
		case n < r[0]:
			f.ranges = append(f.ranges[:i], append([][2]int64{{n, n + 1}}, f.ranges[i:]...)...)
			return i
		}
	}
	f.ranges = append(f.ranges, [2]int64{n, n + 1})
	return len(f.ranges) - 1
}
