package record

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/res"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// quietXGB silences xgb's own log, which says on standard error that no
// ~/.Xauthority exists (Xvfb needs none) and that a connection broke when
// the server ends; the capture reports its errors itself.
var quietXGB sync.Once

// capture is a connection to the display that learns what changed on the
// root window from the X DAMAGE extension and keeps a copy of the screen
// up to date by reading only that. Like xscreen, it speaks only depth 24
// at 32 bits per pixel, least significant byte first: a pixel as X sends
// it is a codec.Frame's 0x00RRGGBB in little-endian.
type capture struct {
	conn   *xgb.Conn
	root   xproto.Window
	w, h   int
	damage damage.Damage
	region xfixes.Region
	// screen is the kept copy of the root window's pixels.
	screen *codec.Frame
}

// openCapture connects to display, asks for damage on the root window and
// reads the whole screen once.
func openCapture(display string) (_ *capture, err error) {
	quietXGB.Do(func() { xgb.Logger = log.New(io.Discard, "", 0) })
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("record: connecting to %q: %w", display, err)
	}
	defer func() {
		if err != nil {
			conn.Close()
		}
	}()
	setup := xproto.Setup(conn)
	scr := setup.DefaultScreen(conn)
	c := &capture{conn: conn, root: scr.Root, w: int(scr.WidthInPixels), h: int(scr.HeightInPixels)}
	bpp := 0
	for _, f := range setup.PixmapFormats {
		if f.Depth == scr.RootDepth {
			bpp = int(f.BitsPerPixel)
		}
	}
	if scr.RootDepth != 24 || bpp != 32 || setup.ImageByteOrder != xproto.ImageOrderLSBFirst {
		return nil, fmt.Errorf("record: %q has depth %d at %d bits per pixel, byte order %d (want 24, 32, LSB first)",
			display, scr.RootDepth, bpp, setup.ImageByteOrder)
	}
	if err := xfixes.Init(conn); err != nil {
		return nil, fmt.Errorf("record: the X server has no XFIXES extension: %w", err)
	}
	if err := damage.Init(conn); err != nil {
		return nil, fmt.Errorf("record: the X server has no DAMAGE extension: %w", err)
	}
	// Each extension must be told the version the client speaks before
	// its other requests are taken.
	if _, err := xfixes.QueryVersion(conn, 5, 0).Reply(); err != nil {
		return nil, fmt.Errorf("record: XFIXES version: %w", err)
	}
	if _, err := damage.QueryVersion(conn, 1, 1).Reply(); err != nil {
		return nil, fmt.Errorf("record: DAMAGE version: %w", err)
	}
	if c.region, err = xfixes.NewRegionId(conn); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	if err := xfixes.CreateRegionChecked(conn, c.region, nil).Check(); err != nil {
		return nil, fmt.Errorf("record: creating a region: %w", err)
	}
	if c.damage, err = damage.NewDamageId(conn); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	// NonEmpty: an event only when the damage goes from empty to not, at
	// most one a tick, since each tick empties it; the rectangles are
	// fetched as a region instead, already merged by the server.
	if err := damage.CreateChecked(conn, c.damage, xproto.Drawable(c.root), damage.ReportLevelNonEmpty).Check(); err != nil {
		return nil, fmt.Errorf("record: asking for the root window's damage: %w", err)
	}
	c.screen = codec.NewFrame(c.w, c.h)
	if err := c.read([]codec.Rect{{W: c.w, H: c.h}}); err != nil {
		return nil, err
	}
	return c, nil
}

// Close ends the connection.
func (c *capture) Close() { c.conn.Close() }

// take empties the damage accumulated since the last take, reads the
// damaged rectangles onto the kept copy of the screen, and returns them,
// merged (nil when nothing was damaged).
func (c *capture) take() ([]codec.Rect, error) {
	// Subtract with no repair region moves all the damage into
	// c.region and empties it: what is drawn from now on is the next
	// take's. Reading the pixels after it never misses a change: one
	// drawn meanwhile is read now and damaged again for the next take.
	damage.Subtract(c.conn, c.damage, 0, c.region)
	rep, err := xfixes.FetchRegion(c.conn, c.region).Reply()
	if err != nil {
		return nil, fmt.Errorf("record: fetching the damage: %w", err)
	}
	// The NonEmpty events say nothing the region does not; they are
	// drained so that xgb's event queue never fills.
	for {
		ev, xerr := c.conn.PollForEvent()
		if xerr != nil {
			return nil, fmt.Errorf("record: %v", xerr)
		}
		if ev == nil {
			break
		}
	}
	if len(rep.Rectangles) == 0 {
		return nil, nil
	}
	rs := make([]codec.Rect, len(rep.Rectangles))
	for i, r := range rep.Rectangles {
		rs[i] = codec.Rect{X: int(r.X), Y: int(r.Y), W: int(r.Width), H: int(r.Height)}
	}
	rs = Merge(rs, c.w, c.h)
	if len(rs) == 0 {
		return nil, nil
	}
	return rs, c.read(rs)
}

