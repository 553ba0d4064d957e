package screen

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

// SourceRecording is the kind of the source that replays a recorded
// desktop (Recording).
const SourceRecording = "recording"

// SourceRecordingMotion is the kind of a recorded change that is mostly
// motion: at least MotionShare of its changed pixels are the frame
// before shifted (recording.Frame.Moved), a dragged window or a scrolled
// page, which an encoder codes as a shift rather than as new content. An
// encoder model may give it a cost of its own (encoder.ContentCost); one
// that does not sizes it as new content, as any recorded change.
const SourceRecordingMotion = "recording-motion"

// MotionShare is the share of a recorded change's pixels that a shift must
// explain for the change to be SourceRecordingMotion: most of it.
const MotionShare = 0.5

// SourceRecordingScroll is the kind of a recorded change that is motion
// (as SourceRecordingMotion) over most of the screen: a page scrolled, its
// damage at least ScrollShare of the screen, where a dragged window moves
// a part of it and uncovers what was beneath. An encoder codes the two
// differently enough (OpenH264: a 720p page jump 10-13 KB, a window move
// 1.3-1.8 KB) that one motion cost fits one and not the other.
const SourceRecordingScroll = "recording-scroll"

// ScrollShare is the share of the screen a moving change's damage must
// cover to be SourceRecordingScroll.
const ScrollShare = 0.9

// Recording replays a recorded desktop (agent/screen/recording) as a
// phase: the screen changes when the recording did, where its damage
// says, with the detail its pixels had. Only the recording's index is
// read, never its pixels, so a phase costs what a painted one does; a
// painter (agent/screen/paint) paints the recorded pixels themselves,
// asking the screen which frame a version shows (Model.RecordedFrame).
//
// The changes: the frame showing at Offset as a whole-screen change at
// the phase's start (a viewer that joins sees the whole recorded screen
// at once), then every later frame whose pixels changed (Frame.Changed
// above 0: damage redrawn the same is no change), at its instant, its
// damage rectangles in fractions of the recorded screen's size, its
// complexity DetailComplexity of its detail, its Fill RecordedFill's
// (the damaged pixels that changed) unless it moved, its kind RecordedKind's:
// SourceRecordingScroll or SourceRecordingMotion when a shift of the frame
// before explains most of it (Frame.Moved at least MotionShare), the
// source's own otherwise. When the recording ends and
// the phase goes on, it plays again from its first frame, which is then a
// whole-screen change like the first: a real change of everything
// (whatever the last frame and the first have in common), so a phase
// longer than its recording has a keyframe-sized change at each turn.
// A recording of one frame is a still picture and never turns.
type Recording struct {
	// Recording is the recording's index, from recording.Open; it is only
	// read, so one index serves any number of screens at once.
	Recording *recording.Recording
	// Offset is where in the recording the phase starts, from its first
	// frame: below the recording's length.
	Offset time.Duration
	// Once plays the recording once: after its last frame the screen keeps
	// it. The zero value plays it again from its start (loop).
	Once bool
}

// Kind implements Source.
func (Recording) Kind() string { return SourceRecording }

// span is the recording's length from its first frame: the last frame's
// instant plus a refresh interval, for which it shows.
func (r Recording) span() time.Duration {
	return r.Recording.Duration() - r.Recording.Frames[0].At
}

// rel is frame i's instant from the first frame.
func (r Recording) rel(i int) time.Duration {
	return r.Recording.Frames[i].At - r.Recording.Frames[0].At
}

func (r Recording) check() error {
	switch {
	case r.Recording == nil:
		return errors.New("no recording")
	case len(r.Recording.Frames) == 0:
		return fmt.Errorf("recording %s has no frames", r.Recording.Path)
	case r.Recording.Meta.Width <= 0 || r.Recording.Meta.Height <= 0:
		return fmt.Errorf("recording %s: size %dx%d", r.Recording.Path, r.Recording.Meta.Width, r.Recording.Meta.Height)
	case r.Offset < 0 || r.Offset >= r.span():
		return fmt.Errorf("offset %v outside the recording's length [0, %v)", r.Offset, r.span())
	}
	return nil
}

