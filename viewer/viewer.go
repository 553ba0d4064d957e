package viewer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/seeded"
)

// ErrAlreadyRun is returned by a second Run of the same Viewer: its
// counters, estimate and ground truth belong to one session.
var ErrAlreadyRun = errors.New("viewer: Run called twice")

// errAgentEnded is the agent closing the control stream: the session is
// over, cleanly.
var errAgentEnded = errors.New("viewer: the agent closed the control stream")

// Viewer is one viewer session. Make it with New, run it once with Run;
// Counters, Status, LastReport and the estimator may be read from other
// goroutines while it runs and after.
type Viewer struct {
	cfg   Config
	clock *clock.Clock

	estimator OffsetEstimator
	counters  counters
	figures   figures

	started atomic.Bool
	// Set by Run before any goroutine starts.
	start       time.Time // true instant of the start: the vsync phase
	ctl         *control
	stop        func(error) // ends the session with a cause
	decodeQueue *frameQueue
	chain       *chain // only the decode loop touches it
	screen      *screen
}

// New checks cfg and returns a viewer ready to Run.
func New(cfg Config) (*Viewer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	v := &Viewer{cfg: cfg, clock: cfg.Clock, decodeQueue: newFrameQueue(), chain: newChain(cfg.Policy, cfg.OldShowEveryFrame)}
	v.screen = newScreen(cfg.OldShowEveryFrame, func(f *frame) { v.drop(f.h.Seq, ReasonOvertaken) })
	return v, nil
}

// Run is New followed by Viewer.Run, for a caller that needs nothing from
// the viewer but its ground truth.
func Run(ctx context.Context, conn *quic.Conn, cfg Config) error {
	v, err := New(cfg)
	if err != nil {
		return err
	}
	return v.Run(ctx, conn)
}

// Run runs the session on conn, a connection the viewer dialled to the
// agent: it opens the control stream with a clock probe (which is what makes
// the agent's AcceptStream return), then receives, decodes and displays
// frames, probes the clock and reports, until ctx is cancelled or the
// connection closes. It returns only after every goroutine it started has
// ended.
//
// Run returns nil when ctx was cancelled, when the connection was closed
// with application error code 0 by either end, or when the agent closed the
// control stream; otherwise the error that ended the session. It leaves
// conn open (it is the caller's); on the way out it closes the control
// stream, so an agent still running sees the viewer leave.
func (v *Viewer) Run(ctx context.Context, conn *quic.Conn) error {
	if !v.started.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	v.stop = cancel
	// The connection's context ends, with the reason as its cause, when
	// the connection closes for whatever reason.
	defer context.AfterFunc(conn.Context(), func() { cancel(context.Cause(conn.Context())) })()

	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return v.result(parent, fmt.Errorf("viewer: open control stream: %w", err))
	}
	v.start = time.Now()
	v.ctl = newControl(st)
	if err := v.probe(); err != nil {
		st.CancelRead(codeSessionEnd)
		st.CancelWrite(codeSessionEnd)
		return v.result(parent, err)
	}

	decodeCost := v.cfg.Decode.Sampler(seeded.New(v.cfg.Seed, "viewer", "decode"))
	var wg sync.WaitGroup
	wg.Go(v.readControl)
	wg.Go(func() { v.probeLoop(ctx, seeded.New(v.cfg.Seed, "viewer", "clock probes")) })
	wg.Go(func() { v.reportLoop(ctx) })
	wg.Go(func() { v.decodeLoop(ctx, decodeCost) })
	wg.Go(func() { v.displayLoop(ctx) })
	wg.Go(func() { v.acceptFrames(ctx, conn) })

	<-ctx.Done()
	// The control stream's reads and writes take no context: a deadline
	// in the past unblocks a writer stuck on flow control, cancelling the
	// read side unblocks the reader.
	st.SetWriteDeadline(time.Now())
	st.CancelRead(codeSessionEnd)
	wg.Wait()
	st.Close()
	return v.result(parent, context.Cause(ctx))
}

// result turns the cause that ended a session into Run's error.
func (v *Viewer) result(parent context.Context, cause error) error {
	var app *quic.ApplicationError
	switch {
	case parent.Err() != nil:
		return nil
	case errors.Is(cause, errAgentEnded):
		return nil
	case errors.As(cause, &app) && app.ErrorCode == 0:
		return nil
	case cause == nil:
		return nil
	}
	return fmt.Errorf("viewer: session ended: %w", cause)
}

// Counters returns a snapshot of the viewer's counters.
func (v *Viewer) Counters() Counters { return v.counters.snapshot() }

// Estimator is the viewer's clock-offset estimate, for the lab to compare
// with the truth.
func (v *Viewer) Estimator() *OffsetEstimator { return &v.estimator }
