package vnc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/internal/procgroup"
	"github.com/nuvirahub/latencylab/lab/vnc/glass"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// The viewers a run measures through.
const (
	// ViewerLab is the lab's own RFB client: a version counts as shown
	// when the client has decoded the update carrying it (update latency,
	// as lab vnc has always measured).
	ViewerLab = "lab"
	// ViewerTigerVNC is TigerVNC's vncviewer, full screen on a display of
	// its own: a version counts as shown when the viewer's display shows
	// its marker (glass to glass).
	ViewerTigerVNC = "vncviewer"
	// ViewerFreeRDP is FreeRDP's X11 client, full screen on a display of
	// its own, for an RDP server (Xrdp).
	ViewerFreeRDP = "xfreerdp"
	// ViewerNoVNC is noVNC, the web client, in Chromium (kiosk, on a
	// display of its own), through websockify: the VNC server reached
	// over a WebSocket, the path a remote desktop falls back to where UDP
	// is blocked.
	ViewerNoVNC = "novnc"
	// ViewerCommand is the user's own viewer: a shell command line
	// (Config.ViewerCmd) run in the scenario's namespace with CommandEnv,
	// which connects to LAB_ADDR:LAB_PORT and presents on DISPLAY.
	ViewerCommand = "cmd"
	// ViewerDelay is the method's own check: no network and no program, a
	// viewer of the lab's that draws each version's marker on the
	// viewer's display exactly Config.Delay after the server's display
	// had drawn it. What the run measures beyond the delay is the
	// measurement's own error.
	ViewerDelay = "delay"
)

// Viewers lists them, for flags and messages.
var Viewers = []string{ViewerLab, ViewerTigerVNC, ViewerFreeRDP, ViewerNoVNC, ViewerCommand, ViewerDelay}

// ViewerInstallHint is how to install the viewers, on Debian.
const ViewerInstallHint = "apt-get install -y xvfb tigervnc-viewer freerdp2-x11 novnc websockify chromium"

// NoVNCPage is the page of Debian's noVNC that a run opens: its small
// client, which connects at once and shows the desktop unscaled under a
// status bar.
const NoVNCPage = "/usr/share/novnc/vnc_lite.html"

// Speaks tells whether viewer can show server: the lab's client,
// vncviewer and noVNC speak VNC, xfreerdp RDP, the delay viewer needs no
// protocol, and a user's command is taken at its word.
func Speaks(viewer, server string) bool {
	switch {
	case viewer == ViewerDelay, viewer == ViewerCommand, server == ServerCommand:
		return true // no protocol, or the user's, which the lab cannot know
	case viewer == ViewerFreeRDP:
		return RDP(server)
	}
	return !RDP(server)
}

// DefaultWatchEvery is how often a glass-to-glass run reads the marker on
// the viewer's display when Config.WatchEvery is zero: every millisecond,
// so the measurement is late by about a read's interval and round trip
// (the error measured, 0 to 1.6 ms on 2 cores, is in docs/desktops.md).
const DefaultWatchEvery = time.Millisecond

// viewerBinaries are the programs a viewer needs beyond the server's.
func viewerBinaries(viewer string) ([]string, error) {
	switch viewer {
	case ViewerLab:
		return nil, nil
	case ViewerTigerVNC:
		return []string{"Xvfb", "vncviewer"}, nil
	case ViewerFreeRDP:
		return []string{"Xvfb", "xfreerdp"}, nil
	case ViewerNoVNC:
		return []string{"Xvfb", "websockify", "chromium"}, nil
	case ViewerCommand:
		return []string{"Xvfb", "sh"}, nil
	case ViewerDelay:
		return []string{"Xvfb"}, nil
	}
	return nil, fmt.Errorf("vnc: unknown viewer %q (%s)", viewer, strings.Join(Viewers, ", "))
}

// CheckViewer says whether a viewer's programs are installed, and how to
// install them when they are not.
func CheckViewer(viewer string) error {
	bins, err := viewerBinaries(viewer)
	if err != nil {
		return err
	}
	if err := needPrograms("viewer "+viewer, bins, ViewerInstallHint); err != nil {
		return err
	}
	if viewer == ViewerNoVNC {
		if _, err := os.Stat(NoVNCPage); err != nil {
			return fmt.Errorf("%w: viewer %s needs noVNC's %s: install with `%s`", ErrMissing, viewer, NoVNCPage, ViewerInstallHint)
		}
	}
	return nil
}

