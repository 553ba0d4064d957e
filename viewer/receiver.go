package viewer

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
)

// Stream error codes the viewer cancels frame streams with.
const (
	// codeBadFrame: the header did not parse; the rest of the stream is
	// worthless.
	codeBadFrame quic.StreamErrorCode = 1
	// codeSessionEnd: the viewer is stopping.
	codeSessionEnd quic.StreamErrorCode = 2
)

// frame is a frame on its way through the viewer.
type frame struct {
	h     wire.FrameHeader
	bytes int // header and payload
	// payload is the frame's bitstream, kept only for a real decoder.
	payload []byte
	// arrived is the true instant the last byte was read; arrivedLocal
	// the same on the viewer's clock, for the network part (N12).
	arrived, arrivedLocal time.Time
	// lost marks no frame but the news that h.Seq's stream broke (Seq 0:
	// a frame whose header never parsed), for the decoder's chain.
	lost bool
}

// acceptFrames accepts the agent's frame streams, one goroutine each, until
// the session ends; it returns after every one of them has.
func (v *Viewer) acceptFrames(ctx context.Context, conn *quic.Conn) {
	var streams sync.WaitGroup
	defer streams.Wait()
	for {
		s, err := conn.AcceptUniStream(ctx)
		if err != nil {
			if ctx.Err() == nil {
				v.stop(err)
			}
			return
		}
		streams.Go(func() { v.receive(ctx, s) })
	}
}

// receive reads one frame: header, then exactly Payload bytes. A header
// that does not parse is a corrupt frame; a stream that ends or is reset
// before the whole frame is a truncated one. Either is dropped, counted, and
// passed to the decoder's chain, which asks for the repair its policy
// makes: the frames that follow it refer to an image the decoder never
// had. The session goes on.
func (v *Viewer) receive(ctx context.Context, s *quic.ReceiveStream) {
	// Reads do not take a context: cancelling the stream is what unblocks
	// them when the session ends.
	stop := context.AfterFunc(ctx, func() { s.CancelRead(codeSessionEnd) })
	defer stop()

	var hb [wire.FrameHeaderSize]byte
	n, err := io.ReadFull(s, hb[:])
	v.counters.add(func(c *Counters) { c.Bytes += int64(n) })
	if err != nil {
		v.broken(0, err)
		return
	}
	h, err := wire.ParseFrameHeader(hb[:])
	if err != nil {
		s.CancelRead(codeBadFrame)
		v.drop(0, ReasonCorrupt)
		v.decodeQueue.push(&frame{lost: true})
		return
	}
	var payload []byte
	var m int64
	if v.cfg.Decoder != nil {
		// A real decoder needs the bitstream itself.
		payload = make([]byte, h.Payload)
		var k int
		k, err = io.ReadFull(s, payload)
		m = int64(k)
	} else {
		m, err = io.CopyN(io.Discard, s, int64(h.Payload))
	}
	v.counters.add(func(c *Counters) { c.Bytes += m })
	if err != nil {
		v.broken(h.Seq, err)
		return
	}

	now := time.Now()
	f := &frame{h: h, bytes: wire.FrameHeaderSize + int(h.Payload), payload: payload, arrived: now, arrivedLocal: v.clock.At(now)}
	v.counters.add(func(c *Counters) { c.Received++ })
	v.cfg.Recorder.Update(h.Seq, func(g *groundtruth.Frame) { g.Arrived = now })
	if h.Keyframe() || h.RefreshBegin() {
		v.keyframeArrived()
	}
	// The ack releases the frame's bytes from the agent's send cap (N8):
	// it goes as soon as the frame is here, whatever the display does.
	v.send(&wire.Ack{Seq: h.Seq, Bytes: uint32(f.bytes), Arrived: f.arrivedLocal})
	v.decodeQueue.push(f)

	// Read on to the end of the stream: quic-go lets the agent open a new
	// stream in this one's place only once the FIN has been read. Bytes
	// past the payload are the agent's bug and are ignored.
	extra, _ := io.Copy(io.Discard, s)
	v.counters.add(func(c *Counters) { c.Bytes += extra })
}

// broken handles a frame whose stream failed after seq's header (seq 0:
// before it). The stream's own end or reset truncates the frame; the
// session ending (our cancel, the connection closing) is nobody's frame.
func (v *Viewer) broken(seq uint64, err error) {
	var se *quic.StreamError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
	case errors.As(err, &se) && se.Remote:
	default:
		return
	}
	v.drop(seq, ReasonTruncated)
	f := &frame{lost: true}
	f.h.Seq = seq
	v.decodeQueue.push(f)
}
