package vnc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/lab/vnc/glass"
	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/lab/vnc/xscreen"
)

// DefaultDrain is how long the client may take, once the screen's last
// change is drawn, to show it when Config.Drain is zero.
const DefaultDrain = 15 * time.Second

// Update is one FramebufferUpdate the client decoded.
type Update struct {
	// At is when it was decoded, from time zero.
	At time.Duration
	// Bytes is its size on the wire; Rects its rectangles.
	Bytes int64
	Rects []rfb.Rect
	// Version is the marker its framebuffer showed after it (0: none).
	Version uint64
	// Changed counts the pixels it changed: 0 for an update that sent
	// again what the client had.
	Changed int
}

// changes counts the pixels each update changes, keeping a copy of the
// framebuffer as the last update left it, region by region.
type changes struct{ snap *codec.Frame }

// count compares the update's rectangles of fb with the copy, and brings
// the copy up to date.
func (ch *changes) count(fb *codec.Frame, rects []rfb.Rect) int {
	if ch.snap == nil {
		ch.snap = codec.NewFrame(fb.W, fb.H)
	}
	n := 0
	for _, r := range rects {
		for y := r.Y; y < r.Y+r.H; y++ {
			a, b := fb.Pix[y*fb.W+r.X:y*fb.W+r.X+r.W], ch.snap.Pix[y*fb.W+r.X:y*fb.W+r.X+r.W]
			for i := range a {
				if a[i] != b[i] {
					n++
				}
			}
			copy(b, a)
		}
	}
	return n
}

// observed is what one session saw.
type observed struct {
	// epoch is time zero, when the timeline started: once the client
	// showed the desktop (version 1), warmup after it was drawn.
	epoch   time.Time
	warmup  time.Duration
	drawn   []screendrive.Drawn
	updates []Update
	changes []time.Duration
	ran     time.Duration
	// drained is false when the client had not shown the last version
	// drawn when the drain ended.
	drained bool
	// errorBound and watch are a glass-to-glass session's: the largest
	// bound of a sighting's lateness (glass.Sighting.Error) and the
	// watch's counts.
	errorBound time.Duration
	watch      glass.WatchStats
	// presented is ViewerDelay's: when it had drawn each version's marker
	// on the viewer's display, from time zero (delayViewer.presented).
	presented map[uint64][2]time.Duration
	// presses are an input-to-photon run's key presses, their shown
	// instants not yet filled in (pressRecords does).
	presses []Press
}

// sessionConfig is one session over a connection already made.
type sessionConfig struct {
	conn     net.Conn
	password string
	encoding int32
	display  string
	frames   *screendrive.Frames
	duration time.Duration
	drain    time.Duration
	// paced false draws every version as fast as the display takes them
	// (screendrive.Drive).
	paced bool
}

// session runs the client against the server while the driver draws the
// screen, until the screen's last change is shown (or the drain ends, or
// ctx). The connection is closed on return.
func session(ctx context.Context, cfg sessionConfig) (*observed, error) {
	defer cfg.conn.Close()
	c, err := rfb.Handshake(cfg.conn, rfb.Config{Password: cfg.password,
		Encodings: []int32{cfg.encoding, rfb.EncodingCopyRect}})
	if err != nil {
		return nil, err
	}
	disp, err := xscreen.Open(cfg.display)
	if err != nil {
		return nil, err
	}
	defer disp.Close()
	fw, fh := c.Size()
	dw, dh := disp.Size()
	if fw != dw || fh != dh {
		return nil, fmt.Errorf("vnc: the server's framebuffer is %dx%d, its display %dx%d", fw, fh, dw, dh)
	}

	var (
		mu        sync.Mutex
		o         = &observed{}
		lastDrawn uint64
		shown     uint64
		done      bool
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = cfg.conn.SetReadDeadline(time.Now()) })
	defer stop()

	if err := c.Request(false); err != nil {
		return nil, err
	}
	// Warm-up: the desktop (version 1) is drawn, and the timeline starts
	// once the client shows all of it. A server's first update is not its steady
	// state (x11vnc, for one, takes seconds to settle after a client
	// connects), and the first update of a session is the desktop anyway.
	first, err := screendrive.Draw(disp, cfg.frames, 1)
	if err != nil {
		return nil, err
	}
	var track changes
	_ = cfg.conn.SetReadDeadline(time.Now().Add(StartTimeout))
	if ctx.Err() != nil { // cancelled before the deadline was set: AfterFunc's is gone
		return nil, ctx.Err()
	}
	for shown < 1 {
		m, err := c.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("vnc: waiting for the desktop's first update: %w", err)
		}
		if m.Type != rfb.MsgFramebufferUpdate {
			continue
		}
		track.count(c.Framebuffer(), m.Rects)
		if v, ok := screendrive.Read(c.Framebuffer()); ok && v == 1 {
			// The desktop is shown once all of it is: the marker may
			// come in an update before the rest of it.
			want, err := disp.Get()
			if err != nil {
				return nil, err
			}
			if slices.Equal(want.Pix, c.Framebuffer().Pix) {
				shown = 1
			}
		}
		if err := c.Request(true); err != nil {
			return nil, err
		}
	}
	_ = cfg.conn.SetReadDeadline(time.Time{})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	o.epoch = time.Now()
	o.warmup = o.epoch.Sub(first.Drawn)
	lastDrawn = 1
	driveErr := make(chan error, 1)
	go func() {
		err := screendrive.Drive(ctx, disp, cfg.frames, o.epoch, cfg.duration, 1, cfg.paced, func(d screendrive.Drawn) {
			mu.Lock()
			o.drawn = append(o.drawn, d)
			lastDrawn = d.Version
			mu.Unlock()
		})
		mu.Lock()
		done = true
		// The client stops at the last version shown, or when the drain
		// ends; at once when it has shown it already (a still screen,
		// where no update will come to wake it) or the run is cancelled.
		if shown >= lastDrawn || ctx.Err() != nil {
			_ = cfg.conn.SetReadDeadline(time.Now())
		} else {
			_ = cfg.conn.SetReadDeadline(time.Now().Add(cfg.drain))
		}
		mu.Unlock()
		driveErr <- err
	}()

	var readErr error
	for {
		m, err := c.ReadMessage()
		now := time.Now()
		if err != nil {
			readErr = err
			break
		}
		if m.Type != rfb.MsgFramebufferUpdate {
			continue
		}
		u := Update{At: now.Sub(o.epoch), Bytes: m.Bytes, Rects: m.Rects, Changed: track.count(c.Framebuffer(), m.Rects)}
		if v, ok := screendrive.Read(c.Framebuffer()); ok {
			u.Version = uint64(v)
		}
		o.updates = append(o.updates, u)
		if err := c.Request(true); err != nil {
			readErr = err
			break
		}
		mu.Lock()
		shown = max(shown, u.Version)
		finished := done && shown >= lastDrawn
		mu.Unlock()
		if finished {
			break
		}
	}
	derr := <-driveErr
	o.ran = time.Since(o.epoch)
	mu.Lock()
	o.drained = shown >= lastDrawn
	mu.Unlock()
	o.changes = cfg.frames.Changes(cfg.duration)
	switch {
	case derr != nil:
		return nil, fmt.Errorf("vnc: drawing the screen: %w", derr)
	case ctx.Err() != nil:
		return o, ctx.Err() // interrupted: what was seen so far
	case readErr != nil && !errors.Is(readErr, os.ErrDeadlineExceeded):
		return nil, readErr
	}
	return o, nil
}
