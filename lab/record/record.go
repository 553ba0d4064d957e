// Package record owns lab record: real desktop applications recorded
// under Xvfb, losslessly, with the damage their X server reported, into
// the lab's screen-recording format (agent/screen/recording). It starts
// an X display of a chosen size, a window manager where the content has
// windows, and the applications of a kind (a terminal being typed into,
// a browser scrolled, a video, 3D, ...), plays the kind's seeded script
// of input on them with xdotool, and samples the screen at a fixed rate:
// the X DAMAGE extension says what changed since the last tick, only
// that is read back, and a frame is recorded at each tick after which
// something changed, with its damage rectangles.
//
// The corpus of recordings the screen models are fitted to
// (testdata/recordings) is made with it; docs/recording.md says how.
package record

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// Defaults of a Config's zero fields.
const (
	DefaultWidth    = 1280
	DefaultHeight   = 720
	DefaultDuration = 20 * time.Second
	DefaultRate     = 60.0
	DefaultSeed     = 1
)

// StartTimeout bounds how long the X server, the window manager and each
// application have to show themselves, and a page to finish drawing.
const StartTimeout = 30 * time.Second

// InstallHint is how to install every program the kinds run, on Debian.
const InstallHint = "apt-get install -y xvfb xdotool openbox xterm x11-apps nano chromium mpv ffmpeg glmark2-x11"

// ErrMissing is wrapped by Check's error: a program is not installed.
var ErrMissing = errors.New("record: program not installed")

// Config is a recording to make. Its zero fields mean the defaults.
type Config struct {
	// Kind is the content's kind (Kinds lists them).
	Kind string
	// Width and Height are the X display's size (1280x720).
	Width, Height int
	// Duration is how long the screen is recorded (20 s), from when the
	// applications' windows are up and still.
	Duration time.Duration
	// Rate is how many times a second the damage is sampled (60): a
	// frame for each tick after which something changed.
	Rate float64
	// Seed fixes everything the kind picks (1; 0 means 1 too, so that
	// the command line's default and the zero value agree).
	Seed uint64
	// Out is the recording's file.
	Out string
	// Progress receives a line a second while recording (nil: none).
	Progress io.Writer
	// Log receives the programs' own output (nil: dropped; the end of a
	// failed program's standard error is in the error anyway).
	Log io.Writer
}

func (c Config) withDefaults() (Config, error) {
	if c.Width == 0 && c.Height == 0 {
		c.Width, c.Height = DefaultWidth, DefaultHeight
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case c.Width < 64 || c.Height < 64 || c.Width > 4096 || c.Height > 4096:
		return c, fmt.Errorf("record: size %dx%d: want sides of 64 to 4096 pixels", c.Width, c.Height)
	case c.Duration < 0:
		return c, fmt.Errorf("record: duration %v: want a positive duration", c.Duration)
	case !(c.Rate > 0 && c.Rate <= 1000):
		return c, fmt.Errorf("record: rate %v Hz: want more than 0 and at most 1000", c.Rate)
	case c.Out == "":
		return c, errors.New("record: no output file")
	}
	_, err := Lookup(c.Kind)
	return c, err
}

// Command is the lab record command line that makes c again.
func Command(c Config) string {
	c, _ = c.withDefaults()
	return fmt.Sprintf("lab record -kind %s -size %dx%d -duration %v -rate %s -seed %d -out %s",
		c.Kind, c.Width, c.Height, c.Duration, strconv.FormatFloat(c.Rate, 'g', -1, 64), c.Seed, c.Out)
}

// Check says whether the programs kind needs are installed, and how to
// install them when they are not.
func Check(kind string) error {
	k, err := Lookup(kind)
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range append([]string{"Xvfb", "xdotool"}, k.Programs...) {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s needs %s, not found on PATH: install with `%s`", ErrMissing, kind, strings.Join(missing, ", "), InstallHint)
	}
	return nil
}

// App is the recording's application with its Debian packages' versions:
// "xterm 379-1, openbox 3.6.1-10" (a package dpkg does not know is named
// without one).
func App(k Kind) string {
	parts := make([]string, len(k.Packages))
	for i, p := range k.Packages {
		parts[i] = p
		if v, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", p).Output(); err == nil && len(v) > 0 {
			parts[i] += " " + strings.TrimSpace(string(v))
		}
	}
	return strings.Join(parts, ", ")
}

