package viewer_test

import (
	"bufio"
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/viewer"
)

var (
	viewerIP = netip.MustParseAddr("10.0.0.1")
	agentIP  = netip.MustParseAddr("10.0.0.2")
)

// fps60 is a 60 Hz frame interval.
const fps60 = time.Second / 60

// plan is what the fake agent sends.
type plan struct {
	// clock is the agent's clock; nil is perfect.
	clock *clock.Clock
	// interval is the time between captures.
	interval time.Duration
	// encode is the time from capture to the end of encoding; unset is 0.
	encode dist.Duration
	// payload is each frame's payload size.
	payload int
	// broken maps a frame to what goes wrong with it: "corrupt" (bad
	// magic), "truncate" (the stream is reset halfway through the
	// payload) or "hold" (sent 50 ms late, after newer frames).
	broken map[uint64]string
}

// arrivedReport is a report with the true instant it reached the agent.
type arrivedReport struct {
	at time.Time
	r  wire.Report
}

// fakeAgent is the far end of the protocol, just enough of it to drive a
// viewer: it answers clock probes on its own clock, records what the viewer
// sends, and sends frames on a fixed schedule with given encode times. It
// writes the capture side of the ground truth.
type fakeAgent struct {
	plan plan
	conn *quic.Conn
	rec  *groundtruth.Recorder

	mu               sync.Mutex
	reports          []arrivedReport
	acks             []wire.Ack
	keyframeRequests []time.Time
	probes           int
	controlEnded     error // why the control stream's read loop ended
	wantKeyframe     bool

	frames sync.WaitGroup
}

// run serves the control stream and, once the viewer has opened it, sends
// frames until ctx ends. It returns when everything it started has ended.
func (a *fakeAgent) run(ctx context.Context) {
	st, err := a.conn.AcceptStream(ctx)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.serveControl(st) })
	wg.Go(func() { a.sendFrames(ctx) })
	<-ctx.Done()
	st.CancelRead(0)
	wg.Wait()
	a.frames.Wait()
}

func (a *fakeAgent) serveControl(st *quic.Stream) {
	r := bufio.NewReader(st)
	for {
		m, err := wire.ReadMessage(r)
		if err != nil {
			a.mu.Lock()
			a.controlEnded = err
			a.mu.Unlock()
			return
		}
		switch m := m.(type) {
		case *wire.ClockProbe:
			t2 := a.plan.clock.Now()
			a.mu.Lock()
			a.probes++
			a.mu.Unlock()
			if wire.WriteMessage(st, &wire.ClockReply{ID: m.ID, T1: m.T1, T2: t2, T3: a.plan.clock.Now()}) != nil {
				return
			}
		case *wire.Report:
			a.mu.Lock()
			a.reports = append(a.reports, arrivedReport{time.Now(), *m})
			a.mu.Unlock()
		case *wire.Ack:
			a.mu.Lock()
			a.acks = append(a.acks, *m)
			a.mu.Unlock()
		case *wire.KeyframeRequest:
			a.mu.Lock()
			a.keyframeRequests = append(a.keyframeRequests, time.Now())
			a.wantKeyframe = true
			a.mu.Unlock()
		}
	}
}