// read copies rectangles of the root window onto the kept copy. The
// requests go out together and their replies are read after, so that a
// frame's rectangles cost one round trip, not one each.
func (c *capture) read(rs []codec.Rect) error {
	type part struct {
		r      codec.Rect
		cookie xproto.GetImageCookie
	}
	var parts []part
	for _, r := range rs {
		// A reply is not bounded as a request is, but strips of about
		// 4 MB keep each one a modest buffer.
		rows := max(1, (4<<20)/(r.W*4))
		for y := r.Y; y < r.Y+r.H; y += rows {
			s := codec.Rect{X: r.X, Y: y, W: r.W, H: min(rows, r.Y+r.H-y)}
			parts = append(parts, part{s, xproto.GetImage(c.conn, xproto.ImageFormatZPixmap, xproto.Drawable(c.root),
				int16(s.X), int16(s.Y), uint16(s.W), uint16(s.H), 0xFFFFFFFF)})
		}
	}
	for _, p := range parts {
		rep, err := p.cookie.Reply()
		if err != nil {
			return fmt.Errorf("record: reading the screen: %w", err)
		}
		r := p.r
		if len(rep.Data) < r.W*r.H*4 {
			return fmt.Errorf("record: %d bytes for %dx%d pixels", len(rep.Data), r.W, r.H)
		}
		for y := range r.H {
			row := c.screen.Pix[(r.Y+y)*c.w+r.X : (r.Y+y)*c.w+r.X+r.W]
			src := rep.Data[y*r.W*4:]
			for x := range row {
				row[x] = binary.LittleEndian.Uint32(src[x*4:]) & 0x00FFFFFF
			}
		}
	}
	return nil
}

// settle waits until the screen has not changed for quiet, polling the
// damage every poll, for at most limit: a page still loading or a window
// still being drawn is not what a recording should start with. It keeps
// the screen's copy up to date meanwhile and says whether it settled.
func (c *capture) settle(quiet, limit, poll time.Duration) (bool, error) {
	start := time.Now()
	last := start
	for {
		rs, err := c.take()
		if err != nil {
			return false, err
		}
		now := time.Now()
		if rs != nil {
			last = now
		}
		if now.Sub(last) >= quiet {
			return true, nil
		}
		if now.Sub(start) >= limit {
			return false, nil
		}
		// A bounded poll: the DAMAGE extension has no "quiet for so long"
		// event to wait for.
		time.Sleep(poll)
	}
}

// window is a top-level client window found on the display.
type window struct {
	id    xproto.Window
	class string
	name  string
}

