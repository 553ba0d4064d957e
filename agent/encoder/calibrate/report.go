package calibrate

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/screen/paint"
)

// Options size a calibration run.
type Options struct {
	// Kinds and Bitrates are the size experiment's cases; nil means Kinds
	// and Bitrates.
	Kinds    []string
	Bitrates []int
	// Length is how long each size case runs; zero means 8 s.
	Length time.Duration
	// Warmup is when a size case's P frames and skips start counting: the
	// first keyframe is paid for by then (OpenH264's first IDR is 50-360
	// KB at 720p whatever the target, seconds of a low bitrate); zero
	// means half of Length.
	Warmup time.Duration
	// Width and Height are the pictures' size; zero means 1280x720. The
	// model has no resolution: its FullScreenBits is a whole screen's need
	// at whatever size it is calibrated at.
	Width, Height int
	// Grid is what Fit searches; the zero Grid means DefaultGrid.
	Grid Grid
	// NoSkip turns OpenH264's frame skipping off (openh264-real-noskip):
	// what its P frames cost at every refresh, without the skips' longer
	// shifts. The fit is then to that encoder.
	NoSkip bool
}

// The refinement and step experiments.
var (
	// RefineCase: a photo on a still desktop at 1 s, 1 Mbit/s, then the
	// agent's 15 refinement passes 100 ms apart (agent.DefaultRefinePasses,
	// DefaultRefineEvery).
	RefineCase = Case{Kind: "photo", At: time.Second, Bitrate: 1_000_000, Length: 3 * time.Second, Passes: 15, PassEvery: 100 * time.Millisecond}
	// StepCase: the animation at 4 Mbit/s, 1 Mbit/s from 3 s.
	StepCase = Case{Kind: "animation", Bitrate: 4_000_000, StepAt: 3 * time.Second, StepTo: 1_000_000, Length: 6 * time.Second}
	// RepairCase: the animation at 2 Mbit/s, a keyframe asked for every
	// second from 1 s, as a viewer whose reference chain broke asks: what a
	// repair costs the sent rate and the frame rate (a lossy session's
	// viewer asks about that often).
	RepairCase = Case{Kind: "animation", Bitrate: 2_000_000, Length: 8 * time.Second, KeyframeEvery: time.Second}
	// OfferCase: the animation at 2 Mbit/s for 6 s, offered to the encoder
	// at every tick, then at every OfferStrides-th: what a rate control
	// that counts frames sends when frames come slower than its frame
	// rate.
	OfferCase    = Case{Kind: "animation", Bitrate: 2_000_000, Length: 6 * time.Second}
	OfferStrides = []int{1, 2, 4}
)

// OfferRow is what each encoder sent, from 2 s to the end, in the offer
// experiment at one stride: OpenH264, the model fitted (under the
// preset's skip rule) and the same model under the time rule.
type OfferRow struct {
	Every                      int
	Real, Fitted, FittedByTime float64 // bits a second
	// RealOpening and FittedOpening are the first openingTicks ticks of
	// OpenH264 and of the fitted model (opening).
	RealOpening, FittedOpening string
}

// openingTicks is how many ticks of an offer case's start the report
// shows, frame by frame: after the first keyframe, the rate control's
// skips.
const openingTicks = 40

// opening writes the first n ticks of frames, one character a tick: K a
// keyframe, x a frame coded, - a frame the rate control skipped, . no
// frame offered.
func opening(frames []Frame, n int) string {
	b := []byte(strings.Repeat(".", n))
	for _, f := range frames {
		k := int(math.Round(f.At.Seconds() * Rate))
		if k >= n || f.Pass > 0 {
			continue
		}
		switch {
		case f.Skipped:
			b[k] = '-'
		case f.Keyframe:
			b[k] = 'K'
		default:
			b[k] = 'x'
		}
	}
	return string(b)
}

