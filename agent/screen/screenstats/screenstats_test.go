package screenstats

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/screen"
)

// noise is a w x h luma plane of seeded noise.
func noise(w, h int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 3))
	y := make([]byte, w*h)
	for i := range y {
		y[i] = byte(16 + rng.IntN(220))
	}
	return y
}

// shift returns p moved by dx, dy (the picture's content goes up for a
// negative dy, as a page scrolled down), what comes in filled from fill.
func shift(p, fill []byte, w, h, dx, dy int) []byte {
	out := make([]byte, len(p))
	for y := range h {
		for x := range w {
			sx, sy := x-dx, y-dy
			if sx >= 0 && sx < w && sy >= 0 && sy < h {
				out[y*w+x] = p[sy*w+sx]
			} else {
				out[y*w+x] = fill[y*w+x]
			}
		}
	}
	return out
}

// TestKnownAnswers: a scroll and a pan are predicted but for what comes
// in; new noise is not predicted at all; an unchanged picture is no change.
func TestKnownAnswers(t *testing.T) {
	const w, h = 64, 48
	base := noise(w, h, 1)
	for name, c := range map[string]struct {
		next                 []byte
		changed, predictable float64
	}{
		// Up 6 rows: 42 rows come from the picture before, 6 are new.
		"scroll": {shift(base, noise(w, h, 2), w, h, 0, -6), 1, 42.0 / 48},
		// Right 4 columns: 60 of 64 come from the picture before.
		"pan":   {shift(base, noise(w, h, 3), w, h, 4, 0), 1, 60.0 / 64},
		"noise": {noise(w, h, 4), 1, 0},
	} {
		t.Run(name, func(t *testing.T) {
			m := NewMeter(w, h)
			m.Add(0, base, nil)
			m.Add(time.Second/60, base, nil) // the same picture: no change
			m.Add(time.Second/30, c.next, nil)
			s := m.Stats(time.Second)
			require.Equal(t, 1, s.Changes)
			require.Equal(t, 1.0, s.ChangesPerSecond)
			// A few samples of noise equal their old value by chance.
			require.InDelta(t, c.changed, s.Changed, 0.02)
			require.InDelta(t, c.predictable, s.Predictable, 0.02)
			require.Greater(t, s.Detail, 40.0, "noise is detailed")
		})
	}
}

// TestScrollInAWindow: a window of noise on a flat desktop scrolls up 3
// rows while one pixel far away changes: the samples that did not change,
// inside the box that bounds those that did, count neither as changed nor
// as predicted.
func TestScrollInAWindow(t *testing.T) {
	const w, h = 64, 48
	base := make([]byte, w*h)
	for i := range base {
		base[i] = 16
	}
	win := noise(32, 24, 5)
	next := make([]byte, w*h)
	copy(next, base)
	fresh := noise(32, 3, 6)
	for y := range 24 {
		copy(base[y*w:y*w+32], win[y*32:(y+1)*32])
		if y < 21 {
			copy(next[y*w:y*w+32], win[(y+3)*32:(y+4)*32])
		} else {
			copy(next[y*w:y*w+32], fresh[(y-21)*32:(y-20)*32])
		}
	}
	next[45*w+60] = 200
	m := NewMeter(w, h)
	m.Add(0, base, nil)
	m.Add(time.Second/60, next, nil)
	s := m.Stats(time.Second)
	changed := 0
	for i := range base {
		if base[i] != next[i] {
			changed++
		}
	}
	require.InDelta(t, float64(changed)/(w*h), s.Changed, 1e-12)
	require.InDelta(t, 21.0*32/float64(changed), s.Predictable, 0.02)
}

// TestPaintedKinds: the painter's scrolling is mostly a shift of the
// picture before and its typing a sliver of the screen at a time; the
// same seed gives the same figures.
func TestPaintedKinds(t *testing.T) {
	scroll, err := Painted(screen.Scrolling{}, 1, 320, 180, 2*time.Second)
	require.NoError(t, err)
	require.Greater(t, scroll.Predictable, 0.5, "scrolling: %v", scroll)
	typing, err := Painted(screen.Typing{}, 1, 320, 180, 2*time.Second)
	require.NoError(t, err)
	require.Less(t, typing.Changed, 0.05, "typing: %v", typing)
	again, err := Painted(screen.Typing{}, 1, 320, 180, 2*time.Second)
	require.NoError(t, err)
	require.Equal(t, typing, again)
	t.Logf("scrolling: %v; typing: %v", scroll, typing)
}
