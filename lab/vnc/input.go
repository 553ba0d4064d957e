package vnc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// Input to photon: the lab presses a key on the viewer's display (XTest),
// as a user at the viewer would; the viewer sends it to the server; the
// server's X display delivers it; the lab's reactor there draws the next
// marker at once; and the watch sees that marker on the viewer's display.
// Each press is timed at its three instants, on this host's clock: pressed
// at the viewer, arrived at the server (the reactor had the key event) and
// drawn there, and shown at the viewer. The uplink is pressed to arrived,
// the downlink drawn to shown.

// Press is one key press's instants, from time zero.
type Press struct {
	// Version is the marker the reactor drew for it.
	Version uint64
	// Pressed is when the lab pressed the key on the viewer's display
	// (its XTest request carried out: the round trip after it returned).
	Pressed time.Duration
	// Arrived is when the reactor on the server's display had the key
	// event; Drawn when its marker was drawn there (0: the key never
	// arrived).
	Arrived, Drawn time.Duration
	// Shown is when the viewer's display showed the marker (0: never).
	Shown time.Duration
}

// DefaultPressEvery is the mean time between two key presses of an input
// run: well apart, so that each press's marker shows before the next
// press even on the bad networks.
const DefaultPressEvery = 500 * time.Millisecond

// keycodeOf finds the keycode of keysym on display c's keyboard.
func keycodeOf(c *xscreen.Conn, keysym xproto.Keysym) (xproto.Keycode, error) {
	setup := xproto.Setup(c.X)
	first, n := setup.MinKeycode, int(setup.MaxKeycode-setup.MinKeycode)+1
	m, err := xproto.GetKeyboardMapping(c.X, first, byte(n)).Reply()
	if err != nil {
		return 0, fmt.Errorf("vnc: the keyboard's mapping: %w", err)
	}
	per := int(m.KeysymsPerKeycode)
	for i := 0; i*per < len(m.Keysyms); i++ {
		for _, k := range m.Keysyms[i*per : (i+1)*per] {
			if k == keysym {
				return first + xproto.Keycode(i), nil
			}
		}
	}
	return 0, fmt.Errorf("vnc: no key for keysym %#x on the display", keysym)
}

// reactor draws a new marker on the server's display whenever a key is
// pressed there: the input's echo, as an application drawing a typed
// character.
type reactor struct {
	events *xscreen.Conn
	disp   *xscreen.Display
	frame  *codec.Frame
	mu     sync.Mutex
	next   uint64
	// arrived and drawn are each version's instants.
	arrived, drawn map[uint64]time.Time
	done           chan struct{}
	once           sync.Once
}

// startReactor listens for key presses on the server's display (its root
// window: with no window manager the focus follows the pointer, which is
// over the root) and draws versions from next on, one per press, on disp.
func startReactor(display string, disp *xscreen.Display, first *codec.Frame, next uint64) (*reactor, error) {
	ev, err := xscreen.Connect(display)
	if err != nil {
		return nil, err
	}
	if err := xproto.ChangeWindowAttributesChecked(ev.X, ev.Root, xproto.CwEventMask, []uint32{xproto.EventMaskKeyPress}).Check(); err != nil {
		ev.Close()
		return nil, fmt.Errorf("vnc: listening for keys on %s: %w", display, err)
	}
	r := &reactor{events: ev, disp: disp, frame: first, next: next, arrived: map[uint64]time.Time{}, drawn: map[uint64]time.Time{},
		done: make(chan struct{})}
	go r.run()
	return r, nil
}

func (r *reactor) run() {
	defer close(r.done)
	marker := []codec.Rect{{W: screendrive.MarkerWidth, H: screendrive.MarkerHeight}}
	for {
		e, err := r.events.X.WaitForEvent()
		if e == nil && err == nil {
			return // the connection closed
		}
		if _, ok := e.(xproto.KeyPressEvent); !ok {
			continue
		}
		at := time.Now()
		r.mu.Lock()
		v := r.next
		r.next++
		r.arrived[v] = at
		r.mu.Unlock()
		screendrive.Stamp(r.frame, uint32(v))
		if r.disp.Put(r.frame, marker) != nil || r.disp.Sync() != nil {
			return
		}
		r.mu.Lock()
		r.drawn[v] = time.Now()
		r.mu.Unlock()
	}
}

// close stops the reactor and returns its record; it may be called more
// than once.
func (r *reactor) close() (arrived, drawn map[uint64]time.Time) {
	r.once.Do(r.events.Close)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.arrived, r.drawn
}

// typist presses keys on the viewer's display through XTest.
type typist struct {
	c   *xscreen.Conn
	key xproto.Keycode
}

func newTypist(display string) (*typist, error) {
	c, err := xscreen.Connect(display)
	if err != nil {
		return nil, err
	}
	if err := xtest.Init(c.X); err != nil {
		c.Close()
		return nil, fmt.Errorf("vnc: the viewer's display has no XTest: %w", err)
	}
	key, err := keycodeOf(c, 0x61) // "a"
	if err != nil {
		c.Close()
		return nil, err
	}
	return &typist{c: c, key: key}, nil
}

