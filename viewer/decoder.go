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
	// SSIM is the same picture's structural similarity to the captured
	// one, luma, 0 to 1 (yuv.SSIM); meaningful only where PSNR is set.
	SSIM float64
	// NeedKeyframe: the decoder cannot go on correctly without a keyframe
	// (a frame before this one never reached it).
	NeedKeyframe bool
}

// decodeLoop is the decoder model: one frame at a time, each costing a
// duration drawn from Config.Decode, in the order the viewer's policy
// (Config.Policy, the chain) releases them as they arrive. The chain says
// which frames are late or superseded, which are decoded onto a damaged
// picture, and when to ask the agent for a repair.
func (v *Viewer) decodeLoop(ctx context.Context, cost *dist.Sampler) {
	for {
		f, ok := v.decodeQueue.pop(ctx)
		if !ok {
			return
		}
		var s step
		if f.lost {
			s = v.chain.broke(f.h.Seq)
		} else {
			s = v.chain.arrived(f)
		}
		for _, d := range s.drops {
			v.drop(d.seq, d.reason)
		}
		v.ask(s.ask)
		for _, d := range s.decode {
			if !v.decode(ctx, d, cost) {
				return
			}
		}
	}
}

// decode decodes one frame the chain released and hands it to the
// display; false when the session ended meanwhile.
func (v *Viewer) decode(ctx context.Context, d decodeStep, cost *dist.Sampler) bool {
	f := d.f
	start := time.Now()
	v.cfg.Recorder.Update(f.h.Seq, func(g *groundtruth.Frame) { g.DecodeStart = start })
	if !sleep(ctx, cost.Next()) {
		return false
	}
	done := time.Now()
	var shown Decoded
	if dec := v.cfg.Decoder; dec != nil {
		var err error
		if shown, err = dec.Decode(f.h.Seq, f.payload); err != nil || shown.NeedKeyframe {
			v.ask(v.repair())
		}
		f.payload = nil
	}
	v.cfg.Recorder.Update(f.h.Seq, func(g *groundtruth.Frame) {
		g.Decoded, g.PSNR, g.SSIM = done, shown.PSNR, shown.SSIM
		g.Damaged, g.DamageAge = d.damaged, d.age
	})
	v.counters.add(func(c *Counters) {
		c.Decoded++
		if d.damaged {
			c.Damaged++
		}
	})
	v.screen.decoded(f)
	return true
}

// repair is the repair the policy asks for when a frame cannot be decoded
// whole.
func (v *Viewer) repair() ask {
	if v.chain.policy == PolicyRefresh {
		return askRefresh
	}
	return askKeyframe
}

// ask sends the repair the chain asked for, if any.
func (v *Viewer) ask(a ask) {
	switch a {
	case askKeyframe:
		v.requestKeyframe()
	case askRefresh:
		v.requestRefresh()
	}
}
