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