// Report is a calibration run: the real encoder and the model before and
// after the fit, side by side.
type Report struct {
	// Options are the run's, defaults filled in.
	Options Options
	// Cases are the size experiment's cases: every kind at every bitrate.
	Cases []Case
	// Real, Before and After are the size cases' summaries: OpenH264, the
	// openh264-asm preset as it is, and with the fitted parameters.
	Real, Before, After []Summary
	// Default and Fitted are the parameters before and after (before: the
	// budget's sizes, encoder.Budgeted); the losses are Loss's. Preset is
	// what openh264-asm carries now.
	Default, Fitted, Preset Params
	LossBefore, LossAfter   float64
	// ByKind are the parameters fitted to each kind alone, in the options'
	// order, and the errors of the model with them on that kind: how far
	// one set of parameters for every content is from what each content
	// wants.
	ByKind       []Params
	ByKindErrors []Errors
	// Refine, Step and Repair are the other experiments' frames, by
	// encoder: "real", "before", "after".
	Refine, Step, Repair map[string][]Frame
	// Offered is the offer experiment, a row a stride.
	Offered []OfferRow
}

// PresetMatches tells whether the preset openh264-asm carries the fitted
// parameters: a calibration run at the presets' size (720p, frame skipping
// on) that says no means the real encoder, the painter or the model moved.
// The preset's costs of kinds the run does not fit (recorded content,
// fitted on the recordings: CompareRecorded) are left out.
func (r *Report) PresetMatches() bool {
	return reflect.DeepEqual(r.Preset.only(r.Options.Kinds).canonical(), r.Fitted.canonical())
}

// Encoders are the report's three encoders in order.
var Encoders = []string{"real", "before", "after"}

