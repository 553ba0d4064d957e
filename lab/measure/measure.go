// Package measure takes the measurements of the scenario catalogue
// (scenarios.Measurements) from a result over any window (Of, and OfWith
// for those that read a figure of their own), each by the computation a
// table binds to its name (computations.go), evaluates a scenario's
// expectations (Evaluate) and computes a result's summary (Summarise). It
// reads only the result, so a result read back from its JSON file
// measures exactly as the fresh one.
//
// Every quantile it takes is internal/quantile's nearest rank.
package measure

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Errors of Measure.
var (
	// ErrUnknown: the name is not in scenarios.Measurements.
	ErrUnknown = errors.New("lab: unknown measurement")
	// ErrNoData: the window holds nothing the measurement can be taken
	// on (no frame displayed, no bottleneck, no network change).
	ErrNoData = errors.New("lab: nothing to measure")
	// ErrWindow: the window is empty or negative.
	ErrWindow = errors.New("lab: bad window")
	// ErrParams: a measurement lacks a figure it reads (Params), or was
	// given one it does not read.
	ErrParams = errors.New("lab: bad parameters")
	// ErrNotRecovered: recovery.under: after a network phase change the
	// latency never came back under its bound for good.
	ErrNotRecovered = errors.New("lab: never recovered")
)

// Params are the figures some measurements read besides their window, as
// an expectation's keys give them (scenarios.MeasurementKeys says which
// measurement reads which); 0 is none.
type Params struct {
	// Latency is the latency bound of recovery.under and
	// latency.time-above.
	Latency time.Duration
	// At is the instant of bitrate.target and bitrate.sent.
	At time.Duration
	// Every is the averaging period of bitrate.capacity-correlation.
	Every time.Duration
	// Flow names the flow of the flow measurements: a flow of the
	// result's traffic, or main (scenarios.MainFlow) for its own session.
	Flow string
}

// ParamsOf takes an expectation's figures.
func ParamsOf(e scenarios.Expectation) Params {
	return Params{Latency: e.Latency, At: e.At, Every: e.Every, Flow: e.Flow}
}

// check refuses a figure the measurement name does not read, and the lack
// of one it does.
func (p Params) check(name string) error {
	reads := scenarios.MeasurementKeys(name)
	for _, k := range []struct {
		key string
		d   time.Duration
	}{{"latency", p.Latency}, {"at", p.At}, {"every", p.Every}} {
		switch read := slices.Contains(reads, k.key); {
		case k.d != 0 && !read:
			return fmt.Errorf("%w: %s does not read %s", ErrParams, name, k.key)
		case k.d == 0 && read:
			return fmt.Errorf("%w: %s needs %s", ErrParams, name, k.key)
		case k.d < 0:
			return fmt.Errorf("%w: %s of %s: %v is negative", ErrParams, k.key, name, k.d)
		}
	}
	switch read := slices.Contains(reads, "flow"); {
	case p.Flow != "" && !read:
		return fmt.Errorf("%w: %s does not read flow", ErrParams, name)
	case p.Flow == "" && read:
		return fmt.Errorf("%w: %s needs flow", ErrParams, name)
	}
	return nil
}

// result.Recovery's parameters: the latency of a second, back within 20% of the
// second before the change, looked for every 10 ms.
const (
	recoverySpan  = time.Second
	recoverySlack = 0.2
	recoveryStep  = 10 * time.Millisecond
)

// Measure computes a measurement of scenarios.Measurements over the window
// [from, to) of the session, counted from time zero; to 0 (or beyond the
// end) means the end of the session. Its value is in the catalogue's unit:
// seconds for durations, bits/s for rates, 0..1 for fractions.
//
// Each frame belongs to a window by the instant of the event measured:
// latency, estimate error and quality by when the frame was displayed (so
// a window sees what was on the screen during it, and frames still on
// their way at the end bias nothing), the network part by its arrival,
// bitrate and refinements by when the frame was handed to QUIC. Skips and
// drops count by their instant.
//
// Percentiles are nearest-rank (the median of an even count is the lower
// middle). Of returns ErrUnknown for a name not in
// the catalogue, ErrNoData (wrapped, saying what is missing) when the
// window holds nothing to measure, and ErrWindow for an empty window.
//
// Of takes the measurements that read no figure of their own; OfWith
// takes them all.
func Of(r *result.Run, name string, from, to time.Duration) (float64, error) {
	return OfWith(r, name, from, to, Params{})
}

