package calibrate

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/encoder"
)

// Summary is what an encoder did in one case of the size experiment.
type Summary struct {
	// IBytes is the first keyframe's size.
	IBytes int
	// PBytes is the median size of the frames of new content after it that
	// were encoded (0 when there was none).
	PBytes float64
	// P counts those frames.
	P int
	// SkipRate is the share of the new images after the first that the
	// rate control skipped.
	SkipRate float64
}

// Summarise sums up a case's frames (refinement passes left out): the
// first frame's size, and the P frames and skips from warmup on, once the
// rate control has paid for that first frame.
func Summarise(frames []Frame, warmup time.Duration) Summary {
	var s Summary
	var p []float64
	attempts, skipped := 0, 0
	first := true
	for _, f := range frames {
		if f.Pass > 0 {
			continue
		}
		if first && !f.Skipped {
			s.IBytes, first = f.Bytes, false
			continue
		}
		if f.At < warmup {
			continue
		}
		attempts++
		if f.Skipped {
			skipped++
			continue
		}
		p = append(p, float64(f.Bytes))
	}
	s.P = len(p)
	s.PBytes = median(p)
	if attempts > 0 {
		s.SkipRate = float64(skipped) / float64(attempts)
	}
	return s
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Params are the model's parameters the calibration fits: the ones that
// decide frame sizes and skips (encoder.Config's fields of the same names).
type Params struct {
	FullScreenBits float64
	KeyframeFactor float64
	// MinFrameBytes as encoder.Config has it: negative means none.
	MinFrameBytes int
	// FirstKeyframeBits as encoder.Config has it: zero means the first
	// keyframe is held to its budgets.
	FirstKeyframeBits float64
	// Content are the per-kind costs, in the order of the kinds fitted
	// (none: every kind is new content at every change).
	Content []encoder.ContentCost
	// SkipBuffer as encoder.Config has it: zero the default threshold,
	// negative a rate control that never skips.
	SkipBuffer time.Duration
	// FillExponent as encoder.Config has it: how much the share of a
	// recorded change's pixels that changed weighs its detail.
	FillExponent float64
}

// Apply returns cfg with p's values.
func (p Params) Apply(cfg encoder.Config) encoder.Config {
	cfg.FullScreenBits, cfg.KeyframeFactor, cfg.MinFrameBytes = p.FullScreenBits, p.KeyframeFactor, p.MinFrameBytes
	cfg.FirstKeyframeBits, cfg.Content, cfg.SkipBuffer = p.FirstKeyframeBits, p.Content, p.SkipBuffer
	cfg.FillExponent = p.FillExponent
	return cfg
}

// Of reads cfg's parameters, defaults filled in.
func Of(cfg encoder.Config) Params {
	p := Params{FullScreenBits: cfg.FullScreenBits, KeyframeFactor: cfg.KeyframeFactor, MinFrameBytes: cfg.MinFrameBytes,
		FirstKeyframeBits: cfg.FirstKeyframeBits, Content: slices.Clone(cfg.Content), SkipBuffer: cfg.SkipBuffer,
		FillExponent: cfg.FillExponent}
	if p.FullScreenBits == 0 {
		p.FullScreenBits = encoder.DefaultFullScreenBits
	}
	if p.KeyframeFactor == 0 {
		p.KeyframeFactor = encoder.DefaultKeyframeFactor
	}
	if p.MinFrameBytes == 0 {
		p.MinFrameBytes = encoder.DefaultMinFrameBytes
	}
	return p
}

// cost returns p's cost of a kind, and false when it has none.
func (p Params) cost(kind string) (encoder.ContentCost, bool) {
	for _, c := range p.Content {
		if c.Kind == kind {
			return c, true
		}
	}
	return encoder.ContentCost{}, false
}

// withCost returns p with c as its kind's cost, in place of any other.
func (p Params) withCost(c encoder.ContentCost) Params {
	out := slices.DeleteFunc(slices.Clone(p.Content), func(d encoder.ContentCost) bool { return d.Kind == c.Kind })
	if c != (encoder.ContentCost{Kind: c.Kind}) {
		out = append(out, c)
		slices.SortFunc(out, func(a, b encoder.ContentCost) int { return strings.Compare(a.Kind, b.Kind) })
	}
	if len(out) == 0 {
		out = nil
	}
	p.Content = out
	return p
}

// only returns p with the content costs of kinds alone.
func (p Params) only(kinds []string) Params {
	p.Content = slices.DeleteFunc(slices.Clone(p.Content), func(c encoder.ContentCost) bool { return !slices.Contains(kinds, c.Kind) })
	if len(p.Content) == 0 {
		p.Content = nil
	}
	return p
}

// canonical writes a kind's first keyframe equal to the shared one as
// zero, leaves out costs that are all zero, and sorts the costs by kind:
// the order a configuration lists them in changes nothing.
func (p Params) canonical() Params {
	p.Content = slices.Clone(p.Content)
	slices.SortFunc(p.Content, func(a, b encoder.ContentCost) int { return strings.Compare(a.Kind, b.Kind) })
	for _, c := range p.Content {
		if c.KeyframeBits == p.FirstKeyframeBits {
			c.KeyframeBits = 0
			p = p.withCost(c)
		}
	}
	return p
}

// Grid is the values Fit tries: every combination of the parameters
// shared by every content, then, for each kind whose reference made P
// frames, every combination of that kind's costs.
type Grid struct {
	FullScreenBits    []float64
	KeyframeFactor    []float64
	MinFrameBytes     []int
	FirstKeyframeBits []float64
	// MotionBits, KindMinFrameBytes and KeyframeBits are a kind's
	// ContentCost values; nil fits none. A kind whose best is all zeros
	// gets no ContentCost.
	MotionBits        []float64
	KindMinFrameBytes []int
	KeyframeBits      []float64
	// SkipBuffer are the rate control's skip thresholds tried, first of
	// all (a negative one: never skip); nil keeps the base's. Whether a
	// real encoder skips is a switch, not a figure to fit, so the default
	// grid leaves it alone; a calibration against OpenH264 with skipping
	// off (Options.NoSkip) tries the model without skipping too.
	SkipBuffer []time.Duration
	// FillExponent are the weights of a recorded change's fill tried
	// (encoder.Config.FillExponent); nil keeps the base's. Only recorded
	// content has a fill below 1, so only its cases see it.
	FillExponent []float64
}

// DefaultGrid spans the model's plausible range: whole-screen needs from
// 0.25 to 16 Mbit in steps of about 1.4, keyframes of 1 to 8 budgets, and
// smallest frames from none to 40 KB; a first keyframe from the budget's
// (0) to 16 Mbit for a whole screen at complexity 1 (OpenH264's first IDR
// hardly depends on the bitrate); motion from none (new content) to 1
// Mbit for a whole screen moving, each kind's smallest frame from the
// shared one (0) or none to 240 KB, and its first keyframe's bits from
// the shared ones (0) or 0.25 to 16 Mbit.
var DefaultGrid = Grid{
	FullScreenBits:    []float64{0.25e6, 0.35e6, 0.5e6, 0.7e6, 1e6, 1.4e6, 2e6, 2.8e6, 4e6, 5.6e6, 8e6, 11e6, 16e6},
	KeyframeFactor:    []float64{1, 2, 4, 8},
	MinFrameBytes:     []int{-1, 100, 300, 600, 1200, 2500, 5000, 10000},
	FirstKeyframeBits: []float64{0, 0.5e6, 0.7e6, 1e6, 1.4e6, 2e6, 2.8e6, 4e6, 5.6e6, 8e6, 11e6, 16e6},
	MotionBits:        []float64{0, 8e3, 10e3, 12e3, 14e3, 16e3, 20e3, 24e3, 28e3, 32e3, 40e3, 48e3, 56e3, 64e3, 80e3, 96e3, 128e3, 192e3, 256e3, 384e3, 512e3, 1e6},
	KindMinFrameBytes: []int{0, -1, 300, 600, 1200, 2500, 5000, 10000, 20000, 30000, 40000, 60000, 80000, 120000, 160000, 240000},
	KeyframeBits:      []float64{0, 0.25e6, 0.35e6, 0.5e6, 0.7e6, 1e6, 1.4e6, 2e6, 2.8e6, 4e6, 5.6e6, 8e6, 11e6, 16e6},
	FillExponent:      []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1},
}

