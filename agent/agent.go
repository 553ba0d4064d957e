// Package agent is the controlled PC of a NuviraHub-style remote desktop:
// screen capture, colour conversion, a bitrate controller, an encoder and a
// QUIC sender, run as the product runs them (findings N4-N8, N15, N16).
// Hardware is modelled (agent/screen, agent/capture, agent/encoder);
// everything else is real code: the pipeline, refinement of a still image,
// the send cap, the control stream and QUIC itself.
//
// Every documented old behaviour sits behind a switch, so the lab can show
// the bug and its fix side by side: Config.OldCaptureFirst (N7) here,
// capture.Config.OldWaitForFrame (N6) and
// encoder.Config.OldRestartOnBitrateChange (N16) in the models.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/agent/capture"
	"github.com/nuvirahub/latencylab/agent/encoder"
	// The lossless encoders register their presets ("lossless-tile", ...):
	// linked here, every preset a configuration can name is one the agent
	// can build.
	_ "github.com/nuvirahub/latencylab/agent/encoder/lossless"
	// So does OpenH264, the real H.264 encoder ("openh264-real", ...).
	_ "github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/paint"
	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// Defaults of Config.
const (
	// DefaultRefresh is the display refresh the capture polls at, in Hz.
	DefaultRefresh = 60.0
	// DefaultRefinePasses and DefaultRefineEvery: when the screen stops
	// changing, the last image is encoded again up to 15 times, about every
	// 100 ms (N15).
	DefaultRefinePasses = 15
	DefaultRefineEvery  = 100 * time.Millisecond
	// DefaultBitrate is the Fixed controller's bitrate when none is given.
	DefaultBitrate = 4_000_000
)

// Config describes an agent. Zero values mean the documented defaults.
type Config struct {
	// Seed is the run's seed; the models' sources derive from it.
	Seed uint64
	// Clock is the agent PC's own clock: frames carry its time (N1).
	Clock *clock.Clock
	// Recorder receives the ground truth; nil records nothing.
	Recorder *groundtruth.Recorder
	// Screen is what the PC shows. Required.
	Screen screen.Screen
	// Refresh is the display refresh in Hz that capture polls at.
	Refresh float64
	// Capture configures the capturer; its Screen, Device and Epoch are
	// the agent's.
	Capture capture.Config
	// Hardware lists hardware encoders to probe at start-up, in order; the
	// first that opens is used (N5).
	Hardware []encoder.Config
	// Software is the fallback encoder (N5); zero means the OpenH264 preset
	// built with its assembly (9 ms a frame).
	Software encoder.Config
	// Controller sets the bitrate; nil means Fixed at DefaultBitrate.
	Controller Controller
	// SendCap bounds bytes sent and not yet acknowledged (N8); 0 means
	// DefaultSendCap.
	SendCap int
	// RefinePasses and RefineEvery shape still-image refinement (N15);
	// NoRefine turns it off.
	RefinePasses int
	RefineEvery  time.Duration
	NoRefine     bool
	// OldCaptureFirst restores the documented old pipeline (N7): a capture
	// loop takes an image at every refresh and hands it to the encoder,
	// where it waits until the encoder is free. Off (the fix), the agent
	// waits for the encoder first and then takes the most recent image.
	OldCaptureFirst bool
	// OnPicture, when set, is told the picture every frame encodes, with
	// the frame's sequence number, when the encoder takes real pixels (an
	// encoder.PixelEncoder): what the lab judges the viewer's decoded
	// picture against. The picture is the receiver's to keep, not to
	// change.
	OnPicture func(seq uint64, pic *yuv.I420)
}

// Counters are what an agent did, for the lab.
type Counters struct {
	// Frames and Bytes count frames sent (refinement passes included).
	Frames, Bytes int64
	// Refinements counts refinement passes sent (N15).
	Refinements int64
	// Skipped counts refresh polls that did not capture, by reason:
	// "send-cap" (N8) or "encoder-unavailable" (N16's restart).
	Skipped map[string]int64
	// BitrateChanges counts changes of the encoder's target bitrate.
	BitrateChanges int64
	// BadControl counts malformed control messages.
	BadControl int64
}

// Agent is one controlled PC.
type Agent struct {
	cfg      Config
	capturer *capture.Capturer
	enc      encoder.Encoder
	painter  *paint.Painter // for an encoder of real pixels, else nil
	probe    encoder.Attempts
	epoch    time.Time

	mu       sync.Mutex
	counters Counters
	seq      uint64
	reports  []wire.Report
}

