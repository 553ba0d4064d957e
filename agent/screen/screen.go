// Package screen owns the lab's models of what is on the controlled PC's
// screen: a full-screen animation (the write-up's test set-up, N3), a still
// screen, typing, scrolling, a video in a window, a photo that appears,
// explicit scripts, and recorded real desktops replayed from their index
// (Recording), switched by a timeline.
//
// There are no pixels. A version of the screen is described by what the
// encoder's cost depends on: which part of the screen changed (tracked on a
// grid of Cols x Rows cells, so that the union of several changes is exact)
// and how much detail the new content has (its complexity, 0 to 1). For the
// encoders that take real pixels, agent/screen/paint paints each version
// from its regions (Model.Version).
//
// The content is a function of time only. The changes of every source are
// drawn in order from a source seeded by the run's seed and the phase, and a
// change becomes a new image at the display refresh that follows it (the
// desktop compositor presents at vsync), so a capturer polling at 60 Hz and
// one polling at 7 Hz see the same version at the same instant; the slower one
// just misses some, and Since tells it the union of what it missed.
package screen

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/seeded"
)

// Image is one version of the screen.
type Image struct {
	// Version counts the images since the session started: 1 is the desktop
	// at instant 0, and every later change of content makes the next one.
	// Version 0 means "no image" (before the session, or nothing taken yet).
	Version uint64
	// At is when this content appeared (the refresh that presented it),
	// counted from the session start.
	At time.Duration
	// Changed is the fraction of the screen that differs from version
	// Version-1, 0 to 1.
	Changed float64
	// Complexity is the detail of the changed content, 0 (flat colour) to 1
	// (noise), weighted by area.
	Complexity float64
	// Whole is the mean detail of the whole screen at this version: what a
	// keyframe, which encodes everything, has to carry.
	Whole float64
}

// Delta is what changed between two versions: the union of the changes of
// versions From+1 to To.
type Delta struct {
	// From is the version the changes are counted from (0: from nothing, so
	// the whole screen changed).
	From uint64
	// To is the version they lead to.
	To uint64
	// Changed is the fraction of the screen that differs between From and
	// To. A region changed twice counts once, so this is at most the sum of
	// the versions' own Changed.
	Changed float64
	// Complexity is the area-weighted detail of the changed regions as they
	// are in version To (0 when nothing changed).
	Complexity float64
	// Fill is the area-weighted share of the changed regions' pixels that
	// changed (Change.Fill): 1 wherever the sources changed every pixel
	// they named, as the painted ones do; below it where a recorded
	// frame's damage covered pixels drawn again the same, which an inter
	// frame codes for next to nothing.
	Fill float64
	// Kinds breaks Changed down by the kind of source that made each
	// changed cell as it is in version To (Region.Source: "animation",
	// "typing", SourceDesktop, ...), in the order met walking back from
	// To; unused entries have an empty Kind. An encoder whose cost
	// depends on the content reads it: a shifted picture (a pan, a
	// scroll) costs a motion vector where new text costs its detail. A
	// fixed array, so that a Delta allocates nothing; cells of kinds
	// beyond the MaxDeltaKinds-th count in Changed only.
	Kinds [MaxDeltaKinds]KindChange
}

// MaxDeltaKinds is how many kinds of source a Delta tells apart: a
// timeline's phase boundary and the desktop below make two or three.
const MaxDeltaKinds = 4

// KindChange is the part of a Delta made by one kind of source.
type KindChange struct {
	// Kind is the source's kind (Region.Source); empty for an unused entry.
	Kind string
	// Changed is the fraction of the screen this kind changed.
	Changed float64
	// Complexity is the area-weighted detail of that part.
	Complexity float64
	// Fill is that part's Delta.Fill.
	Fill float64
}