// startIn starts cmd, made elsewhere (in a namespace, by Pair.CommandA),
// as one of the display's programs: in its own process group, its output
// to log, stopped by Close before the display.
func (s *Server) startIn(cmd *exec.Cmd, log io.Writer) error {
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procgroup.Attr()
	if err := s.launch(cmd); err != nil {
		return fmt.Errorf("vnc: starting %s: %w", cmd.Path, err)
	}
	return nil
}

// glassConfig is one glass-to-glass session: the server runs, the viewer
// has a display of its own, and start starts the viewer program.
type glassConfig struct {
	server   *Server
	viewer   string
	display  *Server // the viewer's display
	frames   *screendrive.Frames
	duration time.Duration
	drain    time.Duration
	every    time.Duration
	delay    time.Duration
	// start starts the viewer's program on the viewer's display, connected
	// to the server (nil for ViewerDelay).
	start func() error
	// presses, when positive, makes the run an input-to-photon run: that
	// many key presses at the viewer, one every pressEvery on average
	// (seeded by seed), each echoed by a marker drawn on the server's
	// display, in place of the screen's timeline.
	presses    int
	pressEvery time.Duration
	seed       uint64
	// click clicks the viewer's display before the first press (a web
	// viewer takes the keyboard once its page is clicked).
	click bool
}

// glassSession draws the screen on the server's display and watches the
// viewer's display for its markers, until the last version drawn shows
// there (or the drain ends, or ctx).
func glassSession(ctx context.Context, cfg glassConfig) (*observed, error) {
	disp, err := xscreen.Open(cfg.server.Display)
	if err != nil {
		return nil, err
	}
	defer disp.Close()
	first, err := screendrive.Draw(disp, cfg.frames, 1)
	if err != nil {
		return nil, err
	}
	var delayed *delayViewer
	if cfg.viewer == ViewerDelay {
		if delayed, err = startDelayViewer(cfg.display.Display, cfg.delay); err != nil {
			return nil, err
		}
		defer delayed.close()
		delayed.show(first)
	} else if err := cfg.start(); err != nil {
		return nil, err
	}
	gd, err := glass.Open(cfg.display.Display)
	if err != nil {
		return nil, err
	}
	defer gd.Close()
	// Warm-up: the desktop (version 1) shows on the viewer's display; the
	// timeline starts once it does.
	lctx, lcancel := context.WithTimeout(ctx, StartTimeout)
	place, _, err := gd.Locate(lctx, []float64{screendrive.MarkerBlock}, 20*time.Millisecond, func(v uint32) bool { return v == 1 })
	lcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("vnc: the viewer %s never showed the desktop's marker on its display %s within %v (%w)", cfg.viewer, cfg.display.Display, StartTimeout, err)
	}
	o := &observed{epoch: time.Now()}
	o.warmup = o.epoch.Sub(first.Drawn)

	var (
		mu        sync.Mutex
		sightings []glass.Sighting
		lastDrawn = uint64(1)
		done      bool
		finished  = make(chan struct{})
	)
	finish := func() { // under mu: the viewer showed the last version drawn
		select {
		case <-finished:
		default:
			close(finished)
		}
	}
	wctx, wstop := context.WithCancel(ctx)
	defer wstop()
	var (
		watchErr   error
		watchStats glass.WatchStats
		watched    = make(chan struct{})
	)
	go func() {
		defer close(watched)
		watchStats, watchErr = gd.Watch(wctx, place, cfg.every, func(s glass.Sighting) {
			mu.Lock()
			defer mu.Unlock()
			sightings = append(sightings, s)
			if done && uint64(s.Version) >= lastDrawn {
				finish()
			}
		})
	}()
	var (
		driveErr error
		input    *inputRun
	)
	if cfg.presses > 0 {
		input, driveErr = typeAndReact(ctx, cfg, disp)
		if input != nil {
			defer input.re.close()
			mu.Lock()
			lastDrawn = uint64(1 + len(input.pressed)) // the last press's echo
			mu.Unlock()
		}
	} else {
		driveErr = screendrive.Drive(ctx, disp, cfg.frames, o.epoch, cfg.duration, 1, true, func(d screendrive.Drawn) {
			mu.Lock()
			o.drawn = append(o.drawn, d)
			lastDrawn = d.Version
			mu.Unlock()
			if delayed != nil {
				delayed.show(d)
			}
		})
	}
	mu.Lock()
	done = true
	if n := len(sightings); n > 0 && uint64(sightings[n-1].Version) >= lastDrawn || lastDrawn == 1 {
		finish()
	}
	mu.Unlock()
	drain := time.NewTimer(cfg.drain)
	defer drain.Stop()
	select {
	case <-finished:
	case <-drain.C:
	case <-ctx.Done():
	case <-watched: // the watch failed
	}
	wstop()
	<-watched
	if input != nil {
		input.finish(o)
	}
	o.ran = time.Since(o.epoch)
	o.changes = cfg.frames.Changes(cfg.duration)
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sightings {
		o.updates = append(o.updates, Update{At: s.At.Sub(o.epoch), Version: uint64(s.Version)})
		o.drained = o.drained || uint64(s.Version) >= lastDrawn
		o.errorBound = max(o.errorBound, s.Error())
	}
	o.drained = o.drained || lastDrawn == 1
	o.watch = watchStats
	if delayed != nil {
		delayed.close() // its record complete
		delayed.mu.Lock()
		o.presented = map[uint64][2]time.Duration{}
		for v, at := range delayed.presented {
			o.presented[v] = [2]time.Duration{at[0].Sub(o.epoch), at[1].Sub(o.epoch)}
		}
		delayed.mu.Unlock()
	}
	switch {
	case driveErr != nil:
		return nil, fmt.Errorf("vnc: drawing the screen: %w", driveErr)
	case watchErr != nil:
		return nil, fmt.Errorf("vnc: watching the viewer's display: %w", watchErr)
	case ctx.Err() != nil:
		return o, ctx.Err()
	}
	return o, nil
}

