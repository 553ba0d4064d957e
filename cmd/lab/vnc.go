package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/vnc"
	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
)

const vncUsage = `usage: lab vnc -scenario NAME|FILE [flags]
       lab desktop -scenario NAME|FILE [flags] (the same command)

Measures a real VNC server through a scenario's network: starts the server
on this machine (x11vnc on an Xvfb display, or TigerVNC's Xvnc), runs the
lab's RFB client in a network namespace whose TCP connection to the server
crosses the scenario's links (the kernel mode, as lab shell), draws the
screen's timeline on the server's X display with a marker in each version,
and measures each version's update latency: from the instant the X server
had drawn it to the instant the client had decoded the update showing it,
both on this machine's clock. With -viewer vncviewer, TigerVNC's viewer
runs in the namespace instead, on an X display of its own, and the latency
runs to the instant that display shows the version's marker: glass to
glass (docs/desktops.md); likewise FreeRDP's xfreerdp in front of xrdp, and
noVNC in Chromium through websockify. The result is written in the lab's format
(NAME-SERVER-ENCODING-seedN.json, or NAME-SERVER-VIEWER-seedN.json, under
-out), for lab report.

It needs root (namespaces and TUN devices), and the servers:
  ` + vnc.InstallHint + `
The servers, their displays and the namespace are removed when the run
ends, on an error or a signal too.

flags:
`

// vncFlags are lab vnc's settings.
type vncFlags struct {
	scenario, server, encoding, screen, out, size, viewer string
	serverCmd, viewerCmd                                  string
	seed                                                  uint64
	presses                                               int
	duration, drain, delay, watchEvery, pressEvery        time.Duration
	verbose                                               bool
}

func parseVNC(args []string, out io.Writer) (vncFlags, error) {
	var f vncFlags
	fs := flag.NewFlagSet("vnc", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, vncUsage); fs.PrintDefaults() }
	fs.StringVar(&f.scenario, "scenario", "", "a scenario of the library by name, or a scenario file: its network is what the client's connection crosses")
	fs.StringVar(&f.server, "server", vnc.X11vnc, "the server: "+strings.Join(vnc.Servers, ", ")+" ("+vnc.Xrdp+": RDP in front of an Xvnc desktop, for -viewer "+vnc.ViewerFreeRDP+")")
	fs.StringVar(&f.encoding, "encoding", "zrle", "the encoding the lab's client asks for: zrle, hextile or raw (CopyRect and Raw are understood too); a real viewer chooses its own")
	fs.StringVar(&f.viewer, "viewer", vnc.ViewerLab, "what shows the server's screen: "+vnc.ViewerLab+" (the lab's RFB client: update latency, as it decodes); on a display of its own, whose markers are read there (glass to glass), "+vnc.ViewerTigerVNC+" (TigerVNC), "+vnc.ViewerFreeRDP+" (FreeRDP, for "+vnc.Xrdp+"), "+vnc.ViewerNoVNC+" (noVNC in Chromium through websockify), or "+vnc.ViewerDelay+" (the method's check: the lab's own viewer presenting each version -delay after it was drawn)")
	fs.DurationVar(&f.delay, "delay", 0, "the "+vnc.ViewerDelay+" viewer's delay")
	fs.DurationVar(&f.watchEvery, "watch-every", vnc.DefaultWatchEvery, "how often a glass-to-glass run reads the marker on the viewer's display")
	fs.StringVar(&f.serverCmd, "server-cmd", "", "your own server: a shell command line that serves $LAB_DISPLAY (an Xvfb the lab draws on, $LAB_WIDTH x $LAB_HEIGHT) on $LAB_ADDR:$LAB_PORT (password $LAB_PASSWORD if it wants one); makes -server "+vnc.ServerCommand)
	fs.StringVar(&f.viewerCmd, "viewer-cmd", "", "your own viewer: a shell command line run in the scenario's namespace that connects to $LAB_ADDR:$LAB_PORT and presents on $DISPLAY; makes -viewer "+vnc.ViewerCommand)
	fs.IntVar(&f.presses, "presses", 0, "input to photon: press a key this many times at the real viewer (XTest), each echoed by a marker on the server's display, and time each press to its echo shown (the screen is still otherwise)")
	fs.DurationVar(&f.pressEvery, "press-every", vnc.DefaultPressEvery, "the mean time between two presses (seeded, from half to one and a half times it)")
	fs.StringVar(&f.screen, "screen", vnc.DefaultScreen, "the screen's timeline: "+strings.Join(screendrive.Timelines, ", ")+" (mix: typing, scrolling, a video in a corner, an animation and a still screen, a fifth of the run each), or "+vnc.ScenarioScreen+": the scenario's own screen section")
	fs.StringVar(&f.size, "size", fmt.Sprintf("%dx%d", vnc.DefaultWidth, vnc.DefaultHeight), "the X display's size, WIDTHxHEIGHT")
	fs.Uint64Var(&f.seed, "seed", 0, "the screen's seed (0: the scenario's)")
	fs.DurationVar(&f.duration, "duration", vnc.DefaultDuration, "how long the screen changes")
	fs.DurationVar(&f.drain, "drain", vnc.DefaultDrain, "how long the client may take, after the last change, to show it")
	fs.StringVar(&f.out, "out", "out/vnc", "folder for the result")
	fs.BoolVar(&f.verbose, "v", false, "show the servers' own output")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("vnc: unexpected arguments %q", fs.Args())
	}
	if f.serverCmd != "" {
		f.server = vnc.ServerCommand
	}
	if f.viewerCmd != "" {
		f.viewer = vnc.ViewerCommand
	}
	if f.scenario == "" {
		return f, errors.New("vnc: -scenario is required: a library name like lan-animation, or a .yaml file")
	}
	return f, nil
}

