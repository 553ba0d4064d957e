package traffic

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/netem/flows"
	"github.com/nuvirahub/latencylab/netem/tcplike"
)

// Network is how a transport runs the flows on its network.
type Network interface {
	// Run runs flow i until ctx ends: its kind between its two ends,
	// its payload counted in env.Meter.
	Run(ctx context.Context, f Flow, i int, env Env) (flows.Stats, []groundtruth.Frame, error)
}

// Env is what a flow's run is given: what every flow of the session
// shares, and the flow's own meter.
type Env struct {
	// Seed is the session's; a flow's random sources derive from it, the
	// flow's place and its name.
	Seed uint64
	// Meter counts the flow's payload as it arrives.
	Meter *flows.Meter
	// Zero is the session's time zero: a session flow's instants count
	// from it.
	Zero time.Time
	// KeyLog, when set, receives the TLS secrets of the flows' QUIC.
	KeyLog io.Writer
}

// Ends makes a flow's two endpoints on a transport's network, the one at
// the agent's host and the one at the viewer's. Each reaches the other
// at the other's LocalAddr, as the flows address their peers, and what
// each sends waits the flow's Delay before the shared links.
type Ends interface {
	Ends(f Flow, i int) (agentEnd, viewerEnd net.PacketConn, err error)
}

// Schedule is what every flow of a session shares when it starts.
type Schedule struct {
	// Seed is the session's (Env.Seed).
	Seed uint64
	// Zero is the session's time zero, which the flows' Start and Stop
	// count from; End is its end, where a flow without a Stop stops.
	Zero, End time.Time
	// Period is the period of the flows' meters (Result.Delivered); zero
	// or less is result.DefaultSampleEvery.
	Period time.Duration
	// KeyLog, when set, receives the TLS secrets of the flows' QUIC.
	KeyLog io.Writer
}

// Run is the flows of a session under way.
type Run struct {
	results []Result
	// meters count each flow's payload as it arrives: read while the
	// flows run (a session's metrics), and their buckets at the end.
	meters []*flows.Meter
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// Start starts every flow's goroutine on n: each waits for its start
// (counted from sch.Zero), runs until its stop or the session's end, and
// records what it measured.
func Start(ctx context.Context, n Network, fl []Flow, sch Schedule) *Run {
	ctx, cancel := context.WithCancel(ctx)
	t := &Run{results: make([]Result, len(fl)), meters: make([]*flows.Meter, len(fl)), cancel: cancel}
	period := sch.Period
	if period <= 0 {
		period = result.DefaultSampleEvery
	}
	for i, f := range fl {
		if f.Stop == 0 {
			f.Stop = sch.End.Sub(sch.Zero)
		}
		t.results[i].Flow = f
		meter := flows.NewMeter(sch.Zero, period)
		t.meters[i] = meter
		t.wg.Go(func() {
			res := &t.results[i]
			if clock.SleepUntil(ctx, sch.Zero.Add(f.Start)) {
				fctx, stop := context.WithDeadline(ctx, sch.Zero.Add(f.Stop))
				env := Env{Seed: sch.Seed, Meter: meter, Zero: sch.Zero, KeyLog: sch.KeyLog}
				res.Stats, res.Frames, res.Err = n.Run(fctx, f, i, env)
				stop()
			}
			res.Delivered = meter.Buckets()
		})
	}
	return t
}

// Meters are the flows' meters, in their order, counting as the flows
// run.
func (t *Run) Meters() []*flows.Meter { return t.meters }

// Finish stops the flows still running and returns what each measured.
func (t *Run) Finish() []Result {
	if t == nil {
		return nil
	}
	t.cancel()
	t.wg.Wait()
	return t.results
}

// Seed is the seed of flow i's random sources: the run's seed, its place
// and its name.
func Seed(seed uint64, i int, name string) uint64 {
	return seeded.New(seed, "traffic", strconv.Itoa(i), name).Uint64()
}

// RunBetween runs flow i between the two endpoints network makes for it,
// with the lab's flow generators, until ctx ends: how a transport whose
// network gives the flows endpoints implements Network.
func RunBetween(ctx context.Context, f Flow, i int, env Env, network Ends) (flows.Stats, []groundtruth.Frame, error) {
	seed, meter, zero, keyLog := env.Seed, env.Meter, env.Zero, env.KeyLog
	agentEnd, viewerEnd, err := network.Ends(f, i)
	if err != nil {
		return flows.Stats{}, nil, fmt.Errorf("lab: flow %s: %w", f.Name, err)
	}
	// The sender is at the agent's host unless the data goes up; a
	// session's agent sends, its viewer receives.
	sender, receiver := agentEnd, viewerEnd
	if f.DataUp() {
		sender, receiver = viewerEnd, agentEnd
	}
	var st flows.Stats
	// A QUIC flow's marks are those its receiver's endpoint saw arrive
	// (quic-go keeps its ECN counts to itself); tcp-bulk counts its own.
	marks := func() {
		if m, ok := receiver.(interface{ MarkedArrivals() uint64 }); ok {
			st.Marked = int64(m.MarkedArrivals())
		}
	}
	switch f.Kind {
	case KindQUICBulk:
		st, err = flows.QUICBulk(ctx, sender, receiver, meter, keyLog)
		marks()
	case KindTCPBulk:
		st, err = flows.TCPBulk(ctx, sender, receiver, tcplike.Config{Congestion: f.Congestion, ECN: f.ECN}, meter)
	case KindCBR:
		st, err = flows.CBR(ctx, sender, receiver, f.Rate, cmp.Or(f.Size, DefaultCBRSize), meter)
	case KindWeb:
		web := f.Web
		web.TCP.Congestion = f.Congestion
		st, err = flows.Web(ctx, sender, receiver, web, seeded.New(seed, "traffic", strconv.Itoa(i), f.Name, "web"), meter)
	case KindSession, KindReverseMedia:
		var frames []groundtruth.Frame
		frames, err = runSessionFlow(ctx, f, Seed(seed, i, f.Name), sender, receiver, zero, keyLog, meter)
		for _, fr := range frames {
			if !fr.Arrived.IsZero() {
				st.Delivered += int64(fr.Bytes)
			}
			if !fr.Sent.IsZero() {
				st.Sent += int64(fr.Bytes)
			}
		}
		marks()
		return st, frames, err
	default:
		sender.Close()
		receiver.Close()
		return st, nil, fmt.Errorf("%w: flow %s: kind %q", laberr.ErrUnsupported, f.Name, f.Kind)
	}
	return st, nil, err
}