// Errors is how far a model's summaries are from the reference's in one
// content kind.
type Errors struct {
	// PMdAPE is the median absolute percentage error of the median P-frame
	// size, over the bitrates where both made P frames; NaN when none.
	PMdAPE float64
	// IMdAPE is the same for the keyframe's size.
	IMdAPE float64
	// SkipDiff is the mean absolute difference of the skip rates, in
	// percentage points.
	SkipDiff float64
}

// Compare measures a model's summaries against the reference's, case by
// case (the same order).
func Compare(model, ref []Summary) Errors {
	var p, i []float64
	skip := 0.0
	for k := range ref {
		if ref[k].P > 0 && model[k].P > 0 {
			p = append(p, 100*math.Abs(model[k].PBytes-ref[k].PBytes)/ref[k].PBytes)
		}
		if ref[k].IBytes > 0 {
			i = append(i, 100*math.Abs(float64(model[k].IBytes-ref[k].IBytes))/float64(ref[k].IBytes))
		}
		skip += 100 * math.Abs(model[k].SkipRate-ref[k].SkipRate)
	}
	e := Errors{PMdAPE: math.NaN(), IMdAPE: math.NaN(), SkipDiff: skip / float64(max(len(ref), 1))}
	if len(p) > 0 {
		e.PMdAPE = median(p)
	}
	if len(i) > 0 {
		e.IMdAPE = median(i)
	}
	return e
}

