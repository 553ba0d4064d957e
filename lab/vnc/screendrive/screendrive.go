// Package screendrive owns what lab vnc shows on the VNC server's X
// display: the screen model's timeline (agent/screen) painted as real
// pictures (agent/screen/paint), each version stamped with a marker that
// a client reads back from its decoded framebuffer, and drawn on the
// display (lab/vnc/xscreen) at the version's instant.
//
// The marker makes a real VNC server measurable without clock sync: the
// driver notes when the X server has drawn a version (after its XSync),
// the client notes when it decoded the update that carries the version's
// marker, both on this host's clock, and the difference is that version's
// capture-to-display latency.
//
// A version's pixels are a pure function of the seed, the timeline and
// the version number (the painter's guarantee), so two runs with the same
// seed draw the same frames; a driver that falls behind skips versions, as
// a compositor would, without changing the ones it draws.
package screendrive

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/dirty"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/paint"
)

// Refresh is the driven display's refresh rate: 30 Hz, what two cores
// shared by the X server, the VNC server, the client and the driver keep
// up with at the default size.
const Refresh = 30.0

// Timelines names the screen timelines the driver knows, for -screen
// (lab vnc also takes "scenario": the scenario's own screen section).
var Timelines = []string{"mix", "still", "typing", "scrolling", "video", "animation"}

// Timeline returns the named timeline over d: one source for the whole
// run, or "mix", the desktop's day in five equal parts: typing, scrolling,
// a video in the lower right corner, a full-screen animation, and a still
// screen.
func Timeline(name string, d time.Duration) ([]screen.Phase, error) {
	one := map[string]screen.Source{
		"still":     screen.Still{},
		"typing":    screen.Typing{},
		"scrolling": screen.Scrolling{},
		"video":     screen.Video{Region: screen.Rect{X: 0.6, Y: 0.6, W: 0.35, H: 0.35}},
		"animation": screen.Animation{},
	}
	if src, ok := one[name]; ok {
		return []screen.Phase{{Source: src}}, nil
	}
	if name != "mix" {
		return nil, fmt.Errorf("screendrive: unknown screen %q (%s)", name, strings.Join(Timelines, ", "))
	}
	var out []screen.Phase
	for i, k := range []string{"typing", "scrolling", "video", "animation", "still"} {
		out = append(out, screen.Phase{At: d * time.Duration(i) / 5, Source: one[k]})
	}
	return out, nil
}

// Config describes the screen to drive.
type Config struct {
	// Width and Height are the display's size in pixels, even, at least
	// screen.Cols x screen.Rows; zero means 640 x 360.
	Width, Height int
	// Timeline is the screen's content; empty means a still screen.
	Timeline []screen.Phase
	// Seed seeds the screen's random sources and its pictures.
	Seed uint64
}

// Frame is one version of the screen as drawn.
type Frame struct {
	// Version is the screen model's version (1 is the desktop at time
	// zero), which the frame's marker carries.
	Version uint64
	// At is when the screen model presents it, from time zero.
	At time.Duration
	// Pix is the picture, marker included. It is the Frames' own and
	// changes at the next call of Frame.
	Pix *codec.Frame
	// Dirty are the tiles that differ from the version painted before it.
	Dirty []codec.Rect
}

// Frames paints the versions of a screen.
type Frames struct {
	model   *screen.Model
	painter *paint.Painter
	cur     *codec.Frame
	prev    *codec.Frame
	dirty   []codec.Rect
}

// New makes the screen of cfg.
func New(cfg Config) (*Frames, error) {
	if cfg.Width == 0 && cfg.Height == 0 {
		cfg.Width, cfg.Height = 640, 360
	}
	m, err := screen.New(cfg.Seed, screen.Config{Name: "vnc-screen", Refresh: Refresh, Timeline: cfg.Timeline})
	if err != nil {
		return nil, fmt.Errorf("screendrive: %w", err)
	}
	p, err := paint.New(cfg.Seed, m, paint.Config{Width: cfg.Width, Height: cfg.Height})
	if err != nil {
		return nil, fmt.Errorf("screendrive: %w", err)
	}
	if cfg.Width < MarkerWidth || cfg.Height < MarkerHeight {
		return nil, fmt.Errorf("screendrive: %dx%d has no room for the %dx%d marker", cfg.Width, cfg.Height, MarkerWidth, MarkerHeight)
	}
	m.Latest(0) // presents version 1, the desktop, for Frame(1)
	return &Frames{model: m, painter: p}, nil
}

// Size is the pictures' size.
func (f *Frames) Size() (w, h int) { return f.painter.Size() }

// Latest is the newest version presented at or before t (from time zero).
func (f *Frames) Latest(t time.Duration) uint64 { return f.model.Latest(t).Version }

// Next is when the first version after t appears; false when the screen
// never changes again.
func (f *Frames) Next(t time.Duration) (time.Duration, bool) { return f.model.Next(t) }

// Changes is when versions 1 to n appeared, n the newest at or before t
// (screen.Model.Changes).
func (f *Frames) Changes(t time.Duration) []time.Duration { return f.model.Changes(t) }

