// Package xscreen owns the lab's hold on a real X display (Xvfb's, or
// Xvnc's): pictures put on its root window, the round trip that says the X
// server has drawn them (Sync), and the display's contents read back
// (Get), through github.com/jezek/xgb. It is what lab vnc draws on and
// checks a VNC server's updates against.
//
// It speaks only to displays of depth 24 at 32 bits per pixel in the
// least-significant-byte-first image order, what Xvfb and Xvnc give on
// this machine: a pixel there is B, G, R, 0, exactly a codec.Frame's
// 0x00RRGGBB in little-endian, so nothing is converted.
package xscreen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"sync"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// Display is a connection to an X display's root window. It is not safe
// for concurrent use.
type Display struct {
	*Conn
	gc xproto.Gcontext
	// maxBytes is the longest request the server takes, in bytes.
	maxBytes int
	buf      []byte
}

// Conn is a connection to an X display of the one pixel format this
// package speaks, and the display's root window: what Display draws on,
// and what a reader of the display (lab/vnc/glass) reads.
type Conn struct {
	X     *xgb.Conn
	Root  xproto.Window
	Depth byte
	W, H  int
}

// ErrFormat: the display is not of the one pixel format this package
// speaks.
var ErrFormat = errors.New("xscreen: unsupported display format")

// quietXGB silences xgb's own log: it writes to standard error that no
// ~/.Xauthority exists (the lab's X servers need none) and that a
// connection broke when a server ends, which Open, Sync and Get report as
// errors anyway.
var quietXGB sync.Once

// Connect connects to display (":1"; "" means $DISPLAY) and checks its
// format: depth 24 at 32 bits per pixel, least significant byte first.
func Connect(display string) (_ *Conn, err error) {
	quietXGB.Do(func() { xgb.Logger = log.New(io.Discard, "", 0) })
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("xscreen: connecting to %q: %w", display, err)
	}
	setup := xproto.Setup(conn)
	scr := setup.DefaultScreen(conn)
	bpp := 0
	for _, f := range setup.PixmapFormats {
		if f.Depth == scr.RootDepth {
			bpp = int(f.BitsPerPixel)
		}
	}
	if scr.RootDepth != 24 || bpp != 32 || setup.ImageByteOrder != xproto.ImageOrderLSBFirst {
		conn.Close()
		return nil, fmt.Errorf("%w: %q has depth %d at %d bits per pixel, byte order %d (want 24, 32, LSB first)",
			ErrFormat, display, scr.RootDepth, bpp, setup.ImageByteOrder)
	}
	return &Conn{X: conn, Root: scr.Root, Depth: scr.RootDepth, W: int(scr.WidthInPixels), H: int(scr.HeightInPixels)}, nil
}

// Open connects to display (":1"; "" means $DISPLAY), to draw on it.
func Open(display string) (_ *Display, err error) {
	c, err := Connect(display)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.X.Close()
		}
	}()
	d := &Display{Conn: c, maxBytes: int(xproto.Setup(c.X).MaximumRequestLength) * 4}
	if d.gc, err = xproto.NewGcontextId(c.X); err != nil {
		return nil, fmt.Errorf("xscreen: %w", err)
	}
	if err := xproto.CreateGCChecked(c.X, d.gc, xproto.Drawable(c.Root), 0, nil).Check(); err != nil {
		return nil, fmt.Errorf("xscreen: creating a graphics context: %w", err)
	}
	return d, nil
}

// Size is the root window's width and height.
func (d *Conn) Size() (w, h int) { return d.W, d.H }

// Close ends the connection.
func (d *Conn) Close() { d.X.Close() }

// Put draws the rectangles rects of f (a frame of the display's size) at
// the same places on the root window. The requests are queued: Sync says
// when the server has drawn them. They go from the last rectangle to the
// first and from the bottom up, so that the top left corner of the first
// rectangle is drawn last: a VNC server that reads the screen while the
// requests arrive sees the lab's marker (lab/vnc/screendrive), which sits
// there, only once everything else is drawn.
func (d *Display) Put(f *codec.Frame, rects []codec.Rect) error {
	if f.W != d.W || f.H != d.H {
		return fmt.Errorf("xscreen: a %dx%d frame on a %dx%d display", f.W, f.H, d.W, d.H)
	}
	for i := len(rects) - 1; i >= 0; i-- {
		r := rects[i]
		if r.W <= 0 || r.H <= 0 {
			continue
		}
		if r.X < 0 || r.Y < 0 || r.X+r.W > d.W || r.Y+r.H > d.H {
			return fmt.Errorf("xscreen: rectangle %+v outside the %dx%d display", r, d.W, d.H)
		}
		// A PutImage request is a 24-byte header and the rows: as many
		// rows as fit the server's longest request.
		rows := max(1, (d.maxBytes-24)/(r.W*4))
		for end := r.Y + r.H; end > r.Y; end -= rows {
			y := max(r.Y, end-rows)
			n := end - y
			d.buf = d.buf[:0]
			for yy := y; yy < y+n; yy++ {
				for _, p := range f.Pix[yy*f.W+r.X : yy*f.W+r.X+r.W] {
					d.buf = binary.LittleEndian.AppendUint32(d.buf, p)
				}
			}
			xproto.PutImage(d.X, xproto.ImageFormatZPixmap, xproto.Drawable(d.Root), d.gc,
				uint16(r.W), uint16(n), int16(r.X), int16(y), 0, d.Depth, d.buf)
		}
	}
	return nil
}

// Sync returns once the X server has carried out every request sent before
// it (a round trip: the server answers in order), and reports the first
// error any of them caused.
func (d *Display) Sync() error {
	if _, err := xproto.GetInputFocus(d.X).Reply(); err != nil {
		return fmt.Errorf("xscreen: sync: %w", err)
	}
	for {
		ev, xerr := d.X.PollForEvent()
		if xerr != nil {
			return fmt.Errorf("xscreen: %v", xerr)
		}
		if ev == nil {
			return nil
		}
	}
}

// Get reads the root window's pixels: what the X server holds, which is
// what a VNC server on this display has to send.
func (d *Display) Get() (*codec.Frame, error) {
	f := codec.NewFrame(d.W, d.H)
	// A reply is not bounded as a request is, but a strip at a time keeps
	// each one a modest buffer.
	rows := max(1, (4<<20)/(d.W*4))
	for y := 0; y < d.H; y += rows {
		n := min(rows, d.H-y)
		rep, err := xproto.GetImage(d.X, xproto.ImageFormatZPixmap, xproto.Drawable(d.Root),
			0, int16(y), uint16(d.W), uint16(n), 0xFFFFFFFF).Reply()
		if err != nil {
			return nil, fmt.Errorf("xscreen: reading the display: %w", err)
		}
		if len(rep.Data) < d.W*n*4 {
			return nil, fmt.Errorf("xscreen: %d bytes for %d rows of %d pixels", len(rep.Data), n, d.W)
		}
		for i := range d.W * n {
			f.Pix[y*d.W+i] = binary.LittleEndian.Uint32(rep.Data[i*4:]) & 0x00FFFFFF
		}
	}
	return f, nil
}