// Loss is what Fit minimises over a set of cases: the mean of the squared
// log ratios of the P-frame and keyframe sizes (a factor of two too big
// costs what a factor of two too small does) plus the squared skip-rate
// differences.
func Loss(model, ref []Summary) float64 {
	sum, n := 0.0, 0
	for k := range ref {
		if ref[k].P > 0 {
			// A model that makes no P frame where the reference does is as
			// wrong as one a factor of e^2 off.
			l := 2.0
			if model[k].P > 0 {
				l = math.Log(model[k].PBytes / ref[k].PBytes)
			}
			sum += l * l
			n++
		}
		if ref[k].IBytes > 0 && model[k].IBytes > 0 {
			l := math.Log(float64(model[k].IBytes) / float64(ref[k].IBytes))
			sum += l * l
			n++
		}
		d := model[k].SkipRate - ref[k].SkipRate
		sum += d * d
		n++
	}
	if n == 0 {
		return math.Inf(1)
	}
	return sum / float64(n)
}

// Fit searches grid for the parameters whose model, on cases, comes
// closest to ref (Loss), starting from base's. It searches by
// coordinates: each shared parameter over its values with the others held,
// then each kind's costs (its MotionBits and KindMinFrameBytes together,
// where the reference made P frames, then its KeyframeBits) on that
// kind's cases alone (a case shows one kind, or a recording's two, the
// recorded kind and its motion, so a kind's costs change nothing else), round after round until a round changes nothing (at most
// eight). A value replaces the one held only when it lowers the loss, so
// a parameter the cases cannot see keeps its value. It runs the model once
// per value tried, so it must be called inside a synctest bubble.
func Fit(cases []Case, ref []Summary, base encoder.Config, grid Grid, warmup time.Duration) (Params, float64, error) {
	loss := func(p Params, cs []Case, rs []Summary) (float64, error) {
		sums, err := ModelSummaries(cs, p.Apply(base), warmup)
		if err != nil {
			return 0, err
		}
		return Loss(sums, rs), nil
	}
	best := Of(base)
	bestLoss, err := loss(best, cases, ref)
	if err != nil {
		return Params{}, 0, err
	}
	// try replaces best by p when p does better on cases.
	try := func(p Params) error {
		l, err := loss(p, cases, ref)
		if err == nil && l < bestLoss {
			best, bestLoss = p, l
		}
		return err
	}
	for round := 0; round < 8; round++ {
		before := best
		// The parameters every kind shares, one at a time from the best so
		// far; the first error stops the fit.
		err := tryEach(grid.SkipBuffer, &best, func(p *Params, v time.Duration) { p.SkipBuffer = v }, try)
		if err == nil {
			err = tryEach(grid.FullScreenBits, &best, func(p *Params, v float64) { p.FullScreenBits = v }, try)
		}
		if err == nil {
			err = tryEach(grid.KeyframeFactor, &best, func(p *Params, v float64) { p.KeyframeFactor = v }, try)
		}
		if err == nil {
			err = tryEach(grid.MinFrameBytes, &best, func(p *Params, v int) { p.MinFrameBytes = v }, try)
		}
		if err == nil {
			err = tryEach(grid.FillExponent, &best, func(p *Params, v float64) { p.FillExponent = v }, try)
		}
		if err != nil {
			return Params{}, 0, err
		}
		// The kinds' first keyframes are held where they are while the
		// shared one moves (a kind's zero follows it): the shared one
		// then fits the desktop, and each kind's its own.
		pinned := best
		for _, kind := range kindsOf(cases) {
			c, _ := pinned.cost(kind)
			if c.KeyframeBits == 0 {
				c.Kind, c.KeyframeBits = kind, best.FirstKeyframeBits
				pinned = pinned.withCost(c)
			}
		}
		for _, v := range grid.FirstKeyframeBits {
			p := pinned
			p.FirstKeyframeBits = v
			if err := try(p.canonical()); err != nil {
				return Params{}, 0, err
			}
		}
		// A kind left pinned where the cases cannot see its keyframe (one
		// whose content comes after the first frame) follows the shared
		// one again.
		for _, c := range best.Content {
			if c.KeyframeBits == 0 {
				continue
			}
			c.KeyframeBits = 0
			p := best.withCost(c)
			l, err := loss(p, cases, ref)
			if err != nil {
				return Params{}, 0, err
			}
			if l <= bestLoss {
				best, bestLoss = p, l
			}
		}
		for _, kind := range kindsOf(cases) {
			var kc []Case
			var kr []Summary
			for i, c := range cases {
				if slices.Contains(c.kinds(), kind) {
					kc, kr = append(kc, c), append(kr, ref[i])
				}
			}
			kindLoss, err := loss(best, kc, kr)
			if err != nil {
				return Params{}, 0, err
			}
			// tryKind replaces best by p when p does better on the kind's
			// cases.
			tryKind := func(p Params) error {
				l, err := loss(p, kc, kr)
				if err == nil && l < kindLoss {
					best, kindLoss = p, l
				}
				return err
			}
			mins := grid.KindMinFrameBytes
			if mins == nil {
				mins = []int{0}
			}
			if hasPFrames(kr) {
				from, _ := best.cost(kind)
				for _, mo := range grid.MotionBits {
					for _, mb := range mins {
						if err := tryKind(best.withCost(encoder.ContentCost{Kind: kind, MotionBits: mo, MinFrameBytes: mb, KeyframeBits: from.KeyframeBits})); err != nil {
							return Params{}, 0, err
						}
					}
				}
			}
			from, _ := best.cost(kind)
			for _, kb := range grid.KeyframeBits {
				c := from
				c.Kind, c.KeyframeBits = kind, kb
				if err := tryKind(best.withCost(c)); err != nil {
					return Params{}, 0, err
				}
			}
		}
		if bestLoss, err = loss(best, cases, ref); err != nil {
			return Params{}, 0, err
		}
		if reflect.DeepEqual(before, best) {
			break
		}
	}
	return best, bestLoss, nil
}

// tryEach sets one parameter to each of vals in turn on *best, which try
// replaces whenever a value does better.
func tryEach[T any](vals []T, best *Params, set func(*Params, T), try func(Params) error) error {
	for _, v := range vals {
		p := *best
		set(&p, v)
		if err := try(p); err != nil {
			return err
		}
	}
	return nil
}

// kindsOf lists the kinds of cases in their order.
func kindsOf(cases []Case) []string {
	var out []string
	for _, c := range cases {
		for _, k := range c.kinds() {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// hasPFrames tells whether the reference made P frames in any case: a
// kind's motion and smallest frame show only there.
func hasPFrames(ref []Summary) bool {
	return slices.ContainsFunc(ref, func(s Summary) bool { return s.P > 0 })
}

// ModelSummaries runs the model of cfg through every case (inside a
// synctest bubble) and sums each up.
func ModelSummaries(cases []Case, cfg encoder.Config, warmup time.Duration) ([]Summary, error) {
	out := make([]Summary, len(cases))
	for i, c := range cases {
		fr, err := Model(c, cfg)
		if err != nil {
			return nil, err
		}
		out[i] = Summarise(fr, warmup)
	}
	return out, nil
}