// Screen is what a capturer sees. Instants are counted from the session
// start. Every answer depends only on the instant and the arguments, never on
// when or how often the screen was asked before.
type Screen interface {
	// Latest returns the newest image presented at or before t (version 0
	// before the session started).
	Latest(t time.Duration) Image
	// Since returns the newest image at t and the union of the changes since
	// version prev, which is what a capturer that last took version prev
	// must send. If prev is that image's version or later, the delta is
	// empty.
	Since(prev uint64, t time.Duration) (Image, Delta)
	// Next returns when the first image after t appears, and false if the
	// screen never changes again. A capturer that waits for a new image
	// (the old behaviour of N6) sleeps until then.
	Next(t time.Duration) (time.Duration, bool)
}

// Config describes a screen. The zero value is a still desktop refreshed at
// 60 Hz.
type Config struct {
	// Name names the screen's random sources (with the run's seed and the
	// phase's place); empty means "screen".
	Name string
	// Refresh is the display's refresh rate in Hz; zero means 60. Changes
	// are presented at refresh instants k/Refresh from the session start.
	Refresh float64
	// Desktop is the detail of the first image (version 1, the desktop at
	// instant 0); zero means 0.5, an ordinary desktop of windows and text.
	Desktop float64
	// Timeline lists the sources in order of their start. Before the first
	// phase the screen stays as the desktop.
	Timeline []Phase
}

// Phase is one stretch of a timeline: from At until the next phase's At,
// Source makes the changes.
type Phase struct {
	// At is when the phase starts, from the session start.
	At time.Duration
	// Source makes the phase's changes.
	Source Source
}

