// Package glass watches a viewer's X display for the lab's version markers
// (lab/vnc/screendrive): where a remote desktop's viewer presents the
// server's screen, the marker it shows says which version is on the glass,
// and the first instant it shows is that version's presentation. Against
// the instant the server's display had drawn the version, that is the
// glass-to-glass latency of the whole stack: server, network, viewer's
// decode, scaling and drawing.
//
// A viewer may put the picture anywhere in its window, scale it and
// convert its colours (a lossy encoding blurs the marker's edges), so the
// marker is found by a search of the whole display (Find), at the block
// sizes a scaled viewer gives, and read by the mean luma of each block's
// centre against thresholds (Read), never by exact pixel values. Once
// found it is watched by reading its rectangle alone, which costs far
// less than the whole display (Watch).
//
// The display is read with MIT-SHM where the X server offers it (Xvfb
// does, to a client on the same host): the server copies the pixels into
// shared memory, with no image on the wire. GetImage serves otherwise.
package glass

import (
	"encoding/binary"
	"fmt"

	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
	"golang.org/x/sys/unix"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// Display is a connection that reads an X display's root window: what the
// viewer has presented. It is not safe for concurrent use.
type Display struct {
	*xscreen.Conn
	// seg and mem are the MIT-SHM segment, as large as the whole display;
	// mem is nil when the X server offers no MIT-SHM.
	seg shm.Seg
	mem []byte
}

// Open connects to display (":5"), of the one pixel format xscreen
// speaks, and sets up MIT-SHM when the server offers it.
func Open(display string) (*Display, error) {
	c, err := xscreen.Connect(display)
	if err != nil {
		return nil, err
	}
	d := &Display{Conn: c}
	d.attachSHM()
	return d, nil
}

// attachSHM sets up a shared segment the size of the display; it leaves
// mem nil when anything fails (no MIT-SHM, a server on another host),
// and Grab then uses GetImage.
func (d *Display) attachSHM() {
	if shm.Init(d.X) != nil {
		return
	}
	size := d.W * d.H * 4
	id, err := unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
	if err != nil {
		return
	}
	// The segment goes once both ends detach: marked for removal at once,
	// it outlives neither this process nor the X server.
	defer func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) }()
	mem, err := unix.SysvShmAttach(id, 0, 0)
	if err != nil {
		return
	}
	seg, err := shm.NewSegId(d.X)
	if err == nil {
		err = shm.AttachChecked(d.X, seg, uint32(id), false).Check()
	}
	if err != nil {
		_ = unix.SysvShmDetach(mem)
		return
	}
	d.seg, d.mem = seg, mem
}

// SHM says whether Grab reads through shared memory.
func (d *Display) SHM() bool { return d.mem != nil }

// Close ends the connection and detaches the shared segment.
func (d *Display) Close() {
	if d.mem != nil {
		shm.Detach(d.X, d.seg)
	}
	d.X.Close()
	if d.mem != nil {
		_ = unix.SysvShmDetach(d.mem)
		d.mem = nil
	}
}

// Whole is the display's whole area, for Grab.
func (d *Display) Whole() codec.Rect { return codec.Rect{W: d.W, H: d.H} }

// Grab reads rectangle r of the display into f, which it resizes to r's
// size (allocating only when f is too small). When it returns, the
// pixels are what the X server held while it carried out the request.
func (d *Display) Grab(r codec.Rect, f *codec.Frame) error {
	if r.W <= 0 || r.H <= 0 || r.X < 0 || r.Y < 0 || r.X+r.W > d.W || r.Y+r.H > d.H {
		return fmt.Errorf("glass: rectangle %+v outside the %dx%d display", r, d.W, d.H)
	}
	n := r.W * r.H
	if cap(f.Pix) < n {
		f.Pix = make([]uint32, n)
	}
	f.W, f.H, f.Pix = r.W, r.H, f.Pix[:n]
	var data []byte
	if d.mem != nil {
		if _, err := shm.GetImage(d.X, xproto.Drawable(d.Root), int16(r.X), int16(r.Y), uint16(r.W), uint16(r.H),
			0xFFFFFFFF, xproto.ImageFormatZPixmap, d.seg, 0).Reply(); err != nil {
			return fmt.Errorf("glass: reading the display: %w", err)
		}
		data = d.mem[:n*4]
	} else {
		rep, err := xproto.GetImage(d.X, xproto.ImageFormatZPixmap, xproto.Drawable(d.Root),
			int16(r.X), int16(r.Y), uint16(r.W), uint16(r.H), 0xFFFFFFFF).Reply()
		if err != nil {
			return fmt.Errorf("glass: reading the display: %w", err)
		}
		if len(rep.Data) < n*4 {
			return fmt.Errorf("glass: %d bytes for %dx%d pixels", len(rep.Data), r.W, r.H)
		}
		data = rep.Data
	}
	for i := range f.Pix {
		f.Pix[i] = binary.LittleEndian.Uint32(data[i*4:]) & 0x00FFFFFF
	}
	return nil
}