// Frame paints version v (at or after the last one painted) with its
// marker, and lists what differs from the last one painted (everything for
// the first).
func (f *Frames) Frame(v uint64) (Frame, error) {
	img, _, ok := f.model.Version(v)
	if !ok {
		return Frame{}, fmt.Errorf("screendrive: version %d not presented", v)
	}
	pic, err := f.painter.Paint(v)
	if err != nil {
		return Frame{}, fmt.Errorf("screendrive: %w", err)
	}
	f.prev, f.cur = f.cur, f.prev
	if f.cur == nil {
		f.cur = codec.NewFrame(pic.W, pic.H)
	}
	pic.ToRGB(f.cur.Pix)
	Stamp(f.cur, uint32(v))
	if f.prev == nil {
		f.dirty = dirty.Detect(nil, f.cur, f.dirty)
	} else {
		f.dirty = dirty.Detect(f.prev, f.cur, f.dirty)
	}
	return Frame{Version: v, At: img.At, Pix: f.cur, Dirty: dirty.Merge(f.dirty, nil)}, nil
}

// Display is where frames are drawn: *xscreen.Display.
type Display interface {
	Put(f *codec.Frame, rects []codec.Rect) error
	Sync() error
}

// Draw draws version v now (the desktop, version 1, before the timeline
// starts) and returns it as drawn.
func Draw(d Display, f *Frames, v uint64) (Drawn, error) {
	fr, err := f.Frame(v)
	if err != nil {
		return Drawn{}, err
	}
	if err := d.Put(fr.Pix, fr.Dirty); err != nil {
		return Drawn{}, err
	}
	if err := d.Sync(); err != nil {
		return Drawn{}, err
	}
	return Drawn{Version: v, At: fr.At, Drawn: time.Now()}, nil
}

// Drawn is one version as drawn: its number, when the screen model
// presents it, and when the X server had drawn it (after Sync), on this
// host's clock.
type Drawn struct {
	Version uint64
	At      time.Duration
	Drawn   time.Time
}

// Drive draws the versions of f after version after (0: from the first)
// on d until ctx ends or until (from epoch), each at its instant: version
// v is drawn once epoch+At has come, or later when the driver is behind,
// in which case the versions it missed are skipped and the newest due is
// drawn. It returns at until, or when ctx ends. Each drawn version is
// passed to drawn (which must not block for long). Paced false draws every version, one after the other, as fast as
// the display takes them, for a test of what is drawn.
func Drive(ctx context.Context, d Display, f *Frames, epoch time.Time, until time.Duration, after uint64, paced bool, drawn func(Drawn)) error {
	last := after
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		elapsed := time.Since(epoch)
		v := max(last, f.Latest(min(elapsed, until)))
		if !paced {
			// Every version in turn, up to the last one of the run.
			v = min(last+1, f.Latest(until))
		}
		if v == last {
			if !paced || elapsed >= until {
				return nil
			}
			// The next change, or the run's end when the screen stays
			// as it is: a still screen is watched for all of until.
			next, ok := f.Next(elapsed)
			if !ok || next > until {
				next = until
			}
			timer.Reset(time.Until(epoch.Add(next)))
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
			}
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		dr, err := Draw(d, f, v)
		if err != nil {
			return err
		}
		drawn(dr)
		last = v
	}
}

// The marker: MarkerBits blocks of MarkerBlock x MarkerBlock pixels in a
// row at the screen's top left, white for a 1 and black for a 0, the
// version number's bits from the most significant; and under them the
// same blocks inverted, so that a marker half drawn (a server that read
// the screen while the driver drew it) does not read as a number.
const (
	MarkerBits   = 24
	MarkerBlock  = 4
	MarkerWidth  = MarkerBits * MarkerBlock
	MarkerHeight = 2 * MarkerBlock
)

// Stamp paints n's marker on f.
func Stamp(f *codec.Frame, n uint32) {
	for i := range MarkerBits {
		on := n>>(MarkerBits-1-i)&1 == 1
		for row := range 2 {
			c := uint32(0)
			if on == (row == 0) {
				c = 0xFFFFFF
			}
			for y := row * MarkerBlock; y < (row+1)*MarkerBlock; y++ {
				for x := i * MarkerBlock; x < (i+1)*MarkerBlock; x++ {
					f.Pix[y*f.W+x] = c
				}
			}
		}
	}
}

// Read reads the marker on f; false when there is none (every pixel of
// each block must be exactly black or white, and the second row the
// first's inverse).
func Read(f *codec.Frame) (uint32, bool) {
	if f.W < MarkerWidth || f.H < MarkerHeight {
		return 0, false
	}
	var n uint32
	for i := range MarkerBits {
		var bit [2]uint32
		for row := range 2 {
			c := f.Pix[row*MarkerBlock*f.W+i*MarkerBlock]
			for y := row * MarkerBlock; y < (row+1)*MarkerBlock; y++ {
				for x := i * MarkerBlock; x < (i+1)*MarkerBlock; x++ {
					if f.Pix[y*f.W+x] != c {
						return 0, false
					}
				}
			}
			switch c {
			case 0xFFFFFF:
				bit[row] = 1
			case 0:
			default:
				return 0, false
			}
		}
		if bit[0] == bit[1] {
			return 0, false
		}
		n = n<<1 | bit[0]
	}
	return n, true
}