// Measure runs the calibration: the real encoder through every case, the
// fit, and the model before and after. It must be called inside a synctest
// bubble (the model's runs).
func Measure(o Options) (*Report, error) {
	if o.Kinds == nil {
		o.Kinds = Kinds
	}
	if o.Bitrates == nil {
		o.Bitrates = Bitrates
	}
	if o.Length == 0 {
		o.Length = 8 * time.Second
	}
	if o.Warmup == 0 {
		o.Warmup = o.Length / 2
	}
	if o.Grid.FullScreenBits == nil {
		o.Grid = DefaultGrid
	}
	if o.NoSkip && o.Grid.SkipBuffer == nil {
		// The model's skipping on (the default threshold) or off, as the
		// reference's is off.
		o.Grid.SkipBuffer = []time.Duration{0, -1}
	}
	rep := &Report{Options: o, Refine: map[string][]Frame{}, Step: map[string][]Frame{}, Repair: map[string][]Frame{}}
	for _, k := range o.Kinds {
		for _, b := range o.Bitrates {
			rep.Cases = append(rep.Cases, Case{Kind: k, Bitrate: b, Length: o.Length, Width: o.Width, Height: o.Height, NoSkip: o.NoSkip})
		}
	}
	for _, c := range rep.Cases {
		fr, err := Real(c)
		if err != nil {
			return nil, fmt.Errorf("calibrate: real encoder, %s at %d bit/s: %w", c.Kind, c.Bitrate, err)
		}
		rep.Real = append(rep.Real, Summarise(fr, o.Warmup))
	}
	preset, err := encoder.Preset(encoder.PresetOpenH264Asm)
	if err != nil {
		return nil, err
	}
	// The fit starts from the budget's sizes, the rule before any
	// calibration, whatever the preset carries now: the same search from
	// the same start, so that a run shows whether the preset still holds
	// what the real encoder does (PresetMatches).
	base := encoder.Budgeted(preset)
	// How the rate control skips is OpenH264's structure, not a size to
	// fit: the model runs under the preset's rule before the fit and
	// after.
	base.SkipRule = preset.SkipRule
	rep.Default = Of(base)
	rep.Preset = Of(preset)
	if rep.Before, err = ModelSummaries(rep.Cases, base, o.Warmup); err != nil {
		return nil, err
	}
	rep.LossBefore = Loss(rep.Before, rep.Real)
	if rep.Fitted, rep.LossAfter, err = Fit(rep.Cases, rep.Real, base, o.Grid, o.Warmup); err != nil {
		return nil, err
	}
	fitted := rep.Fitted.Apply(base)
	if rep.After, err = ModelSummaries(rep.Cases, fitted, o.Warmup); err != nil {
		return nil, err
	}
	for _, k := range o.Kinds {
		var cases []Case
		var ref []Summary
		for i, c := range rep.Cases {
			if c.Kind == k {
				cases, ref = append(cases, c), append(ref, rep.Real[i])
			}
		}
		p, _, err := Fit(cases, ref, base, o.Grid, o.Warmup)
		if err != nil {
			return nil, err
		}
		sums, err := ModelSummaries(cases, p.Apply(base), o.Warmup)
		if err != nil {
			return nil, err
		}
		rep.ByKind, rep.ByKindErrors = append(rep.ByKind, p), append(rep.ByKindErrors, Compare(sums, ref))
	}
	for _, x := range []struct {
		c   Case
		dst map[string][]Frame
	}{{RefineCase, rep.Refine}, {StepCase, rep.Step}, {RepairCase, rep.Repair}} {
		x.c.Width, x.c.Height, x.c.NoSkip = o.Width, o.Height, o.NoSkip
		if x.dst["real"], err = Real(x.c); err != nil {
			return nil, err
		}
		if x.dst["before"], err = Model(x.c, base); err != nil {
			return nil, err
		}
		if x.dst["after"], err = Model(x.c, fitted); err != nil {
			return nil, err
		}
	}
	byTime := fitted
	byTime.SkipRule = encoder.SkipByTime
	for _, every := range OfferStrides {
		c := OfferCase
		c.Width, c.Height, c.NoSkip, c.OfferEvery = o.Width, o.Height, o.NoSkip, every
		row := OfferRow{Every: every}
		for _, x := range []struct {
			sent *float64
			open *string // nil: not shown
			run  func() ([]Frame, error)
		}{
			{&row.Real, &row.RealOpening, func() ([]Frame, error) { return Real(c) }},
			{&row.Fitted, &row.FittedOpening, func() ([]Frame, error) { return Model(c, fitted) }},
			{&row.FittedByTime, nil, func() ([]Frame, error) { return Model(c, byTime) }},
		} {
			frames, err := x.run()
			if err != nil {
				return nil, err
			}
			*x.sent = sentFrom(frames, 2*time.Second, c.Length)
			if x.open != nil {
				*x.open = opening(frames, openingTicks)
			}
		}
		rep.Offered = append(rep.Offered, row)
	}
	return rep, nil
}

// sentFrom is the bits a second frames sent from from to end.
func sentFrom(frames []Frame, from, end time.Duration) float64 {
	bits := 0.0
	for _, f := range frames {
		if f.At >= from {
			bits += 8 * float64(f.Bytes)
		}
	}
	return bits / (end - from).Seconds()
}

// PerKind returns the errors of a model's summaries (Before or After)
// against Real, kind by kind in the options' order.
func (r *Report) PerKind(model []Summary) []Errors {
	var out []Errors
	for _, k := range r.Options.Kinds {
		var m, ref []Summary
		for i, c := range r.Cases {
			if c.Kind == k {
				m, ref = append(m, model[i]), append(ref, r.Real[i])
			}
		}
		out = append(out, Compare(m, ref))
	}
	return out
}

// ErrorTable is the before/after error table per content kind, Markdown.
func (r *Report) ErrorTable() string {
	var b strings.Builder
	b.WriteString("| content | P-frame size MdAPE before | after | keyframe size MdAPE before | after | skip-rate difference before | after |\n|---|---|---|---|---|---|---|\n")
	before, after := r.PerKind(r.Before), r.PerKind(r.After)
	for i, k := range r.Options.Kinds {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f pp | %.1f pp |\n", k,
			pct(before[i].PMdAPE), pct(after[i].PMdAPE), pct(before[i].IMdAPE), pct(after[i].IMdAPE), before[i].SkipDiff, after[i].SkipDiff)
	}
	all := func(s []Summary) Errors { return Compare(s, r.Real) }
	a, z := all(r.Before), all(r.After)
	fmt.Fprintf(&b, "| all | %s | %s | %s | %s | %.1f pp | %.1f pp |\n", pct(a.PMdAPE), pct(z.PMdAPE), pct(a.IMdAPE), pct(z.IMdAPE), a.SkipDiff, z.SkipDiff)
	return b.String()
}

