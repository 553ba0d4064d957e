package screen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// refresh is the k-th refresh instant at 60 Hz.
func refresh(k int64) time.Duration { return Tick(k, 60) }

func mustNew(t *testing.T, seed uint64, cfg Config) *Model {
	t.Helper()
	m, err := New(seed, cfg)
	require.NoError(t, err)
	return m
}

// bruteUnion recomputes a delta cell by cell from the versions' regions: the
// reference the bitset walk of Since is checked against.
func bruteUnion(m *Model, from, to uint64) (float64, float64) {
	var changed [nCells]bool
	var detail [nCells]float64
	for v := from + 1; v <= to; v++ {
		for _, p := range m.events[v-1].parts {
			for y := p.r.y0; y < p.r.y1; y++ {
				for x := p.r.x0; x < p.r.x1; x++ {
					changed[y*Cols+x], detail[y*Cols+x] = true, p.complexity
				}
			}
		}
	}
	n, sum := 0, 0.0
	for i := range changed {
		if changed[i] {
			n++
			sum += detail[i]
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(n) / nCells, sum / float64(n)
}

func TestFirstImageIsTheDesktop(t *testing.T) {
	m := mustNew(t, 1, Config{})
	require.Equal(t, Image{}, m.Latest(-time.Nanosecond))
	img, d := m.Since(0, 0)
	require.Equal(t, Image{Version: 1, At: 0, Changed: 1, Complexity: DefaultDesktop, Whole: DefaultDesktop}, img)
	require.Equal(t, Delta{From: 0, To: 1, Changed: 1, Complexity: DefaultDesktop, Fill: 1,
		Kinds: [MaxDeltaKinds]KindChange{{Kind: SourceDesktop, Changed: 1, Complexity: DefaultDesktop, Fill: 1}}}, d)
	// A still desktop never changes again.
	require.Equal(t, img, m.Latest(time.Hour))
	_, ok := m.Next(0)
	require.False(t, ok)
}

// TestDeltaByKind checks a delta breaks its change down by the kind of
// source that made each cell as it is now: the video's window over the
// desktop, then the typing's lines, each counted once.
func TestDeltaByKind(t *testing.T) {
	m := mustNew(t, 1, Config{Timeline: []Phase{
		{Source: Video{}},
		{At: time.Second, Source: Script{Changes: []Change{{Regions: []Rect{{X: 0, Y: 0, W: 0.5, H: 0.25}}, Complexity: 0.2}}}},
	}})
	_, d := m.Since(0, 2*time.Second)
	require.Equal(t, 1.0, d.Changed)
	video := float64(toCells(DefaultVideoRegion).cells()) / nCells
	script := float64(toCells(Rect{0, 0, 0.5, 0.25}).cells()) / nCells
	require.Equal(t, "script", d.Kinds[0].Kind)
	require.InDelta(t, script, d.Kinds[0].Changed, 1e-12)
	require.Equal(t, 0.2, d.Kinds[0].Complexity)
	require.Equal(t, "video", d.Kinds[1].Kind)
	require.InDelta(t, video, d.Kinds[1].Changed, 1e-12)
	require.Equal(t, DefaultVideoComplexity, d.Kinds[1].Complexity)
	require.Equal(t, SourceDesktop, d.Kinds[2].Kind)
	require.InDelta(t, 1-video-script, d.Kinds[2].Changed, 1e-12)
	require.Empty(t, d.Kinds[3].Kind)
	// After the first image and before the script, only the video changes.
	_, d = m.Since(1, 500*time.Millisecond)
	require.Equal(t, KindChange{Kind: "video", Changed: video, Complexity: DefaultVideoComplexity, Fill: 1}, d.Kinds[0])
	require.Empty(t, d.Kinds[1].Kind)

	// Two changes at one refresh are one version, the later painted over
	// the earlier: where they overlap the cells are the later's, its
	// detail and its kind.
	big, small := Rect{0, 0, 0.5, 0.5}, Rect{0, 0, 0.25, 0.25}
	m = mustNew(t, 1, Config{Timeline: []Phase{
		{Source: Script{Changes: []Change{{At: 101 * time.Millisecond, Regions: []Rect{big}, Complexity: 0.2}}}},
		{At: 102 * time.Millisecond, Source: Video{Region: small, Complexity: 0.9}},
	}})
	img, d := m.Since(1, 120*time.Millisecond)
	require.Equal(t, uint64(2), img.Version, "one version, at the refresh of 116.7 ms")
	nBig, nSmall := float64(toCells(big).cells()), float64(toCells(small).cells())
	require.InDelta(t, (nSmall*0.9+(nBig-nSmall)*0.2)/nBig, d.Complexity, 1e-12)
	require.Equal(t, KindChange{Kind: "video", Changed: nSmall / nCells, Complexity: 0.9, Fill: 1}, d.Kinds[0])
	require.Equal(t, "script", d.Kinds[1].Kind)
	require.InDelta(t, (nBig-nSmall)/nCells, d.Kinds[1].Changed, 1e-12)
}

// TestDeltaFill checks a change whose pixels change only in part
// (Change.Fill, a recorded frame's damage) keeps its detail for the screen
// and a keyframe, and gives its fill to the delta, area-weighted as detail
// is, the newest change of a cell counting; the painted sources' fill is 1.
func TestDeltaFill(t *testing.T) {
	left, right := Rect{0, 0, 0.5, 1}, Rect{0.5, 0, 0.5, 1}
	m := mustNew(t, 1, Config{Timeline: []Phase{{Source: Script{Changes: []Change{
		{At: 100 * time.Millisecond, Regions: []Rect{left}, Complexity: 0.8, Fill: 0.25},
		{At: 200 * time.Millisecond, Regions: []Rect{right}, Complexity: 0.4},
		{At: 300 * time.Millisecond, Regions: []Rect{left}, Complexity: 0.6, Fill: 0.5},
	}}}}})
	img, d := m.Since(1, 150*time.Millisecond)
	require.Equal(t, 0.8, img.Complexity)
	require.Equal(t, 0.8, d.Complexity)
	require.Equal(t, 0.25, d.Fill)
	require.Equal(t, KindChange{Kind: "script", Changed: 0.5, Complexity: 0.8, Fill: 0.25}, d.Kinds[0])
	_, d = m.Since(2, 250*time.Millisecond)
	require.Equal(t, 1.0, d.Fill, "no fill given: every pixel")
	// The left half changed twice: its newest change (0.6 at half) counts.
	img, d = m.Since(1, 350*time.Millisecond)
	require.Equal(t, 1.0, d.Changed)
	require.InDelta(t, (0.6+0.4)/2, d.Complexity, 1e-12)
	require.InDelta(t, (0.5+1)/2, d.Fill, 1e-12)
	require.InDelta(t, (0.5+1)/2, d.Kinds[0].Fill, 1e-12)
	require.InDelta(t, (0.6+0.4)/2, img.Whole, 1e-12, "the screen keeps the detail")
}

func TestAnimationChangesTheWholeScreenAtEveryRefresh(t *testing.T) {
	m := mustNew(t, 1, Config{Timeline: []Phase{{Source: Animation{}}}})
	// The animation's first frame replaces the desktop at instant 0.
	require.Equal(t, Image{Version: 1, Changed: 1, Complexity: 0.8, Whole: 0.8}, m.Latest(0))
	require.Equal(t, uint64(1), m.Latest(refresh(1)-1).Version)
	require.Equal(t, Image{Version: 2, At: refresh(1), Changed: 1, Complexity: 0.8, Whole: 0.8}, m.Latest(refresh(1)))
	require.Equal(t, Image{Version: 61, At: time.Second, Changed: 1, Complexity: 0.8, Whole: 0.8}, m.Latest(time.Second))
	next, ok := m.Next(time.Second)
	require.True(t, ok)
	require.Equal(t, refresh(61), next)
}

func TestScriptedChangesUnite(t *testing.T) {
	m := mustNew(t, 1, Config{Timeline: []Phase{{Source: Script{Changes: []Change{
		{At: 10 * time.Millisecond, Regions: []Rect{{0, 0, 0.5, 0.5}}, Complexity: 1},
		{At: 20 * time.Millisecond, Regions: []Rect{{0.25, 0.25, 0.5, 0.5}}, Complexity: 0},
		// Two changes inside one refresh interval are one image.
		{At: 40 * time.Millisecond, Regions: []Rect{{0, 0.75, 0.25, 0.25}}, Complexity: 1},
		{At: 45 * time.Millisecond, Regions: []Rect{{0.75, 0.75, 0.25, 0.25}}, Complexity: 0.5},
	}}}}})

	// Each change is presented at the next refresh.
	v2 := m.Latest(refresh(1))
	require.Equal(t, Image{Version: 2, At: refresh(1), Changed: 0.25, Complexity: 1, Whole: 0.625}, v2)
	img, d := m.Since(1, 40*time.Millisecond)
	require.Equal(t, uint64(3), img.Version)
	require.Equal(t, refresh(2), img.At)
	require.Equal(t, 0.25, img.Changed) // its own change, against version 2
	// Against version 1: two quarter screens overlapping by a sixteenth.
	require.InDelta(t, 0.4375, d.Changed, 1e-12)
	// The overlap shows the later, flat content: 0.1875 of detail 1 in 0.4375.
	require.InDelta(t, 0.1875/0.4375, d.Complexity, 1e-12)
	// Against nothing, everything changed, and the detail is the whole
	// screen's, which the image also carries.
	_, all := m.Since(0, 40*time.Millisecond)
	require.Equal(t, 1.0, all.Changed)
	require.InDelta(t, 0.5*(1-0.4375)+0.1875, all.Complexity, 1e-12)
	require.InDelta(t, all.Complexity, img.Whole, 1e-12)
	// Nothing new since the version taken.
	_, none := m.Since(3, 40*time.Millisecond)
	require.Equal(t, Delta{From: 3, To: 3}, none)

	merged := m.Latest(time.Second)
	require.Equal(t, uint64(4), merged.Version)
	require.Equal(t, 50*time.Millisecond, merged.At)
	require.Equal(t, 0.125, merged.Changed)
	require.InDelta(t, 0.75, merged.Complexity, 1e-12)
}

// Changes lists when each version appeared, element v-1 for version v, up
// to the instant asked: the desktop at 0, then each change at its refresh,
// two changes of one refresh being one version.
func TestChangesAreTheVersionsInstants(t *testing.T) {
	script := Config{Timeline: []Phase{{Source: Script{Changes: []Change{
		{At: 10 * time.Millisecond, Regions: []Rect{{0, 0, 0.5, 0.5}}, Complexity: 1},
		{At: 40 * time.Millisecond, Regions: []Rect{{0, 0.75, 0.25, 0.25}}, Complexity: 1},
		{At: 45 * time.Millisecond, Regions: []Rect{{0.75, 0.75, 0.25, 0.25}}, Complexity: 0.5},
		{At: 2 * time.Second, Regions: []Rect{{0, 0, 1, 1}}, Complexity: 0.5},
	}}}}}
	m := mustNew(t, 1, script)
	require.Equal(t, []time.Duration{0, refresh(1), 50 * time.Millisecond}, m.Changes(time.Second))
	for v, at := range m.Changes(time.Second) {
		require.Equal(t, at, m.Latest(at).At)
		require.Equal(t, uint64(v+1), m.Latest(at).Version)
	}
	require.Equal(t, []time.Duration{0}, m.Changes(refresh(1)-1))
	require.Empty(t, m.Changes(-time.Nanosecond), "before the session: no image")
	// Asked first for a late instant, a screen answers the same.
	late := mustNew(t, 1, script)
	require.Equal(t, []time.Duration{0, refresh(1), 50 * time.Millisecond, 2 * time.Second}, late.Changes(time.Minute))
	require.Equal(t, late.Changes(time.Second), m.Changes(time.Second))
	// A still screen changes once, at the start.
	require.Equal(t, []time.Duration{0}, mustNew(t, 1, Config{}).Changes(time.Hour))
}

func TestTimelineSwitchesSources(t *testing.T) {
	m := mustNew(t, 1, Config{Timeline: []Phase{
		{At: 0, Source: Animation{}},
		{At: time.Second, Source: Still{}},
		{At: 2 * time.Second, Source: Photo{}},
		{At: 3 * time.Second, Source: Still{}},
	}})
	last := m.Latest(time.Second - 1)
	require.Equal(t, uint64(60), last.Version) // refreshes 0..59
	// The still phase keeps the animation's last frame.
	require.Equal(t, last, m.Latest(1500*time.Millisecond))
	next, ok := m.Next(1500 * time.Millisecond)
	require.True(t, ok)
	require.Equal(t, 2*time.Second, next)

	photo := m.Latest(2 * time.Second)
	require.Equal(t, uint64(61), photo.Version)
	require.Equal(t, 2*time.Second, photo.At)
	// 154 x 82 cells: the default region rounded out to whole cells.
	require.InDelta(t, DefaultPhotoRegion.Area(), photo.Changed, 0.01)
	require.Equal(t, float64(154*82)/nCells, photo.Changed)
	require.InDelta(t, 0.9, photo.Complexity, 1e-12)
	require.InDelta(t, 0.9*photo.Changed+0.8*(1-photo.Changed), photo.Whole, 1e-9)
	_, ok = m.Next(2 * time.Second)
	require.False(t, ok)
	require.Equal(t, photo, m.Latest(time.Minute))
}

func TestVideoChangesItsWindowAtItsFrameRate(t *testing.T) {
	m := mustNew(t, 1, Config{Timeline: []Phase{{At: 100 * time.Millisecond, Source: Video{}}}})
	prev := m.Latest(100 * time.Millisecond)
	require.Equal(t, uint64(2), prev.Version)
	for i := range 30 {
		img := m.Latest(refresh(int64(6 + 2*(i+1))))
		require.Equal(t, prev.Version+1, img.Version, "frame %d", i)
		// 30 fps on a 60 Hz display: every other refresh.
		require.Equal(t, refresh(int64(6+2*(i+1))), img.At, "frame %d", i)
		require.InDelta(t, DefaultVideoRegion.Area(), img.Changed, 0.01)
		require.Equal(t, DefaultVideoComplexity, img.Complexity)
		prev = img
	}
	require.InDelta(t, 0.9*prev.Changed+0.5*(1-prev.Changed), prev.Whole, 1e-9)
}

func TestScrollingMovesItsRegionAtEveryRefresh(t *testing.T) {
	m := mustNew(t, 1, Config{Timeline: []Phase{{Source: Scrolling{}}, {At: time.Second, Source: Still{}}}})
	require.Equal(t, uint64(60), m.Latest(time.Minute).Version)
	img, d := m.Since(1, time.Minute)
	require.InDelta(t, DefaultScrollingRegion.Area(), img.Changed, 0.02)
	require.Equal(t, img.Changed, d.Changed) // the same region every time
}

func TestTypingIsSmallAndAtTypingCadence(t *testing.T) {
	m := mustNew(t, 7, Config{Timeline: []Phase{{Source: Typing{}}}})
	var prev Image
	n := 0
	for v := uint64(2); ; v++ {
		next, ok := m.Next(prev.At)
		require.True(t, ok)
		if next > 20*time.Second {
			break
		}
		img := m.Latest(next)
		require.Equal(t, v, img.Version)
		require.GreaterOrEqual(t, img.Changed, DefaultTypingMinArea)
		// Lines fall on the grid; rounding out to whole cells adds at most
		// a column on each side.
		require.LessOrEqual(t, img.Changed, DefaultTypingMaxArea+4.0/nCells)
		if v > 2 {
			gap := img.At - prev.At
			require.GreaterOrEqual(t, gap, DefaultTypingMinInterval-refresh(1))
			require.LessOrEqual(t, gap, DefaultTypingMaxInterval+refresh(1))
		}
		prev = img
		n++
	}
	// 20 s at a mean of 185 ms between keystrokes.
	require.InDelta(t, 108, n, 12)
}

// mixed is a timeline with every kind of source.
func mixed() Config {
	return Config{Timeline: []Phase{
		{At: 0, Source: Typing{}},
		{At: 2 * time.Second, Source: Video{}},
		{At: 3 * time.Second, Source: Typing{MinInterval: 20 * time.Millisecond, MaxInterval: 40 * time.Millisecond}},
		{At: 4 * time.Second, Source: Photo{}},
		{At: 4500 * time.Millisecond, Source: Scrolling{Region: Rect{0, 0.5, 1, 0.2}}},
		{At: 5 * time.Second, Source: Animation{Rate: 24}},
		{At: 5500 * time.Millisecond, Source: Still{}},
	}}
}

func TestContentIsAFunctionOfTimeOnly(t *testing.T) {
	const seed = 42
	fast := mustNew(t, seed, mixed()) // polled at 60 Hz
	slow := mustNew(t, seed, mixed()) // polled at 7 Hz
	late := mustNew(t, seed, mixed()) // asked only after the end, backwards
	end := 6 * time.Second

	type seen struct {
		at  time.Duration
		img Image
		d   Delta
	}
	var fastSeen []seen
	var taken uint64
	for k := int64(0); refresh(k) <= end; k++ {
		img, d := fast.Since(taken, refresh(k))
		if d.Changed > 0 {
			fastSeen = append(fastSeen, seen{refresh(k), img, d})
			taken = img.Version
		}
	}
	var slowSeen []seen
	taken = 0
	for at := time.Duration(0); at <= end; at += time.Second / 7 {
		img, d := slow.Since(taken, at)
		slowSeen = append(slowSeen, seen{at, img, d})
		taken = img.Version
	}
	require.Equal(t, late.Latest(end), fast.Latest(end))

	// At 60 Hz, polling at the refreshes, no version is missed.
	for i, s := range fastSeen {
		require.Equal(t, uint64(i+1), s.img.Version)
		require.Equal(t, s.img.At, s.at)
		require.Equal(t, s.img.Changed, s.d.Changed)
	}
	require.Greater(t, len(fastSeen), 100)

	for i := len(slowSeen) - 1; i >= 0; i-- {
		s := slowSeen[i]
		// The same version at the same instant, whoever asks and when.
		require.Equal(t, s.img, fast.Latest(s.at), "at %v", s.at)
		require.Equal(t, s.img, late.Latest(s.at), "at %v", s.at)
		// What the slow poller gets is the exact union of what it missed,
		// between the largest single change and the sum of them all.
		changed, detail := bruteUnion(fast, s.d.From, s.d.To)
		require.InDelta(t, changed, s.d.Changed, 1e-12, "at %v", s.at)
		require.InDelta(t, detail, s.d.Complexity, 1e-12, "at %v", s.at)
		sum, most := 0.0, 0.0
		for _, f := range fastSeen {
			if f.img.Version > s.d.From && f.img.Version <= s.d.To {
				sum += f.img.Changed
				most = max(most, f.img.Changed)
			}
		}
		require.LessOrEqual(t, s.d.Changed, sum+1e-12)
		require.GreaterOrEqual(t, s.d.Changed, most)
	}
	// Some polls missed several overlapping changes.
	var merged int
	for _, s := range slowSeen {
		if s.d.To > s.d.From+1 {
			merged++
		}
	}
	require.Greater(t, merged, 10)
}

func TestSameSeedSameScreen(t *testing.T) {
	a, b, c := mustNew(t, 1, mixed()), mustNew(t, 1, mixed()), mustNew(t, 2, mixed())
	end := 6 * time.Second
	require.Equal(t, a.Latest(end), b.Latest(end))
	require.Equal(t, a.events, b.events)
	c.Latest(end)
	require.NotEqual(t, a.events[5], c.events[5])
}

func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"order":      {Timeline: []Phase{{At: time.Second, Source: Still{}}, {At: time.Second, Source: Still{}}}},
		"negative":   {Timeline: []Phase{{At: -1, Source: Still{}}}},
		"no source":  {Timeline: []Phase{{}}},
		"refresh":    {Refresh: -60},
		"desktop":    {Desktop: 1.5},
		"complexity": {Timeline: []Phase{{Source: Animation{Complexity: 2}}}},
		"rate":       {Timeline: []Phase{{Source: Animation{Rate: 1e6}}}},
		"region":     {Timeline: []Phase{{Source: Video{Region: Rect{0.9, 0, 0.2, 0.5}}}}},
		"intervals":  {Timeline: []Phase{{Source: Typing{MinInterval: time.Second, MaxInterval: time.Millisecond}}}},
		"area":       {Timeline: []Phase{{Source: Typing{MaxArea: 0.5}}}},
		"script":     {Timeline: []Phase{{Source: Script{Changes: []Change{{At: 2}, {At: 1}}}}}},
	} {
		_, err := New(1, cfg)
		require.ErrorIs(t, err, ErrConfig, name)
	}
}

