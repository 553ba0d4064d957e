// Package recordingtest writes small screen recordings for tests: the file
// made, written and closed, and its index opened, in one call.
package recordingtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

// Add adds one frame, as recording.Writer.Add: taken at at, with its damage.
type Add func(at time.Duration, f *codec.Frame, damage []codec.Rect)

// Write records into path (its folder made if need be) a recording of
// meta whose frames frames adds, closes it and returns its index. Any
// error fails tb.
func Write(tb testing.TB, path string, meta recording.Meta, frames func(add Add)) *recording.Recording {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := recording.NewWriter(out, meta)
	if err != nil {
		tb.Fatal(err)
	}
	frames(func(at time.Duration, f *codec.Frame, damage []codec.Rect) {
		tb.Helper()
		if err := w.Add(at, f, damage); err != nil {
			tb.Fatal(err)
		}
	})
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	rec, err := recording.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	return rec
}

// Drag writes into path a 320x180 recording of a window dragged across a
// flat desktop, at 60 Hz: the desktop alone at 0, a 90x60 window of detail
// at (10, 10) at every (new content), then the window moved 6 pixels right
// and 3 down every every after that, moves times (each a change that a
// shift of the frame before explains). It returns the recording's index.
func Drag(tb testing.TB, path string, every time.Duration, moves int) *recording.Recording {
	tb.Helper()
	const w, h, bg = 320, 180, 0x304050
	frame := func(x, y int, window bool) *codec.Frame {
		f := codec.NewFrame(w, h)
		for i := range f.Pix {
			f.Pix[i] = bg
		}
		if window {
			for yy := range 60 {
				for xx := range 90 {
					f.Pix[(y+yy)*w+x+xx] = uint32((xx*xx+yy*7)%253)*0x010203 + uint32(xx^yy)
				}
			}
		}
		return f
	}
	if 10+6*moves+90 > w || 10+3*moves+60 > h {
		tb.Fatalf("recordingtest: %d moves take the window off the screen", moves)
	}
	meta := recording.Meta{Width: w, Height: h, Refresh: 60, Kind: "test"}
	return Write(tb, path, meta, func(add Add) {
		add(0, frame(0, 0, false), nil)
		add(every, frame(10, 10, true), []codec.Rect{{X: 10, Y: 10, W: 90, H: 60}})
		for k := 1; k <= moves; k++ {
			add(time.Duration(k+1)*every, frame(10+6*k, 10+3*k, true), []codec.Rect{{X: 10 + 6*(k-1), Y: 10 + 3*(k-1), W: 96, H: 63}})
		}
	})
}