// click clicks the first button at the display's centre: a web viewer
// takes the keyboard once its page is clicked.
func (t *typist) click() error {
	w, h := t.c.Size()
	xtest.FakeInput(t.c.X, xproto.MotionNotify, 0, 0, t.c.Root, int16(w/2), int16(h/2), 0)
	xtest.FakeInput(t.c.X, xproto.ButtonPress, 1, 0, t.c.Root, 0, 0, 0)
	xtest.FakeInput(t.c.X, xproto.ButtonRelease, 1, 0, t.c.Root, 0, 0, 0)
	return t.sync()
}

// press presses and releases the key, and returns when the X server had
// carried out the press.
func (t *typist) press() (time.Time, error) {
	xtest.FakeInput(t.c.X, xproto.KeyPress, byte(t.key), 0, t.c.Root, 0, 0, 0)
	if err := t.sync(); err != nil {
		return time.Time{}, err
	}
	at := time.Now()
	xtest.FakeInput(t.c.X, xproto.KeyRelease, byte(t.key), 0, t.c.Root, 0, 0, 0)
	return at, t.sync()
}

func (t *typist) sync() error {
	if _, err := xproto.GetInputFocus(t.c.X).Reply(); err != nil {
		return fmt.Errorf("vnc: pressing keys on the viewer's display: %w", err)
	}
	return nil
}

// typeAway presses n keys, one every mean on average (uniform from half to
// one and a half times it, seeded), from epoch on, until n or ctx.
func (t *typist) typeAway(ctx context.Context, n int, mean time.Duration, seed uint64) ([]time.Time, error) {
	rng := rand.New(rand.NewPCG(seed, 0x1e9))
	var out []time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for range n {
		timer.Reset(mean/2 + time.Duration(rng.Int64N(int64(mean))))
		select {
		case <-ctx.Done():
			return out, nil
		case <-timer.C:
		}
		at, err := t.press()
		if err != nil {
			return out, err
		}
		out = append(out, at)
	}
	return out, nil
}

// typist and reactor of an input-to-photon run, once the viewer shows the
// desktop.
type inputRun struct {
	re      *reactor
	pressed []time.Time
}

// typeAndReact starts the reactor on the server's display and the typist
// on the viewer's, and makes cfg.presses presses; the reactor runs on,
// for the last presses' keys still on their way, until finish.
func typeAndReact(ctx context.Context, cfg glassConfig, disp *xscreen.Display) (*inputRun, error) {
	w, h := disp.Size()
	re, err := startReactor(cfg.server.Display, disp, codec.NewFrame(w, h), 2)
	if err != nil {
		return nil, err
	}
	in := &inputRun{re: re}
	ty, err := newTypist(cfg.display.Display)
	if err != nil {
		return in, err
	}
	defer ty.c.Close()
	if cfg.click {
		if err := ty.click(); err != nil {
			return in, err
		}
	}
	in.pressed, err = ty.typeAway(ctx, cfg.presses, cfg.pressEvery, cfg.seed)
	return in, err
}

// finish stops the reactor and gives o each press's instants but the
// shown one, which the watch's sightings give (pressRecords).
func (in *inputRun) finish(o *observed) {
	arrived, drawn := in.re.close()
	for i, at := range in.pressed {
		v := uint64(2 + i)
		p := Press{Version: v, Pressed: at.Sub(o.epoch)}
		if a, ok := arrived[v]; ok {
			p.Arrived = a.Sub(o.epoch)
		}
		if d, ok := drawn[v]; ok {
			p.Drawn = d.Sub(o.epoch)
		}
		o.presses = append(o.presses, p)
	}
}

// pressRecords makes a frame of every press: captured when pressed at the
// viewer, encoded (the stage's end) when its key arrived at the server,
// sent when the echo was drawn there, and displayed when the viewer's
// display showed it, the first sighting of its marker or a later one's;
// its latency is input to photon. A press whose key never arrived, or
// whose echo never showed, is a skip.
func pressRecords(o *observed) ([]result.FrameRecord, []result.EventRecord) {
	frames := []result.FrameRecord{}
	events := []result.EventRecord{}
	for _, p := range o.presses {
		captured := max(p.Pressed, 1) // 0 would read as "did not happen"
		f := result.FrameRecord{Seq: p.Version, Version: p.Version, Quality: 1, Captured: captured}
		if p.Drawn > 0 {
			f.EncodeEnd, f.Sent, f.Arrived = max(p.Arrived, captured), p.Drawn, p.Drawn
		}
		for _, u := range o.updates {
			if u.Version >= p.Version && p.Drawn > 0 {
				f.Displayed = max(u.At, p.Drawn)
				f.Latency = f.Displayed - captured
				break
			}
		}
		if f.Displayed == 0 {
			reason := SkipInputLost
			if p.Drawn > 0 {
				reason = SkipEchoNotShown
			}
			events = append(events, result.EventRecord{At: captured, Kind: result.EventSkip, Reason: reason, Seq: p.Version})
		}
		frames = append(frames, f)
	}
	return frames, events
}