// delayViewer is ViewerDelay: it draws each version's marker on the
// viewer's display exactly its delay after the server's display had drawn
// it, from a connection of its own.
type delayViewer struct {
	mu   sync.Mutex
	once sync.Once
	// presented is when each version's marker was drawn on the display:
	// after the first instant and before the second (its drawing's
	// requests sent, and their Sync returned).
	presented map[uint64][2]time.Time
	x         *xscreen.Display
	delay     time.Duration
	queue     chan screendrive.Drawn
	done      chan struct{}
	stopped   chan struct{}
	frame     *codec.Frame
	marker    []codec.Rect
}

func startDelayViewer(display string, delay time.Duration) (*delayViewer, error) {
	x, err := xscreen.Open(display)
	if err != nil {
		return nil, err
	}
	w, h := x.Size()
	v := &delayViewer{presented: map[uint64][2]time.Time{}, x: x, delay: delay, queue: make(chan screendrive.Drawn, 4096), done: make(chan struct{}), stopped: make(chan struct{}),
		frame: codec.NewFrame(w, h), marker: []codec.Rect{{W: screendrive.MarkerWidth, H: screendrive.MarkerHeight}}}
	go v.run()
	return v, nil
}

// show queues a version drawn on the server's display.
func (v *delayViewer) show(d screendrive.Drawn) {
	select {
	case v.queue <- d:
	case <-v.done:
	}
}

func (v *delayViewer) run() {
	defer close(v.stopped)
	// A thread of its own: its instants are the check's truth, and a
	// goroutine moved between threads wakes later now and then.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t := time.NewTimer(0)
	<-t.C
	for {
		select {
		case d := <-v.queue:
			t.Reset(time.Until(d.Drawn.Add(v.delay)))
			select {
			case <-t.C:
			case <-v.done:
				return
			}
			screendrive.Stamp(v.frame, uint32(d.Version))
			began := time.Now()
			if v.x.Put(v.frame, v.marker) != nil || v.x.Sync() != nil {
				return
			}
			v.mu.Lock()
			v.presented[d.Version] = [2]time.Time{began, time.Now()}
			v.mu.Unlock()
		case <-v.done:
			return
		}
	}
}