// New builds the agent's models and probes its encoders (N5). It takes the
// probe's time (opening encoders) on the clock.
func New(cfg Config) (*Agent, error) {
	if cfg.Screen == nil {
		return nil, errors.New("agent: Config.Screen is required")
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Refresh < 0 {
		return nil, fmt.Errorf("agent: refresh %v Hz is negative", cfg.Refresh)
	}
	if cfg.Controller == nil {
		cfg.Controller = Fixed{Bps: DefaultBitrate}
	}
	if cfg.RefinePasses == 0 {
		cfg.RefinePasses = DefaultRefinePasses
	}
	if cfg.RefineEvery == 0 {
		cfg.RefineEvery = DefaultRefineEvery
	}
	a := &Agent{cfg: cfg, counters: Counters{Skipped: map[string]int64{}}}

	capCfg := cfg.Capture
	capCfg.Screen = cfg.Screen
	if capCfg.Device == nil {
		capCfg.Device = capture.NewDevice()
	}
	var err error
	if a.capturer, err = capture.New(cfg.Seed, capCfg); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	a.epoch = a.capturer.Epoch()

	// Every encoder starts at the controller's bitrate: one started at its
	// own default would take a bitrate change on its first frame (and, in
	// the old behaviour, a one-second restart, N16).
	startBps := int(cfg.Controller.Bitrate(time.Now()))
	var hardware []encoder.Encoder
	for _, hc := range cfg.Hardware {
		hc.Device = capCfg.Device // a hardware encoder shares the GPU device (N6)
		hc.Bitrate = startBps
		e, err := encoder.Make(cfg.Seed, hc)
		if err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
		hardware = append(hardware, e)
	}
	sw := cfg.Software
	if sw.Name == "" {
		if sw, err = encoder.Preset(encoder.PresetOpenH264Asm); err != nil {
			return nil, err
		}
	}
	sw.Bitrate = startBps
	fallback, err := encoder.Make(cfg.Seed, sw)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if a.enc, a.probe, err = encoder.Probe(hardware, fallback); err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if pe, ok := a.enc.(encoder.PixelEncoder); ok {
		// The encoder takes pixels: the screen's versions are painted.
		v, ok := cfg.Screen.(paint.Versions)
		if !ok {
			return nil, fmt.Errorf("agent: %s encodes real pixels, and the screen (%T) cannot say what to paint", pe.Name(), cfg.Screen)
		}
		w, h := pe.PictureSize()
		if a.painter, err = paint.New(cfg.Seed, v, paint.Config{Width: w, Height: h}); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	return a, nil
}

// Encoder is the encoder the probe chose; Probe lists what it tried.
func (a *Agent) Encoder() encoder.Encoder { return a.enc }

// Probe lists the encoders tried at start-up and why each failed (N5).
func (a *Agent) Probe() encoder.Attempts { return a.probe }

// Counters returns a snapshot of the agent's counters.
func (a *Agent) Counters() Counters {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.counters
	c.Skipped = make(map[string]int64, len(a.counters.Skipped))
	for k, v := range a.counters.Skipped {
		c.Skipped[k] = v
	}
	return c
}

// Run serves one viewer on conn until ctx ends or the connection closes. It
// returns after every goroutine it started has ended; it does not close conn.
func (a *Agent) Run(ctx context.Context, conn *quic.Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The viewer opens the control stream with its first clock probe.
	st, err := conn.AcceptStream(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("agent: control stream: %w", err)
	}
	obs, _ := a.cfg.Controller.(FrameObserver)
	s := newSender(conn, a.cfg.Recorder, a.cfg.SendCap, obs)
	ctl := &control{clock: a.cfg.Clock, sender: s, controller: a.cfg.Controller,
		packets: func() (sent, lost uint64) {
			st := conn.ConnectionStats()
			return st.PacketsSent, st.PacketsLost
		}}
	stop := context.AfterFunc(ctx, func() { st.CancelRead(0); st.Close() })
	defer stop()

	var wg sync.WaitGroup
	wg.Go(func() {
		ctl.serve(st)
		cancel() // the viewer went away: the session is over
	})
	p := &pipeline{agent: a, sender: s, control: ctl}
	if a.cfg.OldCaptureFirst {
		p.runCaptureFirst(ctx)
	} else {
		p.run(ctx)
	}
	cancel()
	wg.Wait()
	s.wait()
	a.mu.Lock()
	a.counters.BadControl = ctl.bad.Load()
	a.reports = ctl.received()
	a.mu.Unlock()
	return nil
}

// Reports returns the viewer reports received during the last Run (N1).
func (a *Agent) Reports() []wire.Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]wire.Report(nil), a.reports...)
}