// Start implements Source.
func (r Recording) Start(Env) (func() (Change, bool), error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	frames := r.Recording.Frames
	w, h := float64(r.Recording.Meta.Width), float64(r.Recording.Meta.Height)
	whole := []Rect{{0, 0, 1, 1}}
	span := r.span()
	// The first change shows the frame at the offset: its whole screen's
	// detail is the first frame's where no later damage up to the offset
	// covered it (wholeDetail).
	first := r.frameAt(r.Offset)
	startDetail := r.wholeDetail(first)
	i := first + 1    // the next frame to play
	base := -r.Offset // the phase instant of the current turn's first frame
	started := false  // the first change is given
	turns := len(frames) > 1 && !r.Once
	return func() (Change, bool) {
		if !started {
			started = true
			return Change{At: 0, Regions: whole, Complexity: DetailComplexity(startDetail)}, true
		}
		for {
			if i == len(frames) {
				if !turns {
					return Change{}, false
				}
				base += span
				i = 1
				return Change{At: base, Regions: whole, Complexity: DetailComplexity(frames[0].Detail)}, true
			}
			f := &frames[i]
			at := base + r.rel(i)
			i++
			if !(f.Changed > 0) || len(f.Damage) == 0 {
				continue
			}
			regions := make([]Rect, 0, len(f.Damage))
			for _, d := range f.Damage {
				regions = append(regions, Rect{X: float64(d.X) / w, Y: float64(d.Y) / h, W: float64(d.W) / w, H: float64(d.H) / h})
			}
			c := Change{At: at, Regions: regions, Complexity: DetailComplexity(f.Detail)}
			if k := RecordedKind(f, r.Recording.Meta); k != SourceRecording {
				c.Kind = k
			} else {
				c.Fill = RecordedFill(f, r.Recording.Meta)
			}
			return c, true
		}
	}, nil
}

// RecordedFill is the share of a recorded frame's damaged pixels that
// changed (Frame.Changed over Frame.DamagedShare, at most 1): the Fill of
// its change. Moving content is not weighed so: its kinds' costs are per
// damaged area carried, fitted so (the content costs of the encoder's
// presets).
func RecordedFill(f *recording.Frame, m recording.Meta) float64 {
	damaged := f.DamagedShare(m)
	if !(damaged > 0) {
		return 1
	}
	return min(f.Changed/damaged, 1)
}

// RecordedKind is the kind the screen model gives a recorded frame's
// change: SourceRecordingScroll or SourceRecordingMotion when a shift of
// the frame before explains most of it (by the share of the screen its
// damage covers), SourceRecording otherwise.
func RecordedKind(f *recording.Frame, m recording.Meta) string {
	if !(f.Moved >= MotionShare) {
		return SourceRecording
	}
	if f.DamagedShare(m) >= ScrollShare {
		return SourceRecordingScroll
	}
	return SourceRecordingMotion
}

// frameAt is the frame showing pos after the first frame: the last whose
// instant is not after it.
func (r Recording) frameAt(pos time.Duration) int {
	frames := r.Recording.Frames
	return sort.Search(len(frames), func(i int) bool { return r.rel(i) > pos }) - 1
}

// Frame is the frame of the recording the phase shows t after its start
// (the frame the last change at or before t came from), false before the
// start. It depends on t and the parameters only.
func (r Recording) Frame(t time.Duration) (int, bool) {
	if t < 0 || r.check() != nil {
		return 0, false
	}
	pos := r.Offset + t
	if span := r.span(); pos >= span {
		if r.Once || len(r.Recording.Frames) == 1 {
			return len(r.Recording.Frames) - 1, true
		}
		pos %= span
	}
	return r.frameAt(pos), true
}