// skipBuffer is a SkipBuffer as the parameter table shows it.
func skipBuffer(d time.Duration) string {
	switch {
	case d < 0:
		return "never skips"
	case d == 0:
		return encoder.DefaultSkipBuffer.String()
	}
	return d.String()
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", v)
}

// ParamsTable is the parameters before and after, Markdown.
func (r *Report) ParamsTable() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| parameter | before | fitted |\n|---|---|---|\n"+
		"| FullScreenBits | %.3g | %.3g |\n| KeyframeFactor | %g | %g |\n| MinFrameBytes | %s | %s |\n| FirstKeyframeBits | %s | %s |\n",
		r.Default.FullScreenBits, r.Fitted.FullScreenBits, r.Default.KeyframeFactor, r.Fitted.KeyframeFactor,
		minBytes(r.Default.MinFrameBytes), minBytes(r.Fitted.MinFrameBytes), firstBits(r.Default.FirstKeyframeBits), firstBits(r.Fitted.FirstKeyframeBits))
	if r.Options.Grid.SkipBuffer != nil {
		fmt.Fprintf(&b, "| SkipBuffer | %s | %s |\n", skipBuffer(r.Default.SkipBuffer), skipBuffer(r.Fitted.SkipBuffer))
	}
	for _, k := range r.Options.Kinds {
		bc, had := r.Default.cost(k)
		ac, ok := r.Fitted.cost(k)
		if !ok && !had {
			continue
		}
		fmt.Fprintf(&b, "| %s: MotionBits | %s | %s |\n| %s: MinFrameBytes | %s | %s |\n| %s: KeyframeBits | %s | %s |\n",
			k, motion(bc.MotionBits), motion(ac.MotionBits), k, kindMin(bc.MinFrameBytes), kindMin(ac.MinFrameBytes),
			k, kindKey(bc.KeyframeBits), kindKey(ac.KeyframeBits))
	}
	fmt.Fprintf(&b, "| loss (mean squared log ratio) | %.3f | %.3f |\n", r.LossBefore, r.LossAfter)
	return b.String()
}

// ByKindTable is the parameters fitted to each kind alone and their
// errors on it, Markdown.
func (r *Report) ByKindTable() string {
	var b strings.Builder
	b.WriteString("| content | FullScreenBits | KeyframeFactor | MinFrameBytes | FirstKeyframeBits | MotionBits | kind's MinFrameBytes | kind's KeyframeBits | P-frame size MdAPE | keyframe size MdAPE | skip-rate difference |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, k := range r.Options.Kinds {
		p, e := r.ByKind[i], r.ByKindErrors[i]
		c, _ := p.cost(k)
		fmt.Fprintf(&b, "| %s | %.3g | %g | %s | %s | %s | %s | %s | %s | %s | %.1f pp |\n", k, p.FullScreenBits, p.KeyframeFactor, minBytes(p.MinFrameBytes),
			firstBits(p.FirstKeyframeBits), motion(c.MotionBits), kindMin(c.MinFrameBytes), kindKey(c.KeyframeBits), pct(e.PMdAPE), pct(e.IMdAPE), e.SkipDiff)
	}
	return b.String()
}

func firstBits(v float64) string {
	if v == 0 {
		return "budgeted"
	}
	return fmt.Sprintf("%.3g", v)
}

func motion(v float64) string {
	if v == 0 {
		return "new content"
	}
	return fmt.Sprintf("%.3g", v)
}

func kindKey(v float64) string {
	if v == 0 {
		return "shared"
	}
	return fmt.Sprintf("%.3g", v)
}