func (a *fakeAgent) sendFrames(ctx context.Context) {
	encode := a.plan.encode.Or(dist.Constant(0)).Sampler(nil)
	t := time.NewTicker(a.plan.interval)
	defer t.Stop()
	for seq := uint64(1); ; seq++ {
		captured := time.Now()
		enc := encode.Next()
		a.mu.Lock()
		key := seq == 1 || a.wantKeyframe
		a.wantKeyframe = false
		a.mu.Unlock()
		a.frames.Go(func() { a.sendFrame(ctx, seq, captured, enc, key) })
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sendFrame encodes (sleeps) and sends one frame on its own stream.
func (a *fakeAgent) sendFrame(ctx context.Context, seq uint64, captured time.Time, enc time.Duration, key bool) {
	select {
	case <-time.After(enc):
	case <-ctx.Done():
		return
	}
	encoded := time.Now()
	h := wire.FrameHeader{
		Seq: seq, Capture: a.plan.clock.At(captured), EncodeStart: a.plan.clock.At(captured),
		EncodeEnd: a.plan.clock.At(encoded), Quality: 900, Payload: uint32(a.plan.payload),
	}
	if key {
		h.Flags |= wire.FlagKeyframe
	}
	buf := wire.AppendFrameHeader(nil, h)
	buf = append(buf, make([]byte, a.plan.payload)...)
	a.rec.Update(seq, func(f *groundtruth.Frame) {
		f.Captured, f.EncodeStart, f.EncodeEnd, f.Sent = captured, captured, encoded, encoded
		f.Bytes, f.Keyframe, f.Quality = len(buf), key, 0.9
	})
	if a.plan.broken[seq] == "hold" {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
	st, err := a.conn.OpenUniStreamSync(ctx)
	if err != nil {
		return
	}
	switch a.plan.broken[seq] {
	case "corrupt":
		buf[0] = 'X'
	case "truncate":
		// Half the frame now, the reset a little later, so that the
		// header is read before the reset arrives: the viewer knows
		// which frame it lost.
		if _, err := st.Write(buf[:len(buf)/2]); err != nil {
			return
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
		}
		st.CancelWrite(7)
		return
	}
	if _, err := st.Write(buf); err != nil {
		st.CancelWrite(0)
		return
	}
	st.Close()
}

func (a *fakeAgent) snapshot() (reports []arrivedReport, acks []wire.Ack, keyframeRequests []time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]arrivedReport(nil), a.reports...), append([]wire.Ack(nil), a.acks...),
		append([]time.Time(nil), a.keyframeRequests...)
}

// session is a viewer and a fake agent over an in-memory network with a
// fixed one-way delay each way, inside a synctest bubble.
type session struct {
	t      *testing.T
	start  time.Time // true instant the network was made (the clocks' epoch)
	net    *netem.Network
	pair   *quicpair.Pair
	agent  *fakeAgent
	viewer *viewer.Viewer
	rec    *groundtruth.Recorder

	stopAgent context.CancelFunc
	agentDone chan struct{}
	stopView  context.CancelFunc
	viewDone  chan error
}

// startSession starts a session over a link with a one-way delay each way;
// down adds impairments to the agent-to-viewer direction (a bottleneck the
// video queues in). cfg.Recorder is filled in. The caller ends the session
// with close, which waits for every goroutine.
func startSession(t *testing.T, oneWay time.Duration, cfg viewer.Config, p plan, down ...netem.Impairment) *session {
	n := netem.NewNetwork(1)
	_, err := n.SetLink(viewerIP, agentIP, netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: oneWay}}})
	require.NoError(t, err)
	_, err = n.SetLink(agentIP, viewerIP, netem.LinkConfig{Impairments: append([]netem.Impairment{&netem.Delay{Delay: oneWay}}, down...)})
	require.NoError(t, err)
	s := &session{t: t, start: n.Epoch(), net: n, rec: groundtruth.New()}
	s.pair, err = quicpair.Open(context.Background(), n.MustListen("10.0.0.2:4433"), n.MustListen("10.0.0.1:5000"), nil, nil)
	require.NoError(t, err)

	cfg.Recorder = s.rec
	s.viewer, err = viewer.New(cfg)
	require.NoError(t, err)
	s.agent = &fakeAgent{plan: p, conn: s.pair.Server, rec: s.rec}

	agentCtx, stopAgent := context.WithCancel(context.Background())
	s.stopAgent, s.agentDone = stopAgent, make(chan struct{})
	go func() { defer close(s.agentDone); s.agent.run(agentCtx) }()

	viewCtx, stopView := context.WithCancel(context.Background())
	s.stopView, s.viewDone = stopView, make(chan error, 1)
	go func() { s.viewDone <- s.viewer.Run(viewCtx, s.pair.Client) }()
	return s
}

// close stops the agent, closes the connection (the viewer's Run must then
// return nil) and the network.
func (s *session) close() {
	s.stopAgent()
	<-s.agentDone
	require.NoError(s.t, s.pair.Close())
	require.NoError(s.t, <-s.viewDone)
	s.stopView()
	require.NoError(s.t, s.net.Close())
}

// displayed returns the ground truth of the frames displayed with a
// latency estimate, captured at or after from.
func (s *session) displayed(from time.Time) []groundtruth.Frame {
	var out []groundtruth.Frame
	for _, f := range s.rec.Frames() {
		if !f.Displayed.IsZero() && f.Estimated != 0 && !f.Captured.Before(from) {
			out = append(out, f)
		}
	}
	return out
}