// close stops the viewer, once it has finished any drawing under way; it
// may be called more than once.
func (v *delayViewer) close() {
	v.once.Do(func() {
		close(v.done)
		<-v.stopped
		v.x.Close()
	})
}

// tigerVNCArgs are vncviewer's arguments: full screen (the display is the
// server's size), no dialogs, the password from the server's file.
func tigerVNCArgs(srv *Server) []string {
	return []string{"-FullScreen", "-AlertOnFatalError=0", "-passwd", srv.PasswordFile(),
		fmt.Sprintf("%s::%d", srv.Addr.Addr(), srv.Addr.Port())}
}

// freeRDPArgs are xfreerdp's arguments: full screen (the display is the
// server's size), TLS with the server's certificate taken as it is (a
// snake-oil one made for this host), the run's password for xrdp's one
// session, and its own log kept to warnings.
func freeRDPArgs(srv *Server) []string {
	return []string{fmt.Sprintf("/v:%s:%d", srv.Addr.Addr(), srv.Addr.Port()), "/u:lab", "/p:" + srv.Password,
		"/cert:ignore", "/sec:tls", "/f", "/bpp:24", "/log-level:WARN"}
}

// noVNCArgs are Chromium's arguments for noVNC's page served by
// websockify at ws: kiosk at the display's size, no sandbox (the lab runs
// as root), no first-run pages, a profile in home, the run's password in
// the page's address (noVNC reads it from there).
func noVNCArgs(srv *Server, ws netip.AddrPort, home string, w, h int) []string {
	url := fmt.Sprintf("http://%s/%s?host=%s&port=%d&password=%s&autoconnect=true", ws, filepath.Base(NoVNCPage), ws.Addr(), ws.Port(), srv.Password)
	return []string{"--no-sandbox", "--kiosk", "--no-first-run", "--no-default-browser-check", "--disable-gpu",
		"--disable-features=Translate", "--password-store=basic", "--user-data-dir=" + filepath.Join(home, "chromium"),
		"--window-position=0,0", fmt.Sprintf("--window-size=%d,%d", w, h), url}
}

// viewerCommand is the viewer's program and its arguments; ws is
// websockify's address, for noVNC, and line the user's command line.
func viewerCommand(viewer string, srv *Server, ws netip.AddrPort, home string, w, h int, line string) (string, []string) {
	switch viewer {
	case ViewerCommand:
		return "sh", []string{"-c", line}
	case ViewerFreeRDP:
		return "xfreerdp", freeRDPArgs(srv)
	case ViewerNoVNC:
		return "chromium", noVNCArgs(srv, ws, home, w, h)
	}
	return "vncviewer", tigerVNCArgs(srv)
}

// startWebsockify starts websockify on this host, serving noVNC's files
// and relaying WebSockets to the VNC server, as one of the viewer
// display's programs, and returns its address. Its listening socket is
// made here, on the server's address, and handed to it (--inetd): it
// accepts from the first instant, and no other program can take the port
// meanwhile (websockify says it listens before it does).
func (s *Server) startWebsockify(srv *Server, log io.Writer) (netip.AddrPort, error) {
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(srv.Addr.Addr(), 0)))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("vnc: websockify's socket: %w", err)
	}
	defer l.Close() // websockify has its own copy
	ws := l.Addr().(*net.TCPAddr).AddrPort()
	f, err := l.File()
	if err != nil {
		return ws, fmt.Errorf("vnc: websockify's socket: %w", err)
	}
	defer f.Close()
	cmd := exec.Command("websockify", "--inetd", "--web", filepath.Dir(NoVNCPage), srv.Addr.String())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, log, log
	cmd.SysProcAttr = procgroup.Attr()
	if err := s.launch(cmd); err != nil {
		return ws, fmt.Errorf("vnc: starting websockify: %w", err)
	}
	return ws, nil
}

// viewerEnv is the environment of a viewer program on display: this
// process's, with the display and a home of its own (viewers write their
// settings there).
func viewerEnv(display, home string) []string {
	env := []string{"DISPLAY=" + display, "HOME=" + home}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DISPLAY=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}