// windows lists the viewable windows that carry a WM_CLASS (the clients'
// own, under the window manager's frames).
func (c *capture) windows() ([]window, error) {
	var out []window
	var walk func(w xproto.Window, depth int) error
	walk = func(w xproto.Window, depth int) error {
		tree, err := xproto.QueryTree(c.conn, w).Reply()
		if err != nil {
			return nil // the window went away meanwhile
		}
		for _, ch := range tree.Children {
			attr, err := xproto.GetWindowAttributes(c.conn, ch).Reply()
			if err != nil || attr.MapState != xproto.MapStateViewable {
				continue
			}
			// A client's window carries a WM_CLASS or, for a program that
			// sets none (glmark2), at least a WM_NAME; the window
			// manager's frames around them carry neither.
			cls, err1 := xproto.GetProperty(c.conn, false, ch, xproto.AtomWmClass, xproto.AtomString, 0, 256).Reply()
			name, err2 := xproto.GetProperty(c.conn, false, ch, xproto.AtomWmName, xproto.GetPropertyTypeAny, 0, 256).Reply()
			if err1 == nil && err2 == nil && (len(cls.Value) > 0 || len(name.Value) > 0) {
				out = append(out, window{id: ch, class: strings.ReplaceAll(strings.TrimRight(string(cls.Value), "\x00"), "\x00", "."),
					name: string(name.Value)})
				continue
			}
			if depth < 3 {
				if err := walk(ch, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(c.root, 0)
}

// probeClass is the WM_CLASS of the window that asks the window manager
// whether it manages windows yet (managesWindows).
const probeClass = "lab-record-probe\x00LabRecordProbe\x00"

// newProbe creates and maps a small window for managesWindows.
func (c *capture) newProbe() (xproto.Window, error) {
	id, err := xproto.NewWindowId(c.conn)
	if err != nil {
		return 0, fmt.Errorf("record: %w", err)
	}
	if err := xproto.CreateWindowChecked(c.conn, 0, id, c.root, 0, 0, 16, 16, 0, xproto.WindowClassInputOutput, 0, 0, nil).Check(); err != nil {
		return 0, fmt.Errorf("record: creating a window: %w", err)
	}
	xproto.ChangeProperty(c.conn, xproto.PropModeReplace, id, xproto.AtomWmClass, xproto.AtomString, 8, uint32(len(probeClass)), []byte(probeClass))
	if err := xproto.MapWindowChecked(c.conn, id).Check(); err != nil {
		return 0, fmt.Errorf("record: mapping a window: %w", err)
	}
	return id, nil
}

// reaskProbe is how often awaitFramed asks for the probe again.
const reaskProbe = 250 * time.Millisecond

// awaitFramed waits, polling, until the window manager frames the probe,
// asking for it again every reaskProbe, or until ctx ends or ended says
// a program ended. Announcing itself on the root window (wmRunning) does
// not say that openbox answers requests to map windows yet: a request
// made right after the announcement can go unanswered for good (a CI run
// saw xclock's window left unmapped on the root for 30 s), and one made
// again is answered (TestOpenboxStartup measures both).
func (c *capture) awaitFramed(ctx context.Context, probe xproto.Window, ended func() error) error {
	asked := time.Now()
	return poll(ctx, func() (bool, error) {
		if err := ended(); err != nil {
			return false, err
		}
		again := time.Since(asked) >= reaskProbe
		if again {
			asked = time.Now()
		}
		return c.managesWindows(probe, again)
	})
}

// managesWindows says whether the window manager has taken the probe in:
// reparented it into a frame of its own; remap asks for it again (unmap,
// map: a new request).
func (c *capture) managesWindows(probe xproto.Window, remap bool) (bool, error) {
	tree, err := xproto.QueryTree(c.conn, probe).Reply()
	if err != nil {
		return false, fmt.Errorf("record: %w", err)
	}
	if tree.Parent != c.root {
		return true, nil
	}
	if remap {
		xproto.UnmapWindow(c.conn, probe)
		xproto.MapWindow(c.conn, probe)
	}
	return false, nil
}

// destroyProbe destroys the probe; the window manager then drops its frame.
func (c *capture) destroyProbe(probe xproto.Window) error {
	if err := xproto.DestroyWindowChecked(c.conn, probe).Check(); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	return nil
}

// census says what the display holds, for an error when an expected
// window did not show: every window at any depth that carries a WM_CLASS
// or WM_NAME, with its map state, and the process ids of the server's
// clients (X-Resource), so that a program that never connected, one that
// connected but never mapped its window, and a window manager that never
// mapped the frame around it can be told apart.
func (c *capture) census() string {
	var b strings.Builder
	states := map[byte]string{xproto.MapStateUnmapped: "unmapped", xproto.MapStateUnviewable: "unviewable", xproto.MapStateViewable: "viewable"}
	n := 0
	var walk func(w xproto.Window, depth int)
	walk = func(w xproto.Window, depth int) {
		tree, err := xproto.QueryTree(c.conn, w).Reply()
		if err != nil || depth > 8 {
			return
		}
		for _, ch := range tree.Children {
			cls, err1 := xproto.GetProperty(c.conn, false, ch, xproto.AtomWmClass, xproto.AtomString, 0, 256).Reply()
			name, err2 := xproto.GetProperty(c.conn, false, ch, xproto.AtomWmName, xproto.GetPropertyTypeAny, 0, 256).Reply()
			attr, err3 := xproto.GetWindowAttributes(c.conn, ch).Reply()
			if err1 == nil && err2 == nil && err3 == nil && (len(cls.Value) > 0 || len(name.Value) > 0) && n < 20 {
				n++
				fmt.Fprintf(&b, "%#x %q %q %s at depth %d; ", uint32(ch), strings.ReplaceAll(strings.TrimRight(string(cls.Value), "\x00"), "\x00", "."),
					name.Value, states[attr.MapState], depth)
			}
			walk(ch, depth+1)
		}
	}
	walk(c.root, 0)
	if n == 0 {
		b.WriteString("no window with a class or name; ")
	}
	if err := res.Init(c.conn); err != nil {
		fmt.Fprintf(&b, "no X-Resource extension to list the clients (%v)", err)
		return b.String()
	}
	rep, err := res.QueryClientIds(c.conn, 1, []res.ClientIdSpec{{Client: 0, Mask: res.ClientIdMaskLocalClientPID}}).Reply()
	if err != nil {
		fmt.Fprintf(&b, "the clients not listed (%v)", err)
		return b.String()
	}
	var pids []string
	for _, id := range rep.Ids {
		if len(id.Value) > 0 {
			pids = append(pids, strconv.Itoa(int(id.Value[0])))
		}
	}
	fmt.Fprintf(&b, "%d clients with process ids %s", len(rep.Ids), strings.Join(pids, " "))
	return b.String()
}

// wmRunning says whether a window manager has announced itself on the
// root window (_NET_SUPPORTING_WM_CHECK, which openbox sets once it
// manages the screen).
func (c *capture) wmRunning() (bool, error) {
	atom, err := xproto.InternAtom(c.conn, false, uint16(len("_NET_SUPPORTING_WM_CHECK")), "_NET_SUPPORTING_WM_CHECK").Reply()
	if err != nil {
		return false, fmt.Errorf("record: %w", err)
	}
	p, err := xproto.GetProperty(c.conn, false, c.root, atom.Atom, xproto.AtomWindow, 0, 1).Reply()
	if err != nil {
		return false, fmt.Errorf("record: %w", err)
	}
	return len(p.Value) >= 4, nil
}
