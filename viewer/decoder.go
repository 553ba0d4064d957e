package viewer

import (
	"context"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
)

// frameQueue hands frames from the receiving goroutines to the decoder, in
// arrival order. It is unbounded on purpose: the decoder model must show
// what happens when decoding falls behind, not hide it behind a drop.
type frameQueue struct {
	mu    sync.Mutex
	items []*frame
	wake  chan struct{} // one pending wake-up is enough: pop rechecks
}

func newFrameQueue() *frameQueue { return &frameQueue{wake: make(chan struct{}, 1)} }

func (q *frameQueue) push(f *frame) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop waits for the oldest frame; false when ctx ends.
func (q *frameQueue) pop(ctx context.Context) (*frame, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			f := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			q.mu.Unlock()
			return f, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// FrameDecoder is a real decoder the decoder model drives (Config.Decoder).
type FrameDecoder interface {
	// Decode decodes one frame's payload and judges the picture shown
	// after it.
	Decode(seq uint64, payload []byte) (Decoded, error)
}

// Decoded is what a real decoder made of a frame.
type Decoded struct {
	// PSNR is the quality shown: the picture on the screen after this
	// frame against the picture the agent captured for it, in dB
	// (yuv.PSNR); 0 when it could not be judged.
	PSNR float64
	// NeedKeyframe: the decoder cannot go on correctly without a keyframe
	// (a frame before this one never reached it).
	NeedKeyframe bool
}

// decodeLoop is the decoder model: one frame at a time, in arrival order,
// each costing a duration drawn from Config.Decode. With the N8 fix, a frame
// older than one already decoded is dropped ("late") instead of decoded:
// frames travel on separate streams and can arrive out of order, and showing
// an older image after a newer one would step the picture back in time.
func (v *Viewer) decodeLoop(ctx context.Context, cost *dist.Sampler) {
	var newest uint64 // the highest sequence number decoded
	for {
		f, ok := v.decodeQueue.pop(ctx)
		if !ok {
			return
		}
		if !v.cfg.OldShowEveryFrame && f.h.Seq <= newest {
			v.drop(f.h.Seq, ReasonLate)
			continue
		}
		start := time.Now()
		v.cfg.Recorder.Update(f.h.Seq, func(g *groundtruth.Frame) { g.DecodeStart = start })
		if !sleep(ctx, cost.Next()) {
			return
		}
		done := time.Now()
		var shown Decoded
		if dec := v.cfg.Decoder; dec != nil {
			var err error
			if shown, err = dec.Decode(f.h.Seq, f.payload); err != nil || shown.NeedKeyframe {
				v.requestKeyframe()
			}
			f.payload = nil
		}
		v.cfg.Recorder.Update(f.h.Seq, func(g *groundtruth.Frame) { g.Decoded, g.PSNR = done, shown.PSNR })
		v.counters.add(func(c *Counters) { c.Decoded++ })
		newest = max(newest, f.h.Seq)
		v.screen.decoded(f)
	}
}