// Defaults of Config.
const (
	DefaultRefresh = 60.0
	DefaultDesktop = 0.5
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("screen: bad configuration")

type phase struct {
	at   time.Duration
	kind string
	src  Source
	next func() (Change, bool)
}

// event is a version of the screen and the regions that made it.
type event struct {
	img   Image
	parts []part
}

// Model is a Screen made from a Config. It is safe for concurrent use.
type Model struct {
	mu      sync.Mutex
	refresh float64
	phases  []phase
	cur     int           // phase whose changes are being drawn
	lastAt  time.Duration // instant of the last change drawn, changes never go back
	events  []event       // versions 1..len(events), presented
	pending *event        // the next version, still collecting changes of its refresh
	done    bool          // no source will change the screen again
	canvas  *canvas
	scratch bitset
}

var _ Screen = (*Model)(nil)

// New makes the screen of cfg, whose random decisions draw from sources
// seeded by seed.
func New(seed uint64, cfg Config) (*Model, error) {
	if cfg.Name == "" {
		cfg.Name = "screen"
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Desktop == 0 {
		cfg.Desktop = DefaultDesktop
	}
	if !(cfg.Refresh > 0 && cfg.Refresh <= 1000) {
		return nil, fmt.Errorf("%w: refresh %v Hz outside (0, 1000]", ErrConfig, cfg.Refresh)
	}
	if err := checkComplexity(cfg.Desktop); err != nil {
		return nil, fmt.Errorf("%w: desktop: %w", ErrConfig, err)
	}
	m := &Model{refresh: cfg.Refresh, canvas: newCanvas(cfg.Desktop)}
	for i, ph := range cfg.Timeline {
		if ph.Source == nil {
			return nil, fmt.Errorf("%w: phase %d has no source", ErrConfig, i)
		}
		if ph.At < 0 || (i > 0 && ph.At <= cfg.Timeline[i-1].At) {
			return nil, fmt.Errorf("%w: phase %d (%s) starts at %v: phases must start at increasing instants from 0",
				ErrConfig, i, ph.Source.Kind(), ph.At)
		}
		next, err := ph.Source.Start(Env{
			Refresh: cfg.Refresh,
			Rand:    seeded.New(seed, cfg.Name, "phase", strconv.Itoa(i), ph.Source.Kind()),
		})
		if err != nil {
			return nil, fmt.Errorf("%w: phase %d (%s): %w", ErrConfig, i, ph.Source.Kind(), err)
		}
		m.phases = append(m.phases, phase{at: ph.At, kind: ph.Source.Kind(), src: ph.Source, next: next})
	}
	// Version 1 is the desktop as the session finds it: the whole screen is
	// new to a viewer that has nothing.
	desktop := newPart(Rect{0, 0, 1, 1}, cfg.Desktop)
	desktop.source = SourceDesktop
	m.pending = &event{img: Image{At: 0}, parts: []part{desktop}}
	return m, nil
}

// Tick is the instant of the k-th refresh of a display refreshing at hz,
// from the session start: k/hz rounded to the nanosecond, so that ticks never
// drift whatever k is.
func Tick(k int64, hz float64) time.Duration {
	return time.Duration(math.Round(float64(k) * 1e9 / hz))
}

// NextTick returns the first refresh instant at or after t: when a change
// made at t is presented, and when a capture loop polling at the refresh
// polls next.
func NextTick(t time.Duration, hz float64) time.Duration {
	k := int64(math.Ceil(float64(t) * hz / 1e9))
	for k > 0 && Tick(k-1, hz) >= t {
		k--
	}
	for Tick(k, hz) < t {
		k++
	}
	return Tick(k, hz)
}

// pull draws the next change of the timeline and returns the instant it is
// presented and its regions.
func (m *Model) pull() (time.Duration, []part, bool) {
	for m.cur < len(m.phases) {
		ph := &m.phases[m.cur]
		c, ok := ph.next()
		at := ph.at + max(0, c.At)
		if !ok || (m.cur+1 < len(m.phases) && at >= m.phases[m.cur+1].at) {
			// This source is done, or the next phase has taken over.
			m.cur++
			if m.cur < len(m.phases) {
				m.lastAt = max(m.lastAt, m.phases[m.cur].at)
			}
			continue
		}
		// A source that goes back in time is held at the instant it had
		// reached: the screen cannot change in the past.
		at = max(at, m.lastAt)
		m.lastAt = at
		kind := ph.kind
		if c.Kind != "" {
			kind = c.Kind
		}
		parts := make([]part, 0, len(c.Regions))
		for _, r := range c.Regions {
			if p := newPart(r, c.Complexity); p.r.cells() > 0 {
				p.source, p.phase = kind, m.cur
				if c.Fill > 0 && c.Fill < 1 {
					p.fill = c.Fill
				}
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 { // a change of nothing is not a new image
			return NextTick(at, m.refresh), parts, true
		}
	}
	return 0, nil, false
}

// fill draws changes until every version presented at or before t is final.
func (m *Model) fill(t time.Duration) {
	for !m.done && m.pending.img.At <= t {
		at, parts, ok := m.pull()
		switch {
		case !ok:
			m.finish()
			m.done = true
		case at == m.pending.img.At:
			m.merge(parts)
		default:
			m.finish()
			m.pending = &event{img: Image{At: at}}
			m.merge(parts)
		}
	}
}

// merge adds regions to the pending version. Changes presented at the same
// refresh are one image, as the compositor makes them.
func (m *Model) merge(parts []part) {
	for _, p := range parts {
		if p.r.full() {
			m.pending.parts = m.pending.parts[:0] // all earlier regions are painted over
		}
		m.pending.parts = append(m.pending.parts, p)
	}
}

// finish presents the pending version if anything changed in it.
func (m *Model) finish() {
	ev := m.pending
	if len(ev.parts) == 0 {
		return
	}
	var d detail
	m.union(ev.parts, &d)
	ev.img.Version = uint64(len(m.events)) + 1
	ev.img.Changed = float64(d.cells) / nCells
	ev.img.Complexity = d.mean()
	for i := range ev.parts {
		m.canvas.paint(&ev.parts[i])
	}
	ev.img.Whole = m.canvas.mean()
	m.events = append(m.events, *ev)
}

// detail sums the detail of the cells of a union. When every cell has the
// same detail (an animation, one scroll) the mean is that value exactly,
// not n*c/n with its rounding.
type detail struct {
	cells    int
	sum      float64
	one      float64
	uniform  bool
	anything bool
}

func (d *detail) add(n int, c float64) {
	if n == 0 {
		return
	}
	if !d.anything {
		d.one, d.uniform, d.anything = c, true, true
	} else if c != d.one {
		d.uniform = false
	}
	d.cells += n
	d.sum += float64(n) * c
}

func (d *detail) mean() float64 {
	switch {
	case !d.anything:
		return 0
	case d.uniform:
		return d.one
	}
	return d.sum / float64(d.cells)
}

// union counts the cells of parts, the later parts painting over the
// earlier, in d.
func (m *Model) union(parts []part, d *detail) {
	un := cellUnion{b: &m.scratch}
	for i := len(parts) - 1; i >= 0; i-- {
		d.add(un.cover(&parts[i], d), parts[i].complexity)
	}
}

// cellUnion is a union of parts being taken, newest first, over a scratch
// bitset. Most unions start with a part of the whole screen (an
// animation's every version, a scroll): that covers every cell at once, and
// nothing after it can be new, so such a union neither clears nor marks the
// bitset. The count is the one marking every cell would give.
type cellUnion struct {
	b     *bitset
	clean bool // b has been cleared for this union
}

// cover returns how many of p's cells are new to the union, whose new
// cells so far d counts, and marks them.
func (u *cellUnion) cover(p *part, d *detail) int {
	switch {
	case d.cells == nCells:
		return 0
	case d.cells == 0 && p.r.full():
		return nCells
	}
	if !u.clean {
		*u.b = bitset{}
		u.clean = true
	}
	return u.b.cover(p)
}

// latest returns the index of the newest version presented at or before t,
// or -1.
func (m *Model) latest(t time.Duration) int {
	m.fill(t)
	return sort.Search(len(m.events), func(i int) bool { return m.events[i].img.At > t }) - 1
}

// Latest implements Screen.
func (m *Model) Latest(t time.Duration) Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.latest(t); i >= 0 {
		return m.events[i].img
	}
	return Image{}
}

// Since implements Screen. It walks back from the newest version, stopping
// once the whole screen is covered, so its cost is bounded by the versions
// missed, never by the length of the session.
func (m *Model) Since(prev uint64, t time.Duration) (Image, Delta) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.latest(t)
	if i < 0 {
		return Image{}, Delta{From: prev}
	}
	img := m.events[i].img
	d := Delta{From: prev, To: img.Version}
	if prev >= img.Version {
		return img, d
	}
	var u, fill detail
	var kinds [MaxDeltaKinds]kindDetail
	un := cellUnion{b: &m.scratch}
	for v := img.Version; v > prev && u.cells < nCells; v-- {
		m.unionKinds(&un, m.events[v-1].parts, &u, &fill, &kinds)
	}
	d.Changed = float64(u.cells) / nCells
	d.Complexity, d.Fill = u.mean(), fill.mean()
	for i, k := range kinds {
		if k.kind != "" {
			d.Kinds[i] = KindChange{Kind: k.kind, Changed: float64(k.d.cells) / nCells, Complexity: k.d.mean(), Fill: k.fill.mean()}
		}
	}
	return img, d
}

// kindDetail is the detail of one kind of source's cells in a union, and
// their fill (part.fill, averaged as detail is).
type kindDetail struct {
	kind    string
	d, fill detail
}

// unionKinds is union, with the new cells' fill summed in fill and the new
// cells also counted by their source's kind in kinds (the first kinds
// met; later kinds only in d and fill).
func (m *Model) unionKinds(un *cellUnion, parts []part, d, fill *detail, kinds *[MaxDeltaKinds]kindDetail) {
	for i := len(parts) - 1; i >= 0; i-- {
		p := &parts[i]
		n := un.cover(p, d)
		d.add(n, p.complexity)
		fill.add(n, p.fill)
		if n == 0 {
			continue
		}
		for k := range kinds {
			if kinds[k].kind == "" {
				kinds[k].kind = p.source
			}
			if kinds[k].kind == p.source {
				kinds[k].d.add(n, p.complexity)
				kinds[k].fill.add(n, p.fill)
				break
			}
		}
	}
}

// SourceDesktop is the Source of the desktop's region (Model.Version): the
// whole screen as the session finds it, version 1.
const SourceDesktop = "desktop"

// Region is one part of a version's change as the model tracks it, for a
// painter that turns versions into pixels (agent/screen/paint): a rectangle
// of grid cells, what made it and the detail of its new content.
type Region struct {
	// X0, Y0, X1, Y1 bound the region in grid cells, half-open: columns
	// X0 to X1-1 of Cols, rows Y0 to Y1-1 of Rows.
	X0, Y0, X1, Y1 int
	// Complexity is the detail of the new content, 0 to 1.
	Complexity float64
	// Source is the kind of the source that made it ("animation",
	// "typing", ...), or SourceDesktop for version 1.
	Source string
	// Phase is the index of the timeline phase that made it, -1 for the
	// desktop.
	Phase int
}

// Full tells whether the region is the whole screen.
func (r Region) Full() bool { return r.X0 == 0 && r.Y0 == 0 && r.X1 == Cols && r.Y1 == Rows }

// Version returns a version of the screen and the regions that made it, in
// the order they were painted (a later region covers an earlier one where
// they overlap); false for a version not presented yet. A full-screen
// region hides every region before it in the same version, so none is
// listed before it.
func (m *Model) Version(v uint64) (Image, []Region, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v == 0 || v > uint64(len(m.events)) {
		return Image{}, nil, false
	}
	ev := &m.events[v-1]
	out := make([]Region, len(ev.parts))
	for i, p := range ev.parts {
		out[i] = Region{X0: p.r.x0, Y0: p.r.y0, X1: p.r.x1, Y1: p.r.y1,
			Complexity: p.complexity, Source: p.source, Phase: p.phase}
	}
	return ev.img, out, true
}

// Changes returns the instants at which versions 1 to n appeared, n being
// the newest presented at or before until: element v-1 is when version v
// did. It is the ground truth of when the screen changed, against which a
// frozen display is measured (a viewer that shows version v shows nothing
// that appeared after element v-1). Like every answer it depends only on
// until.
func (m *Model) Changes(until time.Duration) []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.latest(until) + 1
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = m.events[i].img.At
	}
	return out
}

// RecordedFrame tells a painter which frame of which recording phase phase
// (a Recording) shows at at, from the session start: the frame of the last
// change it made at or before at. at may be the refresh that presented a
// change made just before the next phase took over: the phase's frame is
// then the one it showed when it ended. False for a phase that replays no
// recording, or before it starts.
func (m *Model) RecordedFrame(phase int, at time.Duration) (*recording.Recording, int, bool) {
	// The phases never change after New: no lock.
	if phase < 0 || phase >= len(m.phases) {
		return nil, 0, false
	}
	src, ok := m.phases[phase].src.(Recording)
	if !ok {
		return nil, 0, false
	}
	t := at - m.phases[phase].at
	if phase+1 < len(m.phases) {
		t = min(t, m.phases[phase+1].at-m.phases[phase].at-1)
	}
	i, ok := src.Frame(t)
	if !ok {
		return nil, 0, false
	}
	return src.Recording, i, true
}

// Next implements Screen.
func (m *Model) Next(t time.Duration) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.latest(t) + 1
	if i < len(m.events) {
		return m.events[i].img.At, true
	}
	if m.done {
		return 0, false
	}
	return m.pending.img.At, true
}
