package vnc

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Defaults of Config.
const (
	DefaultDuration = 10 * time.Second
	DefaultWidth    = 640
	DefaultHeight   = 360
	DefaultScreen   = "mix"
)

// Config is one measurement of a VNC server. The zero value of each field
// but Scenario means its default.
type Config struct {
	// Scenario's network is what the client's connection crosses (its
	// screen, agent and viewer models do not apply: the screen is
	// Screen's, the agent and viewer are real programs).
	Scenario *scenarios.Scenario
	// Server is X11vnc (the default) or Xvnc.
	Server string
	// Encoding is what the client asks for first: rfb.EncodingZRLE (the
	// default) or rfb.EncodingHextile; CopyRect and Raw are understood as
	// well.
	Encoding int32
	// Seed seeds the screen; 0 means the scenario's.
	Seed uint64
	// Duration is how long the screen changes (DefaultDuration).
	Duration time.Duration
	// Screen names the screen's timeline (screendrive.Timelines,
	// DefaultScreen).
	Screen string
	// Width and Height are the X display's size (DefaultWidth x
	// DefaultHeight).
	Width, Height int
	// Drain bounds how long after the last change the client may take to
	// show it (DefaultDrain); a run that needs longer ends there, marked
	// interrupted.
	Drain time.Duration
	// Log receives the servers' output and the run's own lines (nil:
	// dropped).
	Log io.Writer
	// Started, when set, is told the server and the namespace once both
	// are up (for tests).
	Started func(Started)
	// Updates, when set, is given every update decoded from time zero on,
	// once the run is over (for tests and tools: the result has the
	// versions, not the updates).
	Updates func([]Update)
}

// Started is a running measurement's server and network.
type Started struct {
	Server    *Server
	Namespace string
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.Scenario == nil {
		return c, fmt.Errorf("vnc: no scenario")
	}
	if c.Server == "" {
		c.Server = X11vnc
	}
	if _, err := binaries(c.Server); err != nil {
		return c, err
	}
	if c.Encoding == 0 {
		c.Encoding = rfb.EncodingZRLE
	}
	if c.Encoding != rfb.EncodingZRLE && c.Encoding != rfb.EncodingHextile && c.Encoding != rfb.EncodingRaw {
		return c, fmt.Errorf("vnc: encoding %s: choose zrle, hextile or raw", rfb.EncodingName(c.Encoding))
	}
	if c.Seed == 0 {
		c.Seed = c.Scenario.Seed
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Duration < 0 {
		return c, fmt.Errorf("vnc: duration %v is negative", c.Duration)
	}
	if c.Screen == "" {
		c.Screen = DefaultScreen
	}
	if c.Width == 0 && c.Height == 0 {
		c.Width, c.Height = DefaultWidth, DefaultHeight
	}
	if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	// The servers' output arrives on goroutines of their own.
	c.Log = &lockedWriter{w: c.Log}
	return c, nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ScenarioScreen is the Screen that draws the scenario's own screen
// section (its phases at their instants, as a session would show them).
const ScenarioScreen = "scenario"

// frames makes the screen of c.
func (c Config) frames() (*screendrive.Frames, error) {
	timeline := func() ([]screen.Phase, error) { return screendrive.Timeline(c.Screen, c.Duration) }
	if c.Screen == ScenarioScreen {
		timeline = func() ([]screen.Phase, error) { return lab.ScreenTimeline(c.Scenario) }
	}
	tl, err := timeline()
	if err != nil {
		return nil, err
	}
	return screendrive.New(screendrive.Config{Width: c.Width, Height: c.Height, Timeline: tl, Seed: c.Seed})
}
