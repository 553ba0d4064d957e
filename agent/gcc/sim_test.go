package gcc_test

import (
	"math"
	"sort"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/gcc"
)

// The controller is what the agent expects.
var (
	_ agent.Controller    = (*gcc.GCC)(nil)
	_ agent.FrameObserver = (*gcc.GCC)(nil)
	_ agent.LossObserver  = (*gcc.GCC)(nil)
)

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// viewerSkew: the viewer's clock, on which arrivals are stamped, is far
// from the agent's; only differences of arrivals may matter.
const viewerSkew = 3*time.Hour - 987654321*time.Nanosecond

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// path is a one-way bottleneck: a FIFO link of capacity(t) bits per second
// (0: unlimited) and a fixed propagation delay, plus extra delay per frame.
type path struct {
	capacity func(t time.Duration) float64
	prop     time.Duration
	extra    func(i int) time.Duration
	back     time.Duration // acknowledgement's way back
}

type ack struct {
	at            time.Time // agent's time the ack reaches it
	seq           uint64
	bytes         int
	sent, arrived time.Time
}

// sim sends one frame every 1/fps, sized by the controller's current
// bitrate (an encoder that hits its target), through the path, and feeds
// acknowledgements back in the order they reach the agent.
type sim struct {
	g       *gcc.GCC
	p       path
	fps     float64
	now     time.Time
	free    time.Time // when the bottleneck is free
	seq     uint64
	pending []ack
	// sent bytes at each send, for checks
	trace []point
}

type point struct {
	at      time.Duration
	bitrate int64
}

func newSim(g *gcc.GCC, p path) *sim {
	if p.back == 0 {
		p.back = ms(20)
	}
	return &sim{g: g, p: p, fps: 30, now: t0, free: t0}
}

// run advances for d, a frame at a time.
func (s *sim) run(d time.Duration) {
	end := s.now.Add(d)
	interval := time.Duration(float64(time.Second) / s.fps)
	for s.now.Before(end) {
		s.now = s.now.Add(interval)
		s.deliver()
		b := s.g.Bitrate(s.now)
		s.trace = append(s.trace, point{s.now.Sub(t0), b})
		bytes := int(float64(b) / s.fps / 8)
		s.seq++
		s.g.FrameSent(s.now, s.seq, bytes)
		start := s.now
		if s.free.After(start) {
			start = s.free
		}
		done := start
		if c := s.p.capacity(s.now.Sub(t0)); c > 0 {
			done = start.Add(time.Duration(float64(bytes*8) / c * float64(time.Second)))
		}
		s.free = done
		arr := done.Add(s.p.prop)
		if s.p.extra != nil {
			arr = arr.Add(s.p.extra(int(s.seq)))
		}
		s.pending = append(s.pending, ack{arr.Add(s.p.back), s.seq, bytes, s.now, arr.Add(viewerSkew)})
	}
}

func (s *sim) deliver() {
	sort.SliceStable(s.pending, func(i, j int) bool { return s.pending[i].at.Before(s.pending[j].at) })
	for len(s.pending) > 0 && !s.pending[0].at.After(s.now) {
		a := s.pending[0]
		s.pending = s.pending[1:]
		s.g.FrameAcked(a.at, a.seq, a.bytes, a.sent, a.arrived)
	}
}

// bitrateAt is the target at (or just before) t from the start.
func (s *sim) bitrateAt(t time.Duration) int64 {
	i := sort.Search(len(s.trace), func(i int) bool { return s.trace[i].at > t })
	return s.trace[max(i-1, 0)].bitrate
}

func unlimited(time.Duration) float64 { return 0 }

// golden is a deterministic sequence equidistributed in [0, 1).
func golden(i int) float64 {
	f := float64(i) * 0.6180339887498949
	return f - math.Floor(f)
}
