package vnc

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/lab/plan"
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
	// well. The lab's client's alone: a real viewer chooses its own.
	Encoding int32
	// Viewer is what shows the server's screen: ViewerLab (the default,
	// update latency as the lab's client decodes it), or a viewer on a
	// display of its own, watched for the markers (glass to glass):
	// ViewerTigerVNC and ViewerFreeRDP, or ViewerDelay, the method's check.
	Viewer string
	// Delay is ViewerDelay's delay.
	Delay time.Duration
	// ServerCmd and ViewerCmd are the command lines of ServerCommand and
	// ViewerCommand: the user's own remote desktop, run by sh with
	// CommandEnv (the server on this host, serving the display the lab
	// draws on; the viewer in the scenario's namespace, presenting on a
	// display of its own).
	ServerCmd, ViewerCmd string
	// WatchEvery is how often a glass-to-glass run reads the marker on the
	// viewer's display (DefaultWatchEvery).
	WatchEvery time.Duration
	// Presses, when positive, makes the run input to photon: that many key
	// presses at a real viewer, one every PressEvery on average
	// (DefaultPressEvery), each echoed by a marker on the server's
	// display, timed from the press to the echo shown (the screen is still
	// otherwise).
	Presses    int
	PressEvery time.Duration
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
	// Presented, when set, is given ViewerDelay's record of when it drew
	// each version's marker on the viewer's display (from time zero):
	// after the first instant and before the second, once the run is
	// over. The truth the method is checked against.
	Presented func(map[uint64][2]time.Duration)
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
	if c.Viewer == "" {
		c.Viewer = ViewerLab
	}
	if _, err := viewerBinaries(c.Viewer); err != nil {
		return c, err
	}
	if err := CheckPair(c.Viewer, c.Server); err != nil {
		return c, err
	}
	if (c.Server == ServerCommand) != (strings.TrimSpace(c.ServerCmd) != "") {
		return c, fmt.Errorf("vnc: a server command line goes with server %s, and server %s needs one", ServerCommand, ServerCommand)
	}
	if (c.Viewer == ViewerCommand) != (strings.TrimSpace(c.ViewerCmd) != "") {
		return c, fmt.Errorf("vnc: a viewer command line goes with viewer %s, and viewer %s needs one", ViewerCommand, ViewerCommand)
	}
	if c.Delay != 0 && c.Viewer != ViewerDelay {
		return c, fmt.Errorf("vnc: a delay is the %s viewer's, not %s's", ViewerDelay, c.Viewer)
	}
	if c.Delay < 0 || c.WatchEvery < 0 {
		return c, fmt.Errorf("vnc: delay %v and watch interval %v must not be negative", c.Delay, c.WatchEvery)
	}
	if c.WatchEvery == 0 {
		c.WatchEvery = DefaultWatchEvery
	}
	if c.Presses < 0 || c.PressEvery < 0 {
		return c, fmt.Errorf("vnc: %d presses, one every %v: neither may be negative", c.Presses, c.PressEvery)
	}
	if c.Presses > 0 {
		if c.Viewer == ViewerLab || c.Viewer == ViewerDelay {
			return c, fmt.Errorf("vnc: input to photon needs a real viewer (%s, %s or %s), not %s", ViewerTigerVNC, ViewerFreeRDP, ViewerNoVNC, c.Viewer)
		}
		if c.PressEvery == 0 {
			c.PressEvery = DefaultPressEvery
		}
		c.Screen = "still"
		c.Duration = time.Duration(c.Presses) * c.PressEvery
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
		timeline = func() ([]screen.Phase, error) { return plan.ScreenTimeline(c.Scenario) }
	}
	tl, err := timeline()
	if err != nil {
		return nil, err
	}
	return screendrive.New(screendrive.Config{Width: c.Width, Height: c.Height, Timeline: tl, Seed: c.Seed})
}

// CheckPair says why viewer cannot show server, nil when it can (Speaks).
func CheckPair(viewer, server string) error {
	if !Speaks(viewer, server) {
		return fmt.Errorf("vnc: viewer %s cannot show server %s (RDP needs %s; VNC the others)", viewer, server, ViewerFreeRDP)
	}
	return nil
}