// vncAvailable says why lab vnc cannot run here; a variable so that a test
// run as root can see what a user without root is told.
var vncAvailable = vnc.Available

// vncMain is lab vnc from the command line.
func vncMain(args []string, stdout, stderr io.Writer) error {
	return vncSignalled(args, stdout, stderr, nil)
}

// vncSignalled runs lab vnc with SIGINT, SIGTERM and SIGHUP caught: they
// end the run early, cleaned up. started, when set, is told the server
// and the namespace once they are up (for tests).
func vncSignalled(args []string, stdout, stderr io.Writer, started func(vnc.Started)) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	_, err := vncRun(ctx, args, stdout, stderr, started)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("vnc: interrupted by a signal, everything it started removed (%w)", err)
	}
	return err
}

// vncRun runs lab vnc and returns the result's path.
func vncRun(ctx context.Context, args []string, stdout, stderr io.Writer, started func(vnc.Started)) (string, error) {
	f, err := parseVNC(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return "", err
		}
		return "", usageError{err}
	}
	enc, err := rfb.EncodingByName(f.encoding)
	if err != nil || enc == rfb.EncodingCopyRect {
		return "", usagef("vnc: -encoding %q: zrle, hextile or raw", f.encoding)
	}
	var w, h int
	if _, err := fmt.Sscanf(f.size, "%dx%d", &w, &h); err != nil || w <= 0 || h <= 0 {
		return "", usagef("vnc: -size %q: WIDTHxHEIGHT, like 640x360", f.size)
	}
	if err := vnc.Check(f.server); err != nil {
		return "", err
	}
	if err := vnc.CheckViewer(f.viewer); err != nil {
		return "", err
	}
	if err := vnc.CheckPair(f.viewer, f.server); err != nil {
		return "", usageError{err}
	}
	if err := vncAvailable(); err != nil {
		return "", fmt.Errorf("vnc: %w", err)
	}
	sc, err := loadScenario(f.scenario)
	if err != nil {
		return "", fmt.Errorf("vnc: %w", err)
	}
	logw := io.Discard
	if f.verbose {
		logw = stderr
	}
	shown := f.encoding
	if f.viewer != vnc.ViewerLab {
		shown = "viewer " + f.viewer
	}
	fmt.Fprintf(stderr, "lab vnc: %s (%s) through %s, %q screen %dx%d for %v\n", f.server, shown, sc.Name, f.screen, w, h, f.duration)
	r, err := vnc.Run(ctx, vnc.Config{Scenario: sc, Server: f.server, Encoding: enc, Viewer: f.viewer, Delay: f.delay, WatchEvery: f.watchEvery,
		Presses: f.presses, PressEvery: f.pressEvery, ServerCmd: f.serverCmd, ViewerCmd: f.viewerCmd,
		Seed: f.seed, Duration: f.duration, Screen: f.screen, Width: w, Height: h, Drain: f.drain, Log: logw, Started: started})
	if err != nil {
		return "", err
	}
	path := filepath.Join(f.out, fmt.Sprintf("%s-%s-seed%d.json", sc.Name, r.Encoder, r.Seed))
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return "", fmt.Errorf("vnc: %w", err)
	}
	if err := result.Write(path, r); err != nil {
		return "", fmt.Errorf("vnc: %w", err)
	}
	s := r.Summary
	what := "update latency"
	switch {
	case f.presses > 0:
		what = "input-to-photon latency"
	case f.viewer != vnc.ViewerLab:
		what = "glass-to-glass latency"
	}
	fmt.Fprintf(stdout, "%s through %s: %d of %d versions shown, %s median %v, p95 %v (first update %v); %.2f MB from the server\n",
		r.Encoder, sc.Name, s.Displayed, s.Frames, what, s.Latency.Median.Round(100*time.Microsecond), s.Latency.P95.Round(100*time.Microsecond),
		r.Handshake.Round(time.Millisecond), float64(r.Links.Down.DeliveredBytes)/1e6)
	if r.Interrupted != "" {
		fmt.Fprintf(stdout, "interrupted: %s\n", r.Interrupted)
	}
	fmt.Fprintf(stdout, "result: %s (lab report %s)\n", path, f.out)
	return path, nil
}
