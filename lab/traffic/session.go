package traffic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/viewer"
)

// runSessionFlow runs a session or reverse-media flow: the lab's own
// agent and viewer, as lab.RunSessionContext wires them, over QUIC between
// agentConn and viewerConn, from the handshake until ctx ends. Its
// instants count from zero, the session's, so a flow's screen timeline
// and controller steps are the scenario's instants; its clocks are true.
// It returns the ground truth of its frames; each frame's bytes go to
// meter as it arrives, so the flow's throughput can be read while it runs.
func runSessionFlow(ctx context.Context, f Flow, seed uint64, agentConn, viewerConn net.PacketConn, zero time.Time, keyLog io.Writer, meter *flows.Meter) (_ []groundtruth.Frame, err error) {
	defer agentConn.Close()
	defer viewerConn.Close()
	pair, err := quicpair.OpenKeyLog(ctx, agentConn, viewerConn, nil, nil, keyLog)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil // stopped before it connected
		}
		return nil, fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	defer pair.Close()
	rec := groundtruth.NewObserved(arrivals{meter})
	scfg := screen.Config{Timeline: []screen.Phase{{Source: screen.Animation{}}}}
	if f.Screen != nil {
		scfg = *f.Screen
	}
	// Its own screen: the same models drawn from the flow's sources.
	scfg.Name = "traffic/" + f.Name + "/screen"
	scr, err := screen.New(seed, scfg)
	if err != nil {
		return nil, fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	acfg := f.Agent
	acfg.Seed, acfg.Recorder, acfg.Screen = seed, rec, scr
	acfg.Clock = clock.New(0, 0, zero)
	acfg.Capture.Epoch = zero
	if acfg.Controller == nil {
		acfg.Controller = agent.Fixed{Bps: agent.DefaultBitrate}
	}
	if st, ok := acfg.Controller.(*agent.Steps); ok && st.Start.IsZero() {
		st.Start = zero // steps at the scenario's instants
	}
	ag, err := agent.New(acfg)
	if err != nil {
		return nil, fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	vcfg := f.Viewer
	vcfg.Seed, vcfg.Recorder = seed, rec
	vcfg.Clock = clock.New(0, 0, zero)
	vw, err := viewer.New(vcfg)
	if err != nil {
		return nil, fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	var wg sync.WaitGroup
	var agentErr, viewerErr error
	wg.Go(func() { agentErr = ag.Run(ctx, pair.Server) })
	wg.Go(func() { viewerErr = vw.Run(ctx, pair.Client) })
	wg.Wait()
	if err := errors.Join(agentErr, viewerErr); err != nil && ctx.Err() == nil {
		return rec.Frames(), fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	return rec.Frames(), nil
}

// arrivals counts a session flow's frames in its meter as they arrive
// (a groundtruth.Observer).
type arrivals struct{ meter *flows.Meter }

// FrameChanged implements groundtruth.Observer: a frame counts at the
// update that first sets its arrival.
func (a arrivals) FrameChanged(before, after groundtruth.Frame) {
	if before.Arrived.IsZero() && !after.Arrived.IsZero() {
		a.meter.Add(after.Arrived, after.Bytes)
	}
}

// EventRecorded implements groundtruth.Observer.
func (arrivals) EventRecorded(groundtruth.Event) {}
