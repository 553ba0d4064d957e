// Package screenstats measures what a screen's content asks of an
// encoder, the same way for the lab's painted screens (agent/screen/paint)
// and for recorded real desktops (agent/screen/recording): how often it
// changes, how much of it changes, how detailed the new content is, and
// how much of a change a shift of the picture before explains (a scroll,
// a pan: what an encoder's motion search finds).
//
// Everything is measured on the luma plane of the I420 pictures the
// encoders take, so the two kinds of screen are compared as an encoder
// sees them.
package screenstats

import (
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/paint"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// MaxShift is the largest shift, in pixels either way, the predictability
// search tries: a quarter of a 720p screen's height, what a fast scroll or
// a window move covers in one frame at 60 Hz.
const MaxShift = 180

// Stats sums up a screen's pictures.
type Stats struct {
	// Seconds is the span measured.
	Seconds float64
	// Changes counts the pictures that differ from the one before.
	Changes int
	// ChangesPerSecond is Changes over Seconds.
	ChangesPerSecond float64
	// Changed is the mean share of the screen's pixels that a change
	// alters (luma differs).
	Changed float64
	// Detail is the mean detail of a change's new content: of the
	// samples inside the bounding box of those that changed
	// (recording.DetailLuma: 0 flat, 219 a one-pixel checkerboard).
	Detail float64
	// Predictable is the share of all changed pixels, over all changes,
	// that the best single vertical or horizontal shift (up to MaxShift)
	// of the picture before gives exactly.
	Predictable float64
}

// String is the stats in a line.
func (s Stats) String() string {
	return fmt.Sprintf("%.1f changes/s, %.1f%% of the screen each, detail %.1f, %.0f%% predictable by a shift",
		s.ChangesPerSecond, 100*s.Changed, s.Detail, 100*s.Predictable)
}

// Meter accumulates Stats over pictures offered in order.
type Meter struct {
	w, h          int
	prev          []byte
	first, last   time.Duration
	n             int
	changed       float64
	detail        float64
	pred, changes float64 // pixels predicted by a shift, pixels changed
	rowsA, rowsB  []uint64
}

// NewMeter measures pictures of w x h luma samples.
func NewMeter(w, h int) *Meter {
	return &Meter{w: w, h: h}
}

// Add offers the luma plane y of the picture shown from at on, with the
// rectangles damaged since the picture before (nil: the whole screen),
// where it looks for the samples that changed. The meter keeps y; the caller must not change it afterwards. A picture
// equal to the one before counts as no change.
func (m *Meter) Add(at time.Duration, y []byte, damage []codec.Rect) {
	if m.prev == nil {
		m.prev, m.first, m.last = y, at, at
		return
	}
	m.last = at
	prev := m.prev
	m.prev = y
	if damage == nil {
		damage = []codec.Rect{{X: 0, Y: 0, W: m.w, H: m.h}}
	}
	box, changed := m.diff(prev, y, damage)
	if changed == 0 {
		return
	}
	m.n++
	m.changed += float64(changed) / float64(m.w*m.h)
	m.detail += recording.DetailLuma(y, m.w, m.h, []codec.Rect{box})
	m.changes += float64(changed)
	m.pred += float64(m.predicted(prev, y, box))
}

// diff is the bounding box of the luma samples inside damage that differ
// between a and b, and how many differ (pixels under two rectangles
// counted once).
func (m *Meter) diff(a, b []byte, damage []codec.Rect) (codec.Rect, int) {
	x0, y0, x1, y1 := m.w, m.h, -1, -1
	seen := make([]bool, m.w*m.h)
	n := 0
	for _, r := range damage {
		for y := r.Y; y < r.Y+r.H; y++ {
			for x := r.X; x < r.X+r.W; x++ {
				i := y*m.w + x
				if a[i] == b[i] || seen[i] {
					continue
				}
				seen[i] = true
				n++
				x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			}
		}
	}
	if n == 0 {
		return codec.Rect{}, 0
	}
	return codec.Rect{X: x0, Y: y0, W: x1 - x0 + 1, H: y1 - y0 + 1}, n
}

// predicted is how many of the samples of box that differ between prev
// and cur the best vertical or horizontal shift of prev gives exactly.
// The candidates come from hashing the box's rows (for a vertical shift)
// and columns (a horizontal one) and counting matches at each shift; the
// best of each is then checked sample by sample.
func (m *Meter) predicted(prev, cur []byte, box codec.Rect) int {
	best := 0
	if dy := m.bestShift(prev, cur, box, true); dy != 0 {
		best = max(best, m.shifted(prev, cur, box, 0, dy))
	}
	if dx := m.bestShift(prev, cur, box, false); dx != 0 {
		best = max(best, m.shifted(prev, cur, box, dx, 0))
	}
	return best
}

// bestShift is the non-zero shift (rows if vertical, else columns) at
// which the most lines of cur's box match lines of prev, 0 if none match.
func (m *Meter) bestShift(prev, cur []byte, box codec.Rect, vertical bool) int {
	lines, span, limit := box.H, m.h, box.Y
	if !vertical {
		lines, span, limit = box.W, m.w, box.X
	}
	// Hashes of cur's lines in the box, and of prev's over the whole
	// span (the same extent across), so a line may come from outside it.
	m.rowsA = m.lineHashes(cur, box, vertical, limit, lines, m.rowsA)
	m.rowsB = m.lineHashes(prev, box, vertical, 0, span, m.rowsB)
	where := make(map[uint64][]int, span)
	for i, h := range m.rowsB {
		where[h] = append(where[h], i)
	}
	votes := map[int]int{}
	for i, h := range m.rowsA {
		for _, j := range where[h] {
			if d := j - (limit + i); d != 0 && d >= -MaxShift && d <= MaxShift {
				votes[d]++
			}
		}
	}
	best, shift := 0, 0
	for d, v := range votes {
		// Ties go to the smaller shift, then the positive one, so the
		// answer does not depend on the map's order.
		if v > best || v == best && (abs(d) < abs(shift) || abs(d) == abs(shift) && d > shift) {
			best, shift = v, d
		}
	}
	return shift
}

// lineHashes hashes n lines of p from line from: rows across the box's
// columns if vertical, else columns down the box's rows.
func (m *Meter) lineHashes(p []byte, box codec.Rect, vertical bool, from, n int, out []uint64) []uint64 {
	out = out[:0]
	h := fnv.New64a()
	col := make([]byte, box.H)
	for i := from; i < from+n; i++ {
		h.Reset()
		if vertical {
			h.Write(p[i*m.w+box.X : i*m.w+box.X+box.W])
		} else {
			for y := range box.H {
				col[y] = p[(box.Y+y)*m.w+i]
			}
			h.Write(col)
		}
		out = append(out, h.Sum64())
	}
	return out
}

// shifted counts the samples of box that differ between prev and cur and
// that prev shifted by dx, dy (inside the picture) gives exactly.
func (m *Meter) shifted(prev, cur []byte, box codec.Rect, dx, dy int) int {
	n := 0
	for y := box.Y; y < box.Y+box.H; y++ {
		sy := y + dy
		if sy < 0 || sy >= m.h {
			continue
		}
		for x := box.X; x < box.X+box.W; x++ {
			sx := x + dx
			if sx < 0 || sx >= m.w {
				continue
			}
			i := y*m.w + x
			if cur[i] != prev[i] && cur[i] == prev[sy*m.w+sx] {
				n++
			}
		}
	}
	return n
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// Stats returns what was measured; the span runs from the first picture to
// end (the instant the last picture stops showing).
func (m *Meter) Stats(end time.Duration) Stats {
	s := Stats{Seconds: (end - m.first).Seconds(), Changes: m.n}
	if s.Seconds > 0 {
		s.ChangesPerSecond = float64(m.n) / s.Seconds
	}
	if m.n > 0 {
		s.Changed = m.changed / float64(m.n)
		s.Detail = m.detail / float64(m.n)
	}
	if m.changes > 0 {
		s.Predictable = m.pred / m.changes
	}
	return s
}

// Recorded measures a recording's first length (all of it if shorter),
// through the I420 pictures an encoder would be given.
func Recorded(rec *recording.Recording, length time.Duration) (Stats, error) {
	w, h := rec.Meta.Width&^1, rec.Meta.Height&^1
	play, err := rec.Play()
	if err != nil {
		return Stats{}, err
	}
	defer play.Close()
	end := min(length, rec.Duration())
	m := NewMeter(w, h)
	rgb := make([]uint32, w*h)
	for {
		i, f, err := play.Next()
		if err == io.EOF || err == nil && rec.Frames[i].At >= end {
			break
		}
		if err != nil {
			return Stats{}, err
		}
		for y := range h {
			copy(rgb[y*w:(y+1)*w], f.Pix[y*f.W:y*f.W+w])
		}
		pic := yuv.New(w, h)
		pic.FromRGB(rgb, w, h)
		m.Add(rec.Frames[i].At, pic.Y, clip(rec.Frames[i].Damage, w, h))
	}
	return m.Stats(end), nil
}

// clip cuts rectangles to w x h.
func clip(rs []codec.Rect, w, h int) []codec.Rect {
	out := make([]codec.Rect, 0, len(rs))
	for _, r := range rs {
		r.W, r.H = min(r.W, w-r.X), min(r.H, h-r.Y)
		if r.W > 0 && r.H > 0 {
			out = append(out, r)
		}
	}
	return out
}

// Painted measures the painter's pictures of a screen whose whole
// timeline is src, at w x h for length, as a capture at 60 Hz sees them.
func Painted(src screen.Source, seed uint64, w, h int, length time.Duration) (Stats, error) {
	scr, err := screen.New(seed, screen.Config{Timeline: []screen.Phase{{Source: src}}})
	if err != nil {
		return Stats{}, err
	}
	p, err := paint.New(seed, scr, paint.Config{Width: w, Height: h})
	if err != nil {
		return Stats{}, err
	}
	m := NewMeter(w, h)
	var prev uint64
	for k := int64(0); ; k++ {
		at := screen.Tick(k, captureRate)
		if at >= length {
			break
		}
		img, _ := scr.Since(prev, at)
		if img.Version == prev {
			continue
		}
		pic, err := p.Paint(img.Version)
		if err != nil {
			return Stats{}, err
		}
		m.Add(at, slices.Clone(pic.Y), nil)
		prev = img.Version
	}
	return m.Stats(length), nil
}

// captureRate is the rate a painted screen is sampled at: the agent's
// capture and the recordings' 60 Hz.
const captureRate = 60.0
