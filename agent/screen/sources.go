package screen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Source makes the changes of one phase of a timeline. Its exported fields
// are its parameters, whose zero values mean the documented defaults; a
// Source holds no state, so one value can start any number of screens.
type Source interface {
	// Kind names the source ("animation", "typing", ...), for seeds and
	// messages.
	Kind() string
	// Start checks the parameters and returns the phase's changes in order:
	// each call gives the next change, with At counted from the phase's
	// start and never decreasing, or false when the source will not change
	// the screen again. The screen stops calling it at the next phase.
	Start(env Env) (func() (Change, bool), error)
}

// Env is what a screen hands a source when its phase starts.
type Env struct {
	// Refresh is the display's refresh rate in Hz.
	Refresh float64
	// Rand is the phase's own source, seeded by the run's seed, the
	// screen's name and the phase's place.
	Rand *rand.Rand
}

// Change is one change of content made by a source.
type Change struct {
	// At is when the content changes, from the start of the phase. It is
	// presented at the next refresh.
	At time.Duration
	// Regions are the parts of the screen that change.
	Regions []Rect
	// Complexity is the detail of the new content in every region, 0 to 1.
	Complexity float64
	// Kind is the kind of content the regions are when it is not the
	// source's own (Source.Kind): a recording's change that a shift of
	// the frame before explains is SourceRecordingMotion. Empty means the
	// source's kind.
	Kind string
	// Fill is the share of the regions' pixels whose content changes, 0 to
	// 1; zero means all of them. A recorded frame's damage covers pixels
	// drawn again the same (a 3D scene's window is damaged whole at every
	// frame while a few per cent of it change), which an inter frame
	// codes for next to nothing (Delta.Fill).
	Fill float64
}

// Rect is a region of the screen in fractions of its width and height:
// {0, 0, 1, 1} is the whole screen.
type Rect struct{ X, Y, W, H float64 }

// Area is the fraction of the screen r covers (before rounding to cells).
func (r Rect) Area() float64 { return r.W * r.H }

func (r Rect) check() error {
	const eps = 1e-9
	if !(r.X >= 0 && r.Y >= 0 && r.W > 0 && r.H > 0 && r.X+r.W <= 1+eps && r.Y+r.H <= 1+eps) {
		return fmt.Errorf("region %+v is not a non-empty part of the screen [0,1]x[0,1]", r)
	}
	return nil
}