// OfWith is Of for any measurement of the catalogue, given the figures it
// reads (Params): ErrParams when one it reads is missing or one it does
// not read is given. A measurement at an instant (p.At) ignores the
// window. recovery.under returns ErrNotRecovered, saying which change,
// when the latency never came back under its bound after one.
func OfWith(r *result.Run, name string, from, to time.Duration, p Params) (float64, error) {
	if _, ok := scenarios.LookupMeasurement(name); !ok {
		return 0, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	if err := p.check(name); err != nil {
		return 0, err
	}
	c, ok := computations[name]
	if !ok {
		// TestComputationsAreTheCatalogue fails first: the catalogue grew
		// without the lab.
		return 0, fmt.Errorf("%w %q: in the catalogue but not computed by the lab", ErrUnknown, name)
	}
	return c.take(r, name, from, to, p)
}

// resolve applies the defaults of a window: to 0 is the end, and the
// window stops at the end of what ran.
func resolve(r *result.Run, from, to time.Duration) (time.Duration, time.Duration, error) {
	if to <= 0 || to > r.Ran {
		to = r.Ran
	}
	if from < 0 || from >= to {
		return 0, 0, fmt.Errorf("%w: [%v, %v) in a session of %v", ErrWindow, from, to, r.Ran)
	}
	return from, to, nil
}

// window is [from, to) of a result.
type window struct {
	r        *result.Run
	from, to time.Duration
	// byDisplay holds the result's displayed frames in order of display,
	// sorted once for the window and its copies: a summary reads them
	// for most of its figures. Read only.
	byDisplay *[]result.FrameRecord
}

func newWindow(r *result.Run, from, to time.Duration) window {
	return window{r: r, from: from, to: to, byDisplay: new([]result.FrameRecord)}
}

// displayed is Displayed(w.r), sorted at the first call.
func (w window) displayed() []result.FrameRecord {
	if *w.byDisplay == nil {
		*w.byDisplay = Displayed(w.r)
		if *w.byDisplay == nil {
			*w.byDisplay = []result.FrameRecord{}
		}
	}
	return *w.byDisplay
}

// cut is the window [from, to) of the same result, sharing the frames
// sorted once.
func (w window) cut(from, to time.Duration) window {
	w.from, w.to = from, to
	return w
}

func (w window) length() time.Duration { return w.to - w.from }

func (w window) in(t time.Duration) bool { return t >= w.from && t < w.to }

func (w window) String() string { return fmt.Sprintf("[%v, %v)", w.from, w.to) }

// Displayed returns the displayed frames in order of display.
func Displayed(r *result.Run) []result.FrameRecord {
	n := 0
	for _, f := range r.Frames {
		if f.WasDisplayed() {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]result.FrameRecord, 0, n) // counted first: the records are large, and appending copied them again and again
	for _, f := range r.Frames {
		if f.WasDisplayed() {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(a, b result.FrameRecord) int { return int(a.Displayed - b.Displayed) })
	return out
}

func displayedAt(f result.FrameRecord) time.Duration { return f.Displayed }

// DisplayedIn returns the frames of fs (sorted by display, as Displayed
// returns them) displayed in [a, b).
func DisplayedIn(fs []result.FrameRecord, a, b time.Duration) []result.FrameRecord {
	return framesIn(fs, a, b, displayedAt)
}

// framesIn returns the frames of fs (sorted by key) whose key is in [a, b).
func framesIn(fs []result.FrameRecord, a, b time.Duration, key func(result.FrameRecord) time.Duration) []result.FrameRecord {
	lo := sort.Search(len(fs), func(i int) bool { return key(fs[i]) >= a })
	hi := sort.Search(len(fs), func(i int) bool { return key(fs[i]) >= b })
	return fs[lo:max(lo, hi)]
}

// Latencies returns the frames' true latencies, sorted.
func Latencies(fs []result.FrameRecord) []time.Duration {
	out := make([]time.Duration, len(fs))
	for i, f := range fs {
		out[i] = f.Latency
	}
	slices.Sort(out)
	return out
}

func (w window) displayedFrames() []result.FrameRecord {
	return framesIn(w.displayed(), w.from, w.to, displayedAt)
}

func (w window) latencyQuantile(p float64) (time.Duration, error) {
	lat := Latencies(w.displayedFrames())
	if len(lat) == 0 {
		return 0, fmt.Errorf("%w: no frame displayed in %v", ErrNoData, w)
	}
	return quantile.Nearest(lat, p), nil
}

func (w window) networkMedian() (time.Duration, error) {
	var ds []time.Duration
	for _, f := range w.r.Frames {
		if f.Arrived > 0 && w.in(f.Arrived) {
			ds = append(ds, f.Network)
		}
	}
	if len(ds) == 0 {
		return 0, fmt.Errorf("%w: no frame arrived in %v", ErrNoData, w)
	}
	slices.Sort(ds)
	return quantile.Nearest(ds, 0.5), nil
}

func (w window) estimateErrorMax() (time.Duration, error) {
	worst, n := time.Duration(0), 0
	for _, f := range w.displayedFrames() {
		if f.Estimate == 0 {
			continue // Displayed before the viewer's first clock exchange
		}
		worst, n = max(worst, (f.Estimate-f.Latency).Abs()), n+1
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: no frame displayed with the viewer's estimate in %v", ErrNoData, w)
	}
	return worst, nil
}

// events returns the events in the window.
func (w window) events() []result.EventRecord {
	var out []result.EventRecord
	for _, e := range w.r.Events {
		if w.in(e.At) {
			out = append(out, e)
		}
	}
	return out
}

// count counts the events of kind (and reason, unless empty).
func (w window) count(kind, reason string) int {
	n := 0
	for _, e := range w.events() {
		if e.Kind == kind && (reason == "" || e.Reason == reason) {
			n++
		}
	}
	return n
}

// freezes finds the stretches in which the screen had changed and the
// display did not (stills), cut to the window. It returns those longer
// than the freeze threshold and the longest, freeze or not.
func (w window) freezes() ([]result.Interval, time.Duration, error) {
	disp := w.displayed()
	return freezesIn(w.r, disp, stills(w.r, disp), w.from, w.to)
}

// stills are the stretches of the session in which the display stood
// still while the screen had changed: for each frame that brought newer
// content to the display (a higher screen version than any displayed
// before it), from its display, or from the first change of the screen
// after its version if that came later, until the next frame of newer
// content was displayed, or the end of the session. A change is pending
// from the refresh that presented it on the agent's screen, not from its
// capture: a change the agent could not capture or encode (the encoder
// restarting, the send cap full) leaves the display behind all the same.
// A frame of the same version (a refinement pass) does not end a stretch:
// the change it should show is still missing. The wait for the first
// frame is start-up, not a still.
//
// A result without the screen's changes (written before they were
// recorded) has every pause between two displays, and from the last to
// the end, as a still: the measure it was written with.
func stills(r *result.Run, disp []result.FrameRecord) []result.Interval {
	recorded := len(r.ScreenChanges) > 0
	for _, f := range disp {
		recorded = recorded && f.Version > 0
	}
	var out []result.Interval
	var shown uint64 // the newest version displayed so far
	for i, f := range disp {
		if recorded && f.Version <= shown {
			continue // nothing newer on the display: the stretch goes on
		}
		shown = f.Version
		// Until the next display of newer content, or the end.
		end := r.Ran
		for _, g := range disp[i+1:] {
			if !recorded || g.Version > shown {
				end = g.Displayed
				break
			}
		}
		start := f.Displayed
		if recorded {
			// Element v of the changes is when version v+1 appeared: the
			// first change the display has not shown.
			if shown >= uint64(len(r.ScreenChanges)) {
				continue // the screen never changed again
			}
			start = max(start, r.ScreenChanges[shown])
		}
		if end > start {
			out = append(out, result.Interval{From: start, To: end})
		}
	}
	return out
}

// freezesIn cuts the stills st (in order, from stills) to [from, to) and
// returns those longer than the freeze threshold and the longest. disp
// are the displayed frames in order of display: before the first display
// there is nothing to measure.
func freezesIn(r *result.Run, disp []result.FrameRecord, st []result.Interval, from, to time.Duration) ([]result.Interval, time.Duration, error) {
	if len(disp) == 0 || disp[0].Displayed >= to {
		return nil, 0, fmt.Errorf("%w: no frame displayed before %v", ErrNoData, to)
	}
	// Only the stills ending after from can reach into the window.
	first := sort.Search(len(st), func(i int) bool { return st[i].To > from })
	out := []result.Interval{}
	var longest time.Duration
	for _, s := range st[first:] {
		if s.From >= to {
			break
		}
		lo, hi := max(s.From, from), min(s.To, to)
		if hi <= lo {
			continue
		}
		longest = max(longest, hi-lo)
		if hi-lo > r.FreezeThreshold {
			out = append(out, result.Interval{From: lo, To: hi})
		}
	}
	return out, longest, nil
}

// bitrateMean is the encoded video handed to QUIC in the window, per
// second.
func (w window) bitrateMean() float64 {
	var bytes int64
	for _, f := range w.r.Frames {
		if f.Sent > 0 && w.in(f.Sent) {
			bytes += int64(f.Bytes)
		}
	}
	return float64(bytes*8) / w.length().Seconds()
}

// TargetAt is the controller's bitrate at t.
func TargetAt(r *result.Run, t time.Duration) (int64, bool) {
	i := sort.Search(len(r.Targets), func(i int) bool { return r.Targets[i].At > t })
	if i == 0 {
		return 0, false
	}
	return r.Targets[i-1].Bps, true
}

// bitrateMin is the lowest bitrate the controller asked for during the
// window: the one in force at its start and every later change in it.
func (w window) bitrateMin() (int64, error) {
	b, ok := TargetAt(w.r, w.from)
	for _, t := range w.r.Targets {
		if t.At > w.from && t.At < w.to && (!ok || t.Bps < b) {
			b, ok = t.Bps, true
		}
	}
	if !ok {
		return 0, fmt.Errorf("%w: no bitrate set in %v", ErrNoData, w)
	}
	return b, nil
}

// qualityFinal is the quality of the picture on the viewer's screen at the
// end of the window: the last frame displayed before it ends, even if
// that was before the window began (a still screen shows it still).
func (w window) qualityFinal() (float64, error) {
	disp := w.displayed()
	n := sort.Search(len(disp), func(i int) bool { return disp[i].Displayed >= w.to })
	if n == 0 {
		return 0, fmt.Errorf("%w: no frame displayed before %v", ErrNoData, w.to)
	}
	return disp[n-1].Quality, nil
}

// psnrQuantile is a quantile of the quality shown (PSNR, dB) of the frames
// displayed in the window that a real decoder judged.
func (w window) psnrQuantile(p float64) (float64, error) {
	var db []float64
	for _, f := range w.displayedFrames() {
		if f.PSNR > 0 {
			db = append(db, f.PSNR)
		}
	}
	if len(db) == 0 {
		return 0, fmt.Errorf("%w: no frame displayed in %v with a quality shown (a real encoder and decoder judge it: agent.encoder openh264-real)", ErrNoData, w)
	}
	slices.Sort(db)
	return quantile.Nearest(db, p), nil
}

// ssimQuantile is a quantile of the structural similarity of the frames
// displayed in the window that a real decoder judged (those with a PSNR).
func (w window) ssimQuantile(p float64) (float64, error) {
	var s []float64
	for _, f := range w.displayedFrames() {
		if f.PSNR > 0 {
			s = append(s, f.SSIM)
		}
	}
	if len(s) == 0 {
		return 0, fmt.Errorf("%w: no frame displayed in %v with a quality shown (a real encoder and decoder judge it: agent.encoder openh264-real)", ErrNoData, w)
	}
	slices.Sort(s)
	return quantile.Nearest(s, p), nil
}

// damagedFrames counts the frames displayed in the window with a damaged
// picture.
func (w window) damagedFrames() int {
	n := 0
	for _, f := range w.displayedFrames() {
		if f.Damaged {
			n++
		}
	}
	return n
}

// damagedTime is how long the display showed a damaged picture in the
// window, in all and in the longest stretch: a damaged frame's picture is
// on the screen from its display until the next frame's display (or the
// end of the session), and damaged frames displayed one after another
// make one stretch. The stretches are cut to the window.
func (w window) damagedTime() (total, longest time.Duration) {
	disp := w.displayed()
	var start time.Duration
	open := false
	close := func(end time.Duration) {
		if !open {
			return
		}
		open = false
		a, b := max(start, w.from), min(end, w.to)
		if b > a {
			total += b - a
			longest = max(longest, b-a)
		}
	}
	for _, f := range disp {
		if f.Damaged && !open {
			start, open = f.Displayed, true
		} else if !f.Damaged {
			close(f.Displayed)
		}
	}
	close(w.r.Ran)
	return total, longest
}

// keyframesSent counts the keyframes the agent sent in the window.
func (w window) keyframesSent() int {
	n := 0
	for _, f := range w.r.Frames {
		if f.Keyframe && f.Sent > 0 && w.in(f.Sent) {
			n++
		}
	}
	return n
}

func (w window) refinements() int {
	n := 0
	for _, f := range w.r.Frames {
		if f.Pass > 0 && f.Sent > 0 && w.in(f.Sent) {
			n++
		}
	}
	return n
}

// utilisation is the encoded video that arrived over the downlink divided
// by what the downlink's bottleneck could carry, over the parts of the
// window where it has one (a rate cap or a trace). The capacity comes from
// the series' buckets, prorated where the window cuts one; a bucket only
// partly capped counts whole.
func (w window) utilisation() (float64, error) {
	return w.overCapacity(func(f result.FrameRecord) time.Duration { return f.Arrived })
}

// utilisationSent is utilisation with the video counted when it was handed
// to QUIC rather than when it arrived: what the agent asked of the link,
// which may exceed what it could carry.
func (w window) utilisationSent() (float64, error) {
	return w.overCapacity(func(f result.FrameRecord) time.Duration { return f.Sent })
}

// overCapacity is the encoded video of the frames whose instant (0: never)
// falls in the capped parts of the window, over the downlink's capacity
// there.
func (w window) overCapacity(instant func(result.FrameRecord) time.Duration) (float64, error) {
	video := NewFrameBytes(w.r.Frames, instant)
	var capBits, videoBits float64
	capped := false
	for _, pt := range w.r.Series {
		if !pt.Down.Capped {
			continue
		}
		lo, hi := max(pt.From, w.from), min(pt.To, w.to)
		if hi <= lo {
			continue
		}
		capped = true
		capBits += pt.Down.CapacityBps * (hi - lo).Seconds()
		videoBits += float64(video.In(lo, hi) * 8)
	}
	switch {
	case !capped:
		return 0, fmt.Errorf("%w: the downlink has no rate cap or trace in %v", ErrNoData, w)
	case capBits == 0:
		return 0, fmt.Errorf("%w: the downlink's trace offers no capacity in %v", ErrNoData, w)
	}
	return videoBits / capBits, nil
}

// changes lists the instants at which a direction's network phase changes,
// merged across directions.
func changes(r *result.Run) []result.Recovery {
	var out []result.Recovery
	add := func(dir string, phases []result.PhaseInfo) {
		for _, ph := range phases {
			if ph.At <= 0 {
				continue
			}
			if i := slices.IndexFunc(out, func(c result.Recovery) bool { return c.At == ph.At }); i >= 0 {
				out[i].Direction = "both"
				continue
			}
			out = append(out, result.Recovery{At: ph.At, Direction: dir})
		}
	}
	add("down", r.Network.Down)
	add("up", r.Network.Up)
	slices.SortFunc(out, func(a, b result.Recovery) int { return int(a.At - b.At) })
	return out
}

// recoveries measures, for each network phase change in the window, how
// long the latency took to come back: the level before is the median
// latency of the second before the change (or of the last second with a
// frame displayed, if the screen was frozen then); the latency is back
// when a whole second starting at or after the change has a median at
// most 20% above it and no freeze. Better latency counts as back:
// recovering means undoing the harm. The freeze condition is there
// because a frozen screen has no latency to take a median of: without it
// the few fresh frames after a blackout would call the second good while
// the image stood still for most of it. A change that never recovers
// before the window ends counts the time to the end.
func (w window) recoveries() ([]result.Recovery, error) {
	disp := w.displayed()
	st := stills(w.r, disp)
	median := func(a, b time.Duration) (time.Duration, bool) {
		fs := framesIn(disp, a, b, displayedAt)
		if len(fs) == 0 {
			return 0, false
		}
		return quantile.Nearest(Latencies(fs), 0.5), true
	}
	var out []result.Recovery
	for _, c := range changes(w.r) {
		if !w.in(c.At) {
			continue
		}
		before, ok := median(c.At-recoverySpan, c.At)
		if !ok {
			last := sort.Search(len(disp), func(i int) bool { return disp[i].Displayed >= c.At })
			if last == 0 {
				continue // nothing was displayed before: no level to return to
			}
			end := disp[last-1].Displayed
			before, _ = median(end-recoverySpan, end+1)
		}
		c.Before = before
		limit := time.Duration(float64(before) * (1 + recoverySlack))
		c.After = w.to - c.At
		for s := time.Duration(0); c.At+s+recoverySpan <= w.to; s += recoveryStep {
			a, b := c.At+s, c.At+s+recoverySpan
			if m, ok := median(a, b); !ok || m > limit {
				continue
			}
			if fz, _, err := freezesIn(w.r, disp, st, a, b); err != nil || len(fz) > 0 {
				continue
			}
			c.Recovered, c.After = true, s
			break
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no network phase change with frames displayed before it in %v", ErrNoData, w)
	}
	return out, nil
}

// longestRecovery is recovery's value: the longest of the recoveries in
// the window.
func (w window) longestRecovery() (float64, error) {
	rec, err := w.recoveries()
	if err != nil {
		return 0, err
	}
	var longest time.Duration
	for _, rc := range rec {
		longest = max(longest, rc.After)
	}
	return longest.Seconds(), nil
}

// recoveriesUnder measures, for each network phase change in the window
// (either direction), how long the latency took to come back under bound
// for good. The latency at an instant t is the median latency of the
// frames displayed in the second up to it, (t-1s, t], so a frame counts by
// its display instant, as the other latency measurements do: what the
// viewer's screen showed then. A second without a displayed frame is not
// under the bound (a frozen picture shows no latency). The latency is back
// from the end of its last stretch at or above the bound before the next
// change (or the window's end), and never came back when that stretch
// reaches it. The median changes only where a frame enters or leaves the
// second, so the walk visits those instants alone and is exact.
func (w window) recoveriesUnder(bound time.Duration) ([]result.Recovery, error) {
	disp := w.displayed()
	all := changes(w.r)
	var out []result.Recovery
	for i, c := range all {
		if !w.in(c.At) {
			continue
		}
		end := w.to
		if i+1 < len(all) {
			end = min(end, all[i+1].At)
		}
		c.Before, _ = trailingMedian(disp, c.At)
		// The instants where the median can change: each display in
		// (c.At, end) and each display's leaving a second later.
		steps := []time.Duration{c.At}
		for _, f := range disp {
			for _, t := range []time.Duration{f.Displayed, f.Displayed + recoverySpan} {
				if t > c.At && t < end {
					steps = append(steps, t)
				}
			}
		}
		slices.Sort(steps)
		steps = slices.Compact(steps)
		back := c.At // the latency is under the bound from here on
		for k, t := range steps {
			if m, ok := trailingMedian(disp, t); !ok || m >= bound {
				back = end
				if k+1 < len(steps) {
					back = steps[k+1]
				}
			}
		}
		c.Recovered, c.After = back < end, back-c.At
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no network phase change in %v", ErrNoData, w)
	}
	return out, nil
}

// recoveryUnder is recovery.under's value for bound (longestUnder).
func (w window) recoveryUnder(bound time.Duration) (float64, error) {
	rec, err := w.recoveriesUnder(bound)
	if err != nil {
		return 0, err
	}
	return w.longestUnder(rec, bound)
}

// longestUnder is recovery.under's value: the longest of the recoveries
// rec, or ErrNotRecovered naming the first change the latency never came
// back from, and where it stood then.
func (w window) longestUnder(rec []result.Recovery, bound time.Duration) (float64, error) {
	var longest time.Duration
	for i, rc := range rec {
		if !rc.Recovered {
			end := rc.At + rc.After
			until := "the window's end"
			if i+1 < len(rec) && rec[i+1].At == end {
				until = "the next change"
			}
			// The median is constant over the last stretch before end.
			last := "no frame was displayed in the last second"
			if m, ok := trailingMedian(w.displayed(), end-1); ok {
				last = fmt.Sprintf("the median of the last second was %v", m)
			}
			return 0, fmt.Errorf("%w: after the change at %v (%s) the latency did not come back under %v for good before %s, at %v: %s",
				ErrNotRecovered, rc.At, rc.Direction, bound, until, end, last)
		}
		longest = max(longest, rc.After)
	}
	return longest.Seconds(), nil
}

// trailingMedian is the median latency of the frames of disp (in order of
// display) displayed in (t-1s, t]; false when there are none.
func trailingMedian(disp []result.FrameRecord, t time.Duration) (time.Duration, bool) {
	lo := sort.Search(len(disp), func(i int) bool { return disp[i].Displayed > t-recoverySpan })
	hi := sort.Search(len(disp), func(i int) bool { return disp[i].Displayed > t })
	if hi <= lo {
		return 0, false
	}
	return quantile.Nearest(Latencies(disp[lo:hi]), 0.5), true
}

// timeAbove is the share of the window's time with a picture on the
// viewer's screen during which that picture's latency was above bound:
// each displayed frame is on the screen from its display to the next
// one's (or the end of the session), so the frame shown when the window
// starts counts too, and a pause counts as the frame it holds. The time
// before the first display is left out (no picture yet).
func (w window) timeAbove(bound time.Duration) (float64, error) {
	disp := w.displayed()
	n := sort.Search(len(disp), func(i int) bool { return disp[i].Displayed >= w.to })
	if n == 0 {
		return 0, fmt.Errorf("%w: no frame displayed before %v", ErrNoData, w.to)
	}
	first := max(0, sort.Search(n, func(i int) bool { return disp[i].Displayed > w.from })-1)
	var shown, above time.Duration
	for i := first; i < n; i++ {
		a, b := disp[i].Displayed, w.r.Ran
		if i+1 < len(disp) {
			b = disp[i+1].Displayed
		}
		lo, hi := max(a, w.from), min(b, w.to)
		if hi <= lo {
			continue
		}
		shown += hi - lo
		if disp[i].Latency > bound {
			above += hi - lo
		}
	}
	if shown == 0 {
		return 0, fmt.Errorf("%w: no picture on the screen in %v", ErrNoData, w)
	}
	return above.Seconds() / shown.Seconds(), nil
}

// targetAtInstant is the controller's bitrate at t.
func targetAtInstant(r *result.Run, t time.Duration) (int64, error) {
	if t > r.Ran {
		return 0, fmt.Errorf("%w: at %v is after the session's end, %v", ErrWindow, t, r.Ran)
	}
	b, ok := TargetAt(r, t)
	if !ok {
		return 0, fmt.Errorf("%w: no bitrate set by %v", ErrNoData, t)
	}
	return b, nil
}

// sentAtInstant is the video handed to QUIC in the sample period before t
// (from time zero when t is earlier), per second: what the series' point
// ending at t shows when t is on its grid.
func sentAtInstant(r *result.Run, t time.Duration) (float64, error) {
	if t > r.Ran {
		return 0, fmt.Errorf("%w: at %v is after the session's end, %v", ErrWindow, t, r.Ran)
	}
	step := r.SampleEvery
	if step <= 0 {
		step = result.DefaultSampleEvery
	}
	from := max(0, t-step)
	if t <= from {
		return 0, fmt.Errorf("%w: nothing is sent before %v", ErrNoData, t)
	}
	return newWindow(r, from, t).bitrateMean(), nil
}

// capacityCorrelation is the Pearson correlation of the controller's
// target with the downlink's capacity, each averaged over the consecutive
// periods of every from the window's start (a last, shorter period is left
// out). A period counts only when the series covers it and the downlink is
// capped throughout (uncapped, it has no capacity to follow). Fewer than
// three periods, or a figure that does not change between them, give no
// correlation.
func (w window) capacityCorrelation(every time.Duration) (float64, error) {
	var target, capacity []float64
	for a := w.from; a+every <= w.to; a += every {
		c, ok := meanCapacity(w.r, a, a+every)
		if !ok {
			continue
		}
		t, ok := targetMean(w.r, a, a+every)
		if !ok {
			continue
		}
		target, capacity = append(target, t), append(capacity, c)
	}
	switch {
	case len(target) < 3:
		return 0, fmt.Errorf("%w: %d periods of %v in %v with the downlink capped throughout: a correlation needs three", ErrNoData, len(target), every, w)
	case stat.Variance(target, nil) == 0:
		return 0, fmt.Errorf("%w: the target bitrate is the same in every period of %v in %v: nothing to correlate", ErrNoData, every, w)
	case stat.Variance(capacity, nil) == 0:
		return 0, fmt.Errorf("%w: the downlink's capacity is the same in every period of %v in %v: nothing to correlate", ErrNoData, every, w)
	}
	return stat.Correlation(target, capacity, nil), nil
}

// meanCapacity is the downlink's mean capacity over [a, b) from the
// series; false unless the series covers it with capped points.
func meanCapacity(r *result.Run, a, b time.Duration) (float64, bool) {
	var bits float64
	var covered time.Duration
	for _, pt := range r.Series {
		lo, hi := max(pt.From, a), min(pt.To, b)
		if hi <= lo {
			continue
		}
		if !pt.Down.Capped {
			return 0, false
		}
		bits += pt.Down.CapacityBps * (hi - lo).Seconds()
		covered += hi - lo
	}
	if covered < b-a {
		return 0, false
	}
	return bits / (b - a).Seconds(), true
}

// targetMean is the controller's bitrate averaged over [a, b); false when
// none was set at a.
func targetMean(r *result.Run, a, b time.Duration) (float64, bool) {
	bps, ok := TargetAt(r, a)
	if !ok {
		return 0, false
	}
	var bits float64
	t := a
	for _, tr := range r.Targets {
		if tr.At <= a {
			continue
		}
		if tr.At >= b {
			break
		}
		bits += float64(bps) * (tr.At - t).Seconds()
		t, bps = tr.At, tr.Bps
	}
	bits += float64(bps) * (b - t).Seconds()
	return bits / (b - a).Seconds(), true
}

// timeUntil is how long after the window's start the first one-second
// span starts (spans step by the sample period) in which measure meets
// good; ErrNoData if none does before the window's end.
func (w window) timeUntil(measure func(window) (float64, error), good func(float64) bool) (float64, error) {
	step := w.r.SampleEvery
	if step <= 0 {
		step = result.DefaultSampleEvery
	}
	for t := w.from; t+time.Second <= w.to; t += step {
		v, err := measure(w.cut(t, t+time.Second))
		if err == nil && good(v) {
			return (t - w.from).Seconds(), nil
		}
	}
	return 0, fmt.Errorf("%w: no second of %v meets it", ErrNoData, w)
}