// Result is what a recording made.
type Result struct {
	// Meta is the recording's metadata, as written.
	Meta recording.Meta
	// Frames is how many frames were written, Bytes the file's size.
	Frames int
	Bytes  int64
	// Duration is the last frame's instant plus a tick
	// (recording.Recording.Duration).
	Duration time.Duration
	// Late counts the ticks the capture missed because it was still
	// busy: their damage went into the next tick's frame.
	Late int
	// Screen is the whole display read at the end (xscreen's Get) after
	// the applications were stopped and the last damage recorded: the
	// recording's last frame must equal it.
	Screen *codec.Frame
}

// Record makes a recording: it starts the display and the kind's
// applications, waits for their windows and a still screen, records for
// cfg.Duration while the script plays, and writes cfg.Out. Everything it
// started is stopped before it returns, whatever happened; a cancelled
// ctx ends it with an error, the file incomplete.
func Record(ctx context.Context, cfg Config) (_ *Result, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := Check(cfg.Kind); err != nil {
		return nil, err
	}
	k, _ := Lookup(cfg.Kind)
	dir, err := os.MkdirTemp("", "lab-record-")
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer os.RemoveAll(dir)
	h := fnv.New64a()
	h.Write([]byte(k.Name))
	e := &env{dir: dir, w: cfg.Width, h: cfg.Height, root: os.Geteuid() == 0, rng: rand.New(rand.NewPCG(cfg.Seed, h.Sum64()))}
	if k.prepare != nil {
		if err := k.prepare(e); err != nil {
			return nil, err
		}
	}

	ps := &procs{log: cfg.Log}
	defer ps.stop()
	// Each stage has StartTimeout of its own: on a machine busy with
	// other work, a slow X server or window manager must not eat an
	// application's time (with one budget for all, a CI run under load
	// once ran out of it waiting for xclock).
	stage := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, StartTimeout) }
	startCtx, cancel := stage()
	defer cancel()
	display, err := ps.startX(startCtx, cfg.Width, cfg.Height)
	if err != nil {
		return nil, err
	}
	ps.env, ps.dir = childEnv(display, dir), dir
	c, err := openCapture(display)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if k.wm {
		p, err := ps.start("openbox", nil)
		if err != nil {
			return nil, err
		}
		wmCtx, cancel := stage()
		defer cancel()
		if err := poll(wmCtx, func() (bool, error) {
			if ps.exited() != nil {
				return false, errors.New("ended")
			}
			return c.wmRunning()
		}); err != nil {
			return nil, p.failed("did not start managing the display", err)
		}
		// The window manager is ready once it frames a window: a probe,
		// destroyed once framed.
		probe, err := c.newProbe()
		if err != nil {
			return nil, err
		}
		if err := c.awaitFramed(wmCtx, probe, func() error {
			if ps.exited() != nil {
				return errors.New("ended")
			}
			return nil
		}); err != nil {
			return nil, p.failed(fmt.Sprintf("did not frame the lab's probe window within %v (what the display holds: %s)", StartTimeout, c.census()), err)
		}
		if err := c.destroyProbe(probe); err != nil {
			return nil, err
		}
	}
	apps := k.apps(e)
	e.windows = make([]uint32, len(apps))
	for i, a := range apps {
		p, err := ps.start(a.name, a.args)
		if err != nil {
			return nil, err
		}
		if a.window == "" {
			continue
		}
		// Programs of the same class (three xterms) are told apart by
		// taking a window not taken before.
		taken := map[uint32]bool{}
		for _, id := range e.windows {
			taken[id] = true
		}
		appCtx, cancel := stage()
		defer cancel()
		var seen []window // at the last look, for the error
		if err := poll(appCtx, func() (bool, error) {
			if q := ps.exited(); q != nil {
				return false, fmt.Errorf("%s ended", q.name)
			}
			ws, err := c.windows()
			seen = ws
			for _, w := range ws {
				if (strings.Contains(strings.ToLower(w.class), a.window) || strings.Contains(strings.ToLower(w.name), a.window)) && !taken[uint32(w.id)] {
					e.windows[i] = uint32(w.id)
					return true, nil
				}
			}
			return false, err
		}); err != nil {
			return nil, p.failed(fmt.Sprintf("(process %d) showed no %s window within %v (the display's client windows at the last look: %s; what it holds: %s; the programs: %s)",
				p.cmd.Process.Pid, a.window, StartTimeout, windowList(seen), c.census(), ps.summary()), err)
		}
		if a.at != nil {
			if err := xdotool(ctx, ps.env, "windowmove", "--sync", strconv.Itoa(int(e.windows[i])), strconv.Itoa(a.at[0]), strconv.Itoa(a.at[1])); err != nil {
				return nil, err
			}
		}
	}
	settle := k.settle
	if settle == 0 {
		settle = 2 * time.Second
	}
	if _, err := c.settle(500*time.Millisecond, settle, 20*time.Millisecond); err != nil {
		return nil, err
	}
	if p := ps.exited(); p != nil {
		return nil, p.failed("before the recording started", nil)
	}
	sc := k.script(e, cfg.Duration)

	meta := recording.Meta{Width: cfg.Width, Height: cfg.Height, Refresh: cfg.Rate, Kind: k.Name, App: App(k), Script: sc.words, Command: Command(cfg)}
	f, err := os.Create(cfg.Out)
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	defer f.Close()
	cw := &countWriter{w: f}
	wr, err := recording.NewWriter(cw, meta)
	if err != nil {
		return nil, err
	}
	res := &Result{Meta: meta}
	if err := run(ctx, cfg, c, ps, sc, wr, cw, res); err != nil {
		return nil, err
	}
	if err := wr.Close(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	// The figures are the file's own, as its reader sees them.
	rec, err := recording.Open(cfg.Out)
	if err != nil {
		return nil, err
	}
	res.Frames, res.Bytes, res.Duration = len(rec.Frames), cw.n.Load(), rec.Duration()
	d, err := xscreen.Open(display)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if res.Screen, err = d.Get(); err != nil {
		return nil, err
	}
	return res, nil
}