func kindMin(v int) string {
	if v == 0 {
		return "shared"
	}
	return minBytes(v)
}

func minBytes(v int) string {
	if v < 0 {
		return "none"
	}
	return fmt.Sprint(v)
}

// The report's files.
const (
	ReportMarkdown = "report.md"
	PlotPFrames    = "p_frames.png"
	PlotIFrames    = "i_frames.png"
	PlotSkips      = "skip_rate.png"
	PlotRefine     = "refinement.png"
	PlotStep       = "step.png"
	PlotRepair     = "repair.png"
)

// WriteReport writes report.md and the plots into dir. The same report
// writes the same bytes.
func WriteReport(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	figs := map[string]func() ([]byte, error){
		PlotPFrames: func() ([]byte, error) {
			return r.bySize("P frames: median size against target bitrate", "median P-frame bytes", func(s Summary) (float64, bool) { return s.PBytes, s.P > 0 }, true)
		},
		PlotIFrames: func() ([]byte, error) {
			return r.bySize("Keyframes: size against target bitrate", "keyframe bytes", func(s Summary) (float64, bool) { return float64(s.IBytes), s.IBytes > 0 }, true)
		},
		PlotSkips: func() ([]byte, error) {
			return r.bySize("Frames the rate control skipped", "skipped share of new images (%)", func(s Summary) (float64, bool) { return 100 * s.SkipRate, true }, false)
		},
		PlotRefine: r.refinePlot,
		PlotStep:   r.stepPlot,
		PlotRepair: r.repairPlot,
	}
	for _, name := range []string{PlotPFrames, PlotIFrames, PlotSkips, PlotRefine, PlotStep, PlotRepair} {
		data, err := figs[name]()
		if err != nil {
			return fmt.Errorf("calibrate: %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, ReportMarkdown), []byte(r.Markdown()), 0o644)
}

// Markdown is the report's text.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# The H.264 model calibrated against OpenH264\n\n")
	w, h := r.Options.Width, r.Options.Height
	if w == 0 {
		w, h = paint.DefaultWidth, paint.DefaultHeight
	}
	skipping := "on"
	if r.Options.NoSkip {
		skipping = "off"
	}
	fmt.Fprintf(&b, "OpenH264 %s (%dx%d, frame skipping %s, 60 Hz) and the model (preset %s with the budget's sizes before the fit, and with the fitted parameters after) on the same screen timelines, seed %d, %v a case; the keyframe is the first frame, the P frames and skips count from %v.\n\n",
		openh264.Version(), w, h, skipping, encoder.PresetOpenH264Asm, Seed, r.Options.Length, r.Options.Warmup)
	if r.PresetMatches() {
		fmt.Fprintf(&b, "The preset %s carries the fitted parameters.\n\n", encoder.PresetOpenH264Asm)
	} else {
		fmt.Fprintf(&b, "The preset %s does not carry the fitted parameters (it was calibrated at 720p with frame skipping on, or something moved since).\n\n", encoder.PresetOpenH264Asm)
	}
	b.WriteString("## Fitted parameters\n\n" + r.ParamsTable() + "\n")
	b.WriteString("## Error per content kind\n\nMdAPE: median absolute percentage error over the bitrates; skip-rate difference: mean absolute difference in percentage points.\n\n" + r.ErrorTable() + "\n")
	b.WriteString("## Fitted to each kind alone\n\n" + r.ByKindTable() + "\n")
	b.WriteString("## Per case\n\n| content | target | real I | before | after | real P median | before | after | real skip | before | after |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, c := range r.Cases {
		rl, bf, af := r.Real[i], r.Before[i], r.After[i]
		fmt.Fprintf(&b, "| %s | %g Mbit/s | %d | %d | %d | %.0f | %.0f | %.0f | %.0f%% | %.0f%% | %.0f%% |\n", c.Kind, float64(c.Bitrate)/1e6,
			rl.IBytes, bf.IBytes, af.IBytes, rl.PBytes, bf.PBytes, af.PBytes, 100*rl.SkipRate, 100*bf.SkipRate, 100*af.SkipRate)
	}
	b.WriteString("\n![P frames](" + PlotPFrames + ")\n\n![Keyframes](" + PlotIFrames + ")\n\n![Skips](" + PlotSkips + ")\n\n")
	fmt.Fprintf(&b, "## Refinement on a still screen (N15)\n\nA photo at %v on the still desktop, %g Mbit/s, then %d passes %v apart: bytes of the photo's frame (pass 0) and of each pass.\n\n| pass | real | before | after |\n|---|---|---|---|\n",
		RefineCase.At, float64(RefineCase.Bitrate)/1e6, RefineCase.Passes, RefineCase.PassEvery)
	pr := map[string][]int{}
	for _, e := range Encoders {
		pr[e] = passBytes(r.Refine[e])
	}
	for p := 0; p <= RefineCase.Passes; p++ {
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", p, at(pr["real"], p), at(pr["before"], p), at(pr["after"], p))
	}
	b.WriteString("\n![Refinement](" + PlotRefine + ")\n\n")
	fmt.Fprintf(&b, "## Following a bitrate step\n\nThe animation at %g Mbit/s, %g Mbit/s from %v: the sent rate per 100 ms, and how long after the step the sent rate over 250 ms first stays within 25%% of the new target.\n\n| encoder | settled after |\n|---|---|\n",
		float64(StepCase.Bitrate)/1e6, float64(StepCase.StepTo)/1e6, StepCase.StepAt)
	for _, e := range Encoders {
		s, ok := settle(r.Step[e], StepCase)
		v := "not within the run"
		if ok {
			v = s.String()
		}
		fmt.Fprintf(&b, "| %s | %s |\n", e, v)
	}
	b.WriteString("\n![Step](" + PlotStep + ")\n\n")
	fmt.Fprintf(&b, "## Repair keyframes\n\nThe animation at %g Mbit/s, a keyframe asked for every %v from %v, as a viewer asks when its reference chain breaks: from %v to the end, the frames encoded a second, the sent rate against the target, the repair keyframes' median size and the median of the %d P frames after each.\n\n| encoder | frames a second | sent rate | keyframe | P frames after it |\n|---|---|---|---|---|\n",
		float64(RepairCase.Bitrate)/1e6, RepairCase.KeyframeEvery, RepairCase.KeyframeEvery, RepairCase.KeyframeEvery, repairFollowers)
	for _, e := range Encoders {
		rs := Repairs(r.Repair[e], RepairCase)
		fmt.Fprintf(&b, "| %s | %.1f | %.2f Mbit/s (%.2fx) | %.0f | %.0f |\n", e, rs.FPS, rs.SentBPS/1e6, rs.SentBPS/float64(RepairCase.Bitrate), rs.KeyBytes, rs.AfterBytes)
	}
	b.WriteString("\n![Repairs](" + PlotRepair + ")\n\n")
	fmt.Fprintf(&b, "## Frames offered at less than the frame rate\n\nThe animation at %g Mbit/s, offered to the encoder at every tick of 60 Hz, then at one tick in n only (the rows), as a pipeline whose sender is full at the others does: the sent rate from 2 s to the end. A rate control that counts frames owes each frame offered 1/60 s of the bitrate, whenever it comes.\n\n| offered | real | after | after, skipping by time |\n|---|---|---|---|\n",
		float64(OfferCase.Bitrate)/1e6)
	for _, row := range r.Offered {
		fmt.Fprintf(&b, "| every %d tick(s) | %.2f Mbit/s | %.2f Mbit/s | %.2f Mbit/s |\n", row.Every, row.Real/1e6, row.Fitted/1e6, row.FittedByTime/1e6)
	}
	b.WriteString("\nThe first ticks of each (K the keyframe, x a frame coded, - a frame skipped, . none offered):\n\n| offered | real | after |\n|---|---|---|\n")
	for _, row := range r.Offered {
		fmt.Fprintf(&b, "| every %d tick(s) | `%s` | `%s` |\n", row.Every, row.RealOpening, row.FittedOpening)
	}
	return b.String()
}

// repairFollowers is how many P frames after a repair keyframe
// RepairSummary's AfterBytes takes.
const repairFollowers = 6

// RepairSummary is what an encoder did in the repair experiment, from the
// first repair to the end.
type RepairSummary struct {
	// FPS is the frames encoded a second; SentBPS the bits sent a second.
	FPS, SentBPS float64
	// KeyBytes is the repair keyframes' median size, AfterBytes the median
	// of the repairFollowers P frames after each.
	KeyBytes, AfterBytes float64
}

// Repairs sums up a repair case's frames.
func Repairs(frames []Frame, c Case) RepairSummary {
	var rs RepairSummary
	var keys, after []float64
	follow := 0
	for _, f := range frames {
		if f.At < c.KeyframeEvery || f.Skipped || f.Pass > 0 {
			continue
		}
		rs.FPS++
		rs.SentBPS += 8 * float64(f.Bytes)
		switch {
		case f.Keyframe:
			keys, follow = append(keys, float64(f.Bytes)), repairFollowers
		case follow > 0:
			after, follow = append(after, float64(f.Bytes)), follow-1
		}
	}
	span := (c.Length - c.KeyframeEvery).Seconds()
	rs.FPS, rs.SentBPS = rs.FPS/span, rs.SentBPS/span
	rs.KeyBytes, rs.AfterBytes = median(keys), median(after)
	return rs
}

// passBytes lists the bytes of the last frame of new content (index 0) and
// of each refinement pass after it.
func passBytes(frames []Frame) []int {
	var out []int
	for _, f := range frames {
		if f.Pass == 0 && !f.Skipped {
			out = []int{f.Bytes}
			continue
		}
		if f.Pass > 0 {
			out = append(out, f.Bytes)
		}
	}
	return out
}

func at(v []int, i int) string {
	if i >= len(v) {
		return "-"
	}
	return fmt.Sprint(v[i])
}

// settle is how long after the step the sent rate over a sliding 250 ms
// window first comes within 25% of the new target and stays there.
func settle(frames []Frame, c Case) (time.Duration, bool) {
	const win = 250 * time.Millisecond
	target := float64(c.StepTo)
	var settledAt time.Duration = -1
	for t := c.StepAt; t+win <= c.Length; t += time.Second / Rate {
		bits := 0.0
		for _, f := range frames {
			if f.At >= t && f.At < t+win {
				bits += 8 * float64(f.Bytes)
			}
		}
		rate := bits / win.Seconds()
		if math.Abs(rate-target) <= 0.25*target {
			if settledAt < 0 {
				settledAt = t
			}
		} else {
			settledAt = -1
		}
	}
	if settledAt < 0 {
		return 0, false
	}
	return (settledAt - c.StepAt).Round(time.Millisecond), true
}

// Plotting: the reports' sizes and palette (reports/plots).
var (
	figW, figH = 16 * vg.Centimeter, 10 * vg.Centimeter
	palette    = []color.RGBA{
		{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, {R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, {R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, {R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, {R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	}
	// The encoders' line styles: real solid, the model before dotted,
	// after dashed.
	dashes = map[string][]vg.Length{"real": nil, "before": {vg.Points(1), vg.Points(3)}, "after": {vg.Points(6), vg.Points(3)}}
)

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, false
	return p
}

func addLine(p *plot.Plot, label string, xys plotter.XYs, c color.Color, dash []vg.Length) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(1.5), Dashes: dash}
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
	return nil
}

func png(p *plot.Plot) ([]byte, error) {
	w, err := p.WriterTo(figW, figH, "png")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// bySize draws one figure against the target bitrate: a colour per kind,
// the real encoder solid and the fitted model dashed.
func (r *Report) bySize(title, yLabel string, val func(Summary) (float64, bool), logY bool) ([]byte, error) {
	p := newPlot(title+" (solid: OpenH264, dashed: model after the fit)", "target bitrate (Mbit/s)", yLabel)
	var ticks plot.ConstantTicks
	for _, b := range r.Options.Bitrates {
		ticks = append(ticks, plot.Tick{Value: float64(b) / 1e6, Label: fmt.Sprint(float64(b) / 1e6)})
	}
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, ticks
	if logY {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	}
	for ki, k := range r.Options.Kinds {
		for _, e := range []string{"real", "after"} {
			sums := map[string][]Summary{"real": r.Real, "after": r.After}[e]
			var xys plotter.XYs
			for i, c := range r.Cases {
				if v, ok := val(sums[i]); c.Kind == k && ok && (!logY || v > 0) {
					xys = append(xys, plotter.XY{X: float64(c.Bitrate) / 1e6, Y: v})
				}
			}
			label := ""
			if e == "real" {
				label = k
			}
			if err := addLine(p, label, xys, palette[ki%len(palette)], dashes[e]); err != nil {
				return nil, err
			}
		}
	}
	return png(p)
}

func (r *Report) refinePlot() ([]byte, error) {
	p := newPlot("Refinement passes on a still screen (N15)", "pass (0: the photo's frame)", "bytes")
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	for i, e := range Encoders {
		var xys plotter.XYs
		for n, v := range passBytes(r.Refine[e]) {
			xys = append(xys, plotter.XY{X: float64(n), Y: max(float64(v), 1)})
		}
		if err := addLine(p, e, xys, palette[i], dashes[e]); err != nil {
			return nil, err
		}
	}
	return png(p)
}

// addTarget draws the target bitrate, in Mbit/s, grey and dashed.
func addTarget(p *plot.Plot, target plotter.XYs) error {
	return addLine(p, "target", target, color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}, []vg.Length{vg.Points(2), vg.Points(2)})
}

// sentRate is the rate frames sent over each bucket of a case, in Mbit/s.
func sentRate(frames []Frame, length, bucket time.Duration) plotter.XYs {
	n := int(length / bucket)
	sums := make([]float64, n)
	for _, f := range frames {
		if b := int(f.At / bucket); b < n {
			sums[b] += 8 * float64(f.Bytes)
		}
	}
	var xys plotter.XYs
	for b, v := range sums {
		xys = append(xys, plotter.XY{X: (time.Duration(b) * bucket).Seconds(), Y: v / bucket.Seconds() / 1e6})
	}
	return xys
}

func (r *Report) repairPlot() ([]byte, error) {
	p := newPlot(fmt.Sprintf("Sent rate with a repair keyframe every %v", RepairCase.KeyframeEvery), "time (s)", "sent per 250 ms (Mbit/s)")
	for i, e := range Encoders {
		if err := addLine(p, e, sentRate(r.Repair[e], RepairCase.Length, 250*time.Millisecond), palette[i], dashes[e]); err != nil {
			return nil, err
		}
	}
	if err := addTarget(p, plotter.XYs{{X: 0, Y: float64(RepairCase.Bitrate) / 1e6}, {X: RepairCase.Length.Seconds(), Y: float64(RepairCase.Bitrate) / 1e6}}); err != nil {
		return nil, err
	}
	return png(p)
}

func (r *Report) stepPlot() ([]byte, error) {
	p := newPlot("Sent rate after a bitrate step", "time (s)", "sent per 100 ms (Mbit/s)")
	for i, e := range Encoders {
		if err := addLine(p, e, sentRate(r.Step[e], StepCase.Length, 100*time.Millisecond), palette[i], dashes[e]); err != nil {
			return nil, err
		}
	}
	target := plotter.XYs{{X: 0, Y: float64(StepCase.Bitrate) / 1e6}, {X: StepCase.StepAt.Seconds(), Y: float64(StepCase.Bitrate) / 1e6},
		{X: StepCase.StepAt.Seconds(), Y: float64(StepCase.StepTo) / 1e6}, {X: StepCase.Length.Seconds(), Y: float64(StepCase.StepTo) / 1e6}}
	if err := addTarget(p, target); err != nil {
		return nil, err
	}
	return png(p)
}
