package agent

import (
	"context"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
)

// DefaultSendCap is the cap on bytes sent but not yet acknowledged by the
// viewer (N8: 256 KB). Beyond it the agent skips frames instead of queueing.
const DefaultSendCap = 256 << 10

// sender puts frames on the wire: one unidirectional QUIC stream per frame,
// so a lost packet of one frame never holds back the next. Each frame is
// written by its own goroutine, because a QUIC stream write blocks until
// congestion control lets the data out and the pipeline must not.
type sender struct {
	conn     *quic.Conn
	recorder *groundtruth.Recorder
	cap      int

	observer FrameObserver // nil unless the controller watches frames

	mu      sync.Mutex
	unacked int                     // bytes handed to QUIC, not yet acknowledged
	pending map[uint64]pendingFrame // until its Ack
	sent    struct{ frames, bytes int64 }
	wg      sync.WaitGroup
}

// pendingFrame is a frame sent and not yet acknowledged.
type pendingFrame struct {
	bytes int
	sent  time.Time
}

func newSender(conn *quic.Conn, rec *groundtruth.Recorder, cap int, obs FrameObserver) *sender {
	if cap <= 0 {
		cap = DefaultSendCap
	}
	return &sender{conn: conn, recorder: rec, cap: cap, observer: obs, pending: map[uint64]pendingFrame{}}
}

// full reports whether the cap is reached: the next frame must be skipped.
func (s *sender) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unacked >= s.cap
}

// unackedBytes is what the viewer has not yet acknowledged.
func (s *sender) unackedBytes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unacked
}

// send writes a frame of payload bytes after its header, on a new stream.
// data is the payload of an encoder of real pixels (h.Payload bytes); nil
// for a model's frame, whose payload stands for coded video.
func (s *sender) send(ctx context.Context, h wire.FrameHeader, data []byte) {
	total := wire.FrameHeaderSize + int(h.Payload)
	now := time.Now()
	s.mu.Lock()
	s.unacked += total
	s.pending[h.Seq] = pendingFrame{bytes: total, sent: now}
	s.sent.frames++
	s.sent.bytes += int64(total)
	s.mu.Unlock()
	s.recorder.Update(h.Seq, func(f *groundtruth.Frame) { f.Sent = now })
	if s.observer != nil {
		s.observer.FrameSent(now, h.Seq, total)
	}
	s.wg.Go(func() {
		st, err := s.conn.OpenUniStreamSync(ctx)
		if err != nil {
			s.ack(h.Seq) // never sent: no Ack will come for it
			return       // the session is ending
		}
		// A model's payload stands for coded video; its content does not
		// matter, only its size and the instants it crosses the network.
		// A real encoder's is its bitstream, which the viewer decodes.
		bp := frameBuffer(total)
		defer framePool.Put(bp)
		buf := *bp
		wire.AppendFrameHeader(buf[:0], h)
		clear(buf[wire.FrameHeaderSize+copy(buf[wire.FrameHeaderSize:], data):])
		if _, err := st.Write(buf); err != nil {
			st.CancelWrite(0)
			s.ack(h.Seq) // the viewer drops a reset frame without an Ack
			return
		}
		st.Close()
	})
}

// framePool recycles the buffers frames are written from: at 64 Mbit/s a
// session writes about 160 MB of frames, which as fresh buffers kept the
// garbage collector running for a fifth of the session's CPU. A stream's
// Write copies what it sends (quic-go keeps no reference once it returns),
// so a buffer is free again when its frame's Write has returned.
var framePool sync.Pool

// frameBuffer returns a pooled buffer of n bytes (its contents are
// whatever the last frame left: the caller writes all of it).
func frameBuffer(n int) *[]byte {
	bp, _ := framePool.Get().(*[]byte)
	if bp == nil || cap(*bp) < n {
		b := make([]byte, n)
		return &b
	}
	*bp = (*bp)[:n]
	return bp
}

// ack releases a frame's bytes from the cap and returns what was pending.
func (s *sender) ack(seq uint64) (pendingFrame, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.pending[seq]
	if ok {
		s.unacked -= f.bytes
		delete(s.pending, seq)
	}
	return f, ok
}

// wait waits for every frame's goroutine.
func (s *sender) wait() { s.wg.Wait() }