// wholeCols and wholeRows are the grid on which wholeDetail paints the
// damage of the frames before an offset: coarse, since it only weighs
// their details by area.
const wholeCols, wholeRows = 48, 27

// wholeDetail is the detail of the whole screen at frame last: each part
// of the screen at the detail of the last frame up to last whose damage
// covered it, the first frame's (the whole screen) where none did. The
// index keeps one detail per frame, the mean over its damage, so this is
// an estimate, weighted by area on a coarse grid; it walks back from last
// and stops once every cell is covered.
func (r Recording) wholeDetail(last int) float64 {
	frames := r.Recording.Frames
	if last == 0 {
		return frames[0].Detail
	}
	w, h := r.Recording.Meta.Width, r.Recording.Meta.Height
	var covered [wholeRows][wholeCols]bool
	var sum float64
	n := 0
	for i := last; i >= 0 && n < wholeCols*wholeRows; i-- {
		f := &frames[i]
		if i > 0 && !(f.Changed > 0) {
			continue
		}
		for _, d := range f.Damage {
			x0, x1 := d.X*wholeCols/w, min(wholeCols, ((d.X+d.W)*wholeCols+w-1)/w)
			y0, y1 := d.Y*wholeRows/h, min(wholeRows, ((d.Y+d.H)*wholeRows+h-1)/h)
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					if !covered[y][x] {
						covered[y][x] = true
						sum += f.Detail
						n++
					}
				}
			}
		}
	}
	if n == 0 {
		return frames[0].Detail
	}
	return sum / float64(n)
}

// detailPoint is one point of the table from a recorded picture's detail
// (recording.Detail, the mean absolute luma difference of neighbouring
// pixels) to the screen model's complexity.
type detailPoint struct{ detail, complexity float64 }

// detailTable maps detail to complexity so that a recorded region and a
// painted one of the same complexity have the same detail: it is the
// painter's own (agent/screen/paint at 1280x720), measured by
// TestDetailTable, which prints it again:
//
//	go test ./agent/screen/paint -run TestDetailTable -v
//
// Each point is the mean detail, over seeds 1 to 3 and four instants, of
// the whole screen painted by the kinds that paint that complexity as
// themselves: text (the desktop, typing, scrolling) below
// frames.PhotoDetail (0.7), pictures (an animation, a video, a photo)
// from it. A point whose detail is not above every point of lower
// complexity is left out, so that the table rises: the smooth pictures
// of 0.7 and 0.8 (gradients with little grain, detail 1 to 5) have less
// detail than text of 0.1 (docs/recording.md, "Detail to complexity").
var detailTable = []detailPoint{
	{0.01, 0.0},
	{2.56, 0.1},
	{5.91, 0.2},
	{8.21, 0.3},
	{10.70, 0.4},
	{13.88, 0.5},
	{16.10, 0.6},
	{25.44, 0.9},
	{47.95, 1.0},
}

// DetailComplexity is the complexity of content whose detail is detail
// (recording.Detail): piecewise linear between the points of the
// painter's table (detailTable), 0 at no detail, 1 from the detail of the
// painter's noisiest picture on.
func DetailComplexity(detail float64) float64 {
	t := detailTable
	switch {
	case !(detail > t[0].detail):
		return t[0].complexity
	case detail >= t[len(t)-1].detail:
		return t[len(t)-1].complexity
	}
	i := sort.Search(len(t), func(i int) bool { return t[i].detail >= detail })
	a, b := t[i-1], t[i]
	return a.complexity + (b.complexity-a.complexity)*(detail-a.detail)/(b.detail-a.detail)
}

// DetailTable returns the table behind DetailComplexity, as pairs of
// detail and complexity, for the test that measures the painter again and
// for the docs.
func DetailTable() [][2]float64 {
	out := make([][2]float64, len(detailTable))
	for i, p := range detailTable {
		out[i] = [2]float64{p.detail, p.complexity}
	}
	return out
}