func checkComplexity(c float64) error {
	if !(c >= 0 && c <= 1) {
		return fmt.Errorf("complexity %v outside [0, 1]", c)
	}
	return nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// periodic changes region at every 1/rate from the phase's start, the first
// at the start itself.
func periodic(rate float64, region Rect, complexity float64) func() (Change, bool) {
	var k int64
	regions := []Rect{region}
	return func() (Change, bool) {
		at := Tick(k, rate)
		k++
		return Change{At: at, Regions: regions, Complexity: complexity}, true
	}
}

func checkRate(what string, rate, refresh float64) error {
	// Faster than ten refreshes per refresh only merges changes: refuse it
	// rather than draw thousands of changes per image.
	if !(rate > 0 && rate <= 10*refresh) {
		return fmt.Errorf("%s %v Hz outside (0, %v]", what, rate, 10*refresh)
	}
	return nil
}

// Animation is the write-up's test set-up (N3): a full-screen animation, so
// the image is always changing. The whole screen changes at every refresh
// with detailed content.
type Animation struct {
	// Rate is how often the content changes, in Hz; zero means at every
	// refresh of the display.
	Rate float64
	// Complexity is the detail of every frame; zero means 0.8 (a rich
	// animation, costlier than text or a desktop, short of noise).
	Complexity float64
}

// DefaultAnimationComplexity is Animation's default Complexity.
const DefaultAnimationComplexity = 0.8

// Kind implements Source.
func (Animation) Kind() string { return "animation" }

// Start implements Source.
func (a Animation) Start(env Env) (func() (Change, bool), error) {
	rate := orDefault(a.Rate, env.Refresh)
	c := orDefault(a.Complexity, DefaultAnimationComplexity)
	if err := errors.Join(checkRate("rate", rate, env.Refresh), checkComplexity(c)); err != nil {
		return nil, err
	}
	return periodic(rate, Rect{0, 0, 1, 1}, c), nil
}

// Still is a screen where nothing moves: it keeps whatever the previous
// phase left. The case of N13 (sparse packets from a still screen) and of N15
// (refinement once the screen stops changing).
type Still struct{}

// Kind implements Source.
func (Still) Kind() string { return "still" }

// Start implements Source.
func (Still) Start(Env) (func() (Change, bool), error) {
	return func() (Change, bool) { return Change{}, false }, nil
}

// Typing is someone typing text: every keystroke re-renders a small region
// (the character, the caret and the rest of the word or line that reflows),
// at a typing cadence. The screen changes rarely and little, the case where
// a capturer that waits for a new image (N6) holds the device lock longest.
type Typing struct {
	// MinInterval and MaxInterval bound the time between keystrokes, drawn
	// uniformly; zero means 120 ms and 250 ms (about 4-8 keystrokes a
	// second, a steady typist).
	MinInterval, MaxInterval time.Duration
	// MinArea and MaxArea bound the fraction of the screen one keystroke
	// changes, drawn uniformly; zero means 0.002 and 0.01 (a word to half a
	// line of text on a 1080p screen).
	MinArea, MaxArea float64
	// LineHeight is the height of a line of text, as a fraction of the
	// screen's; zero means 2/Rows (20 pixels at 1080p, two cells, so that
	// lines fall on the grid). A keystroke's region is one line high.
	LineHeight float64
	// Complexity is the detail of rendered text; zero means 0.6 (sharp
	// edges on a flat background).
	Complexity float64
}

// Defaults of Typing.
const (
	DefaultTypingMinInterval = 120 * time.Millisecond
	DefaultTypingMaxInterval = 250 * time.Millisecond
	DefaultTypingMinArea     = 0.002
	DefaultTypingMaxArea     = 0.01
	DefaultTypingLineHeight  = 2.0 / Rows
	DefaultTypingComplexity  = 0.6
)

// Kind implements Source.
func (Typing) Kind() string { return "typing" }

// Start implements Source.
func (ty Typing) Start(env Env) (func() (Change, bool), error) {
	lo := orDefault(ty.MinInterval, DefaultTypingMinInterval)
	hi := orDefault(ty.MaxInterval, DefaultTypingMaxInterval)
	aLo := orDefault(ty.MinArea, DefaultTypingMinArea)
	aHi := orDefault(ty.MaxArea, DefaultTypingMaxArea)
	h := orDefault(ty.LineHeight, DefaultTypingLineHeight)
	c := orDefault(ty.Complexity, DefaultTypingComplexity)
	var errs []error
	if !(lo > 0 && hi >= lo) {
		errs = append(errs, fmt.Errorf("intervals [%v, %v]: need 0 < min <= max", lo, hi))
	}
	if !(h > 0 && h <= 1) {
		errs = append(errs, fmt.Errorf("line height %v outside (0, 1]", h))
	}
	if !(aLo > 0 && aHi >= aLo && aHi <= h) {
		errs = append(errs, fmt.Errorf("areas [%v, %v]: need 0 < min <= max <= line height %v (a keystroke changes one line)", aLo, aHi, h))
	}
	errs = append(errs, checkComplexity(c))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rng := env.Rand
	const (
		margin = 0.05
		char   = 0.005 // the caret moves about 10 pixels a keystroke
	)
	var at time.Duration
	caret, line := margin, 0
	top := 16.0 / Rows // below a title bar and a toolbar, on the grid
	lines := int((1 - margin - top) / h)
	return func() (Change, bool) {
		at += lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
		area := aLo + rng.Float64()*(aHi-aLo)
		w := area / h
		r := Rect{X: min(caret, 1-w), Y: top + float64(line)*h, W: w, H: h}
		caret += char
		if caret > 1-margin {
			caret, line = margin, (line+1)%max(1, lines)
		}
		return Change{At: at, Regions: []Rect{r}, Complexity: c}, true
	}, nil
}

// Scrolling is a document or page scrolling: the whole content area of a
// window shifts at every refresh while the scroll lasts.
type Scrolling struct {
	// Rate is how often the content moves, in Hz; zero means at every
	// refresh.
	Rate float64
	// Region is the part that scrolls; zero means {0.05, 0.08, 0.9, 0.88}, a
	// maximised window's content (79% of the screen).
	Region Rect
	// Complexity is the detail of the scrolled content; zero means 0.6
	// (text and figures).
	Complexity float64
}

// DefaultScrollingRegion is Scrolling's default Region.
var DefaultScrollingRegion = Rect{0.05, 0.08, 0.9, 0.88}

// DefaultScrollingComplexity is Scrolling's default Complexity.
const DefaultScrollingComplexity = 0.6

// Kind implements Source.
func (Scrolling) Kind() string { return "scrolling" }

// Start implements Source.
func (s Scrolling) Start(env Env) (func() (Change, bool), error) {
	rate := orDefault(s.Rate, env.Refresh)
	r := orDefault(s.Region, DefaultScrollingRegion)
	c := orDefault(s.Complexity, DefaultScrollingComplexity)
	if err := errors.Join(checkRate("rate", rate, env.Refresh), r.check(), checkComplexity(c)); err != nil {
		return nil, err
	}
	return periodic(rate, r, c), nil
}

// Video is a video playing in a window: a block of the screen changes at
// every frame of the video, the rest stays.
type Video struct {
	// FPS is the video's frame rate; zero means 30.
	FPS float64
	// Region is the video's window; zero means {0.5, 0.45, 0.45, 0.45}, 20%
	// of the screen in its lower right.
	Region Rect
	// Complexity is the detail of the video; zero means 0.9 (natural images
	// with grain, close to noise for an encoder).
	Complexity float64
}

// DefaultVideoRegion is Video's default Region.
var DefaultVideoRegion = Rect{0.5, 0.45, 0.45, 0.45}

// Defaults of Video.
const (
	DefaultVideoFPS        = 30.0
	DefaultVideoComplexity = 0.9
)

// Kind implements Source.
func (Video) Kind() string { return "video" }

// Start implements Source.
func (v Video) Start(env Env) (func() (Change, bool), error) {
	fps := orDefault(v.FPS, DefaultVideoFPS)
	r := orDefault(v.Region, DefaultVideoRegion)
	c := orDefault(v.Complexity, DefaultVideoComplexity)
	if err := errors.Join(checkRate("frame rate", fps, env.Refresh), r.check(), checkComplexity(c)); err != nil {
		return nil, err
	}
	return periodic(fps, r, c), nil
}

// Photo is a photo opened at the start of the phase: one large, detailed
// change, then nothing. The case of N14 (blurry photos) and N15 (refining a
// still image).
type Photo struct {
	// Region is where the photo appears; zero means {0.1, 0.1, 0.8, 0.75},
	// 60% of the screen.
	Region Rect
	// Complexity is the photo's detail; zero means 0.9.
	Complexity float64
}

// DefaultPhotoRegion is Photo's default Region.
var DefaultPhotoRegion = Rect{0.1, 0.1, 0.8, 0.75}

// DefaultPhotoComplexity is Photo's default Complexity.
const DefaultPhotoComplexity = 0.9

// Kind implements Source.
func (Photo) Kind() string { return "photo" }

// Start implements Source.
func (p Photo) Start(Env) (func() (Change, bool), error) {
	r := orDefault(p.Region, DefaultPhotoRegion)
	c := orDefault(p.Complexity, DefaultPhotoComplexity)
	if err := errors.Join(r.check(), checkComplexity(c)); err != nil {
		return nil, err
	}
	shown := false
	return func() (Change, bool) {
		if shown {
			return Change{}, false
		}
		shown = true
		return Change{Regions: []Rect{r}, Complexity: c}, true
	}, nil
}

// Script plays a fixed list of changes, for tests and for scenarios that
// need exact regions. Its changes are used as given (no defaults: a
// complexity of zero is a flat colour).
type Script struct {
	// Changes, in order of At (from the phase's start).
	Changes []Change
}

// Kind implements Source.
func (Script) Kind() string { return "script" }

// Start implements Source.
func (s Script) Start(Env) (func() (Change, bool), error) {
	var errs []error
	for i, c := range s.Changes {
		if c.At < 0 || (i > 0 && c.At < s.Changes[i-1].At) {
			errs = append(errs, fmt.Errorf("change %d at %v: changes must be in order from 0", i, c.At))
		}
		if len(c.Regions) == 0 {
			errs = append(errs, fmt.Errorf("change %d has no region", i))
		}
		for _, r := range c.Regions {
			if err := r.check(); err != nil {
				errs = append(errs, fmt.Errorf("change %d: %w", i, err))
			}
		}
		if err := checkComplexity(c.Complexity); err != nil {
			errs = append(errs, fmt.Errorf("change %d: %w", i, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	changes := append([]Change(nil), s.Changes...)
	i := 0
	return func() (Change, bool) {
		if i == len(changes) {
			return Change{}, false
		}
		i++
		return changes[i-1], true
	}, nil
}