// BenchmarkMinuteOfScrolling polls a minute of scrolling (the costliest
// source for the canvas: 79% of the screen repainted at every refresh) at
// 60 Hz, as a capturer does. It checks that the minute was that load
// (scrollingMinute): a new version at every refresh, 79% of the screen
// changed on average within 10%; a source that changed less, or less
// often, would be timed under this one's name.
func BenchmarkMinuteOfScrolling(b *testing.B) {
	for b.Loop() {
		m, err := New(1, Config{Timeline: []Phase{{Source: Scrolling{}}}})
		require.NoError(b, err)
		var taken uint64
		var versions int
		var changed float64
		for k := int64(0); k <= 3600; k++ {
			img, d := m.Since(taken, refresh(k))
			if k > 0 && img.Version != taken {
				versions++
				changed += d.Changed
			}
			taken = img.Version
		}
		scrollingMinute(b, versions, changed)
	}
}

// scrollingMinute fails the benchmark unless each of the minute's 3600
// refreshes after the first found a new version, changed on average by the
// scrolled region's area (DefaultScrollingRegion, 79% of the screen)
// within 10%.
func scrollingMinute(b *testing.B, versions int, changed float64) {
	b.Helper()
	const polls = 3600
	repainted := DefaultScrollingRegion.Area()
	if versions != polls {
		b.Fatalf("%d of %d refreshes found a new version", versions, polls)
	}
	if mean := changed / polls; math.Abs(mean/repainted-1) > 0.1 {
		b.Fatalf("%.0f%% of the screen changed at a refresh on average, want %.0f%% within 10%%", 100*mean, 100*repainted)
	}
}

// A union counts, for any mix of parts (full-screen ones among them, first
// or later), the cells that marking every part in a fresh bitset counts: a
// full-screen part that comes first is counted without marking.
func TestUnionCountsAsMarkingEveryCell(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var scratch bitset
	for range 500 {
		parts := make([]part, 1+rng.IntN(6))
		for i := range parts {
			r := Rect{rng.Float64(), rng.Float64(), rng.Float64() / 2, rng.Float64() / 2}
			if rng.IntN(3) == 0 {
				r = Rect{0, 0, 1, 1}
			}
			parts[i] = newPart(r, float64(rng.IntN(4))/4)
		}
		var want detail
		var fresh bitset
		for i := len(parts) - 1; i >= 0; i-- {
			want.add(fresh.cover(&parts[i]), parts[i].complexity)
		}
		var got detail
		un := cellUnion{b: &scratch} // the previous union's marks are still in it
		for i := len(parts) - 1; i >= 0; i-- {
			got.add(un.cover(&parts[i], &got), parts[i].complexity)
		}
		if got != want {
			t.Fatalf("union of %d parts: %+v, want %+v", len(parts), got, want)
		}
	}
}