// childEnv is the applications' environment: this process's, on the
// recording's display, with a home of their own in the temporary folder
// (Chromium's profile, mpv's and nano's state go there, not into the
// user's), a plain prompt and a UTF-8 locale.
func childEnv(display, home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "DISPLAY", "HOME", "XAUTHORITY", "WAYLAND_DISPLAY", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "PS1", "LANG", "LC_ALL":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DISPLAY="+display, "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_CACHE_HOME="+home+"/.cache",
		"PS1=user@lab:\\w$ ", "LANG=C.UTF-8")
}

// windowList writes windows for an error: each one's id, class and name.
func windowList(ws []window) string {
	if len(ws) == 0 {
		return "none"
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("%#x %q %q", uint32(w.id), w.class, w.name)
	}
	return strings.Join(parts, ", ")
}

// poll calls ready every 20 ms until it says yes, fails, or ctx ends: a
// bounded wait for what X has no event for (a window manager's
// announcement, a window of a given class).
func poll(ctx context.Context, ready func() (bool, error)) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		ok, err := ready()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// xdotool runs xdotool with args on the recording's display.
func xdotool(ctx context.Context, env []string, args ...string) error {
	var stderr tail
	cmd := exec.CommandContext(ctx, "xdotool", args...)
	cmd.Env = env
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("record: xdotool %s: %w; its standard error ends:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

// countWriter counts the bytes written through it, for the progress
// lines; it is read from another goroutine than the one that writes.
// pending is what the recording's Writer holds in its buffer after its
// last frame (Writer.Buffered), set by the goroutine that writes, so that
// a progress line counts the frames encoded, not only the buffers flushed.
type countWriter struct {
	w       io.Writer
	n       atomic.Int64
	pending atomic.Int64
}

// size is the bytes encoded so far: written, and held in the buffer.
func (c *countWriter) size() int64 { return c.n.Load() + c.pending.Load() }

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// shot is a frame on its way to the writer.
type shot struct {
	at     time.Duration
	f      *codec.Frame
	damage []codec.Rect
}

// framePool bounds the frames in flight between the capture and the
// writer: while the writer is busy with a burst (a page scrolled, a new
// picture), the capture goes on into spare frames, and once they are
// used up it waits, its damage accumulating for the next tick.
const framePool = 6

// run records for cfg.Duration: it plays the script, takes the
// damage at each tick and hands each changed frame to a writer goroutine,
// so that encoding a large change does not delay the ticks after it.
func run(ctx context.Context, cfg Config, c *capture, ps *procs, sc script, wr *recording.Writer, cw *countWriter, res *Result) error {
	interval := time.Duration(float64(time.Second) / cfg.Rate)
	shots := make(chan shot, framePool)
	free := make(chan *codec.Frame, framePool+2)
	for range framePool + 2 {
		free <- codec.NewFrame(c.w, c.h)
	}
	var werr error
	written := make(chan struct{})
	go func() {
		defer close(written)
		var prev *codec.Frame
		for s := range shots {
			if werr == nil {
				werr = wr.Add(s.at, s.f, s.damage)
				cw.pending.Store(int64(wr.Buffered()))
			}
			// The writer keeps the frame it was last given to encode the
			// next against: the one before goes back.
			if prev != nil {
				free <- prev
			}
			prev = s.f
		}
	}()
	sent := 0
	send := func(at time.Duration, damage []codec.Rect) {
		sent++
		f := <-free
		copy(f.Pix, c.screen.Pix)
		shots <- shot{at: at, f: f, damage: damage}
	}

	scriptCtx, stopScript := context.WithCancel(ctx)
	defer stopScript()
	scriptErr := make(chan error, 1)
	var scriptDone sync.WaitGroup
	start := time.Now()
	scriptDone.Add(1)
	go func() {
		defer scriptDone.Done()
		scriptErr <- play(scriptCtx, ps.env, start, sc.actions)
	}()
	// The first frame is the whole screen as it stands.
	send(0, []codec.Rect{{W: c.w, H: c.h}})

	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastTick := int64(0)
	nextReport := time.Second
	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			err = ctx.Err()
			break loop
		case e := <-scriptErr:
			if e != nil && !errors.Is(e, context.Canceled) {
				err = e
				break loop
			}
		case now := <-tick.C:
			// The frame's instant is its tick's on the grid from the
			// start, whatever the ticker's own lateness.
			n := int64((now.Sub(start) + interval/2) / interval)
			if n <= lastTick {
				continue
			}
			res.Late += int(n - lastTick - 1)
			lastTick = n
			at := time.Duration(n) * interval
			if at >= cfg.Duration {
				break loop
			}
			rs, e := c.take()
			if e != nil {
				err = e
				break loop
			}
			if rs != nil {
				send(at, rs)
			}
			if p := ps.exited(); p != nil {
				err = p.failed("while recording", nil)
				break loop
			}
			if at >= nextReport {
				fmt.Fprintf(cfg.Progress, "lab record: %s %v of %v, %d frames, %.2f MB\n",
					cfg.Kind, at.Round(time.Second), cfg.Duration, sent, float64(cw.size())/1e6)
				nextReport += time.Second
			}
		}
	}
	stopScript()
	scriptDone.Wait()
	if err == nil {
		err = finish(c, ps, interval, &lastTick, send)
	}
	close(shots)
	<-written
	if err == nil {
		err = werr
	}
	return err
}

// finish stops the applications (SIGSTOP: nothing more is drawn, and
// their windows stay) and records what they drew before, at the ticks
// after the end, until a tick finds no damage: the recording's last frame
// is then the screen as it stays.
func finish(c *capture, ps *procs, interval time.Duration, lastTick *int64, send func(time.Duration, []codec.Rect)) error {
	ps.signalApps(syscall.SIGSTOP)
	for range 60 {
		rs, err := c.take()
		if err != nil {
			return err
		}
		if rs == nil {
			return nil
		}
		*lastTick++
		send(time.Duration(*lastTick)*interval, rs)
	}
	return errors.New("record: the screen still changed a second after the applications were stopped")
}

// play runs the script's actions at their instants from start, one after
// another: an action that runs late (xdotool typing a word) delays the
// next only if it runs past its instant.
func play(ctx context.Context, env []string, start time.Time, actions []action) error {
	for _, a := range actions {
		if d := time.Until(start.Add(a.at)); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
		if err := xdotool(ctx, env, a.args...); err != nil {
			return err
		}
	}
	return nil
}
