package calibrate

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
)

// The model's configurations CompareRecorded sets beside OpenH264 on
// recorded desktops, in its tables' order.
const (
	// ModelBudget is the budget's sizes (encoder.Budgeted): every frame
	// spends its share of the target, the library's rule.
	ModelBudget = "budget"
	// ModelPainted is the preset openh264-asm without its costs for
	// recorded content: the sizes calibrated against OpenH264 on the
	// painter's content.
	ModelPainted = "painted"
	// ModelRecorded is the painter's calibration with costs of their own
	// for recorded content (the model's kinds "recording", and
	// "recording-motion" for changes a shift explains), fitted on the
	// recordings with every other parameter held.
	ModelRecorded = "recorded"
	// ModelRefit is the whole search fitted again on the recordings, from
	// the budget's sizes as Measure fits the painter's content: what one
	// set of parameters fitted to real content alone would be.
	ModelRefit = "refit"
)

// RecordedModels are the configurations in order.
var RecordedModels = []string{ModelBudget, ModelPainted, ModelRecorded, ModelRefit}

// RecordedComparison is the H.264 model against OpenH264 on recorded
// desktops: every recording at every target, the real encoder and each
// configuration of the model (RecordedModels) through the same ticks.
type RecordedComparison struct {
	// Cases are the runs: each recording at each target, in that order.
	Cases []Case
	// Rows are what OpenH264 did in each case.
	Rows []RecordedRow
	// Real are the real runs' summaries; Model and Sent each
	// configuration's summaries and the bits a second it sent, from
	// RecordedWarmup on, case by case.
	Real  []Summary
	Model map[string][]Summary
	Sent  map[string][]float64
	// Params are each configuration's parameters, and Loss its Loss
	// against the real runs.
	Params map[string]Params
	Loss   map[string]float64
	// Preset is the preset openh264-asm's parameters, recorded content's
	// costs included (PresetCarriesRecorded).
	Preset Params
}

// RecordedKinds are the screen model's kinds of recorded content, whose
// costs CompareRecorded fits.
var RecordedKinds = []string{screen.SourceRecording, screen.SourceRecordingMotion, screen.SourceRecordingScroll}

// PresetCarriesRecorded tells whether the preset openh264-asm carries the
// costs for recorded content fitted here (ModelRecorded): a run that says
// no means the real encoder, the corpus or the model moved.
func (r *RecordedComparison) PresetCarriesRecorded() bool {
	return reflect.DeepEqual(r.Preset.canonical(), r.Params[ModelRecorded].canonical())
}

// CompareRecorded runs OpenH264 (Real, the recordings' own pixels) and
// the model (the recordings' damage and detail) over every recording at
// every target for length or the recording's duration, and fits the
// model's parameters to the real runs twice: the recorded kind's cost
// alone on the painter's calibration (ModelRecorded), and every parameter
// from the budget's as Measure fits the painter's content (ModelRefit). It must be called inside a synctest
// bubble (the model's runs); progress, when not nil, gets a line per real
// run.
func CompareRecorded(recs []*recording.Recording, bitrates []int, length time.Duration, grid Grid, progress io.Writer) (*RecordedComparison, error) {
	preset, err := encoder.Preset(encoder.PresetOpenH264Asm)
	if err != nil {
		return nil, err
	}
	base := encoder.Budgeted(preset)
	base.SkipRule = preset.SkipRule
	// The painter's calibration: the preset without the costs this fits.
	painted := Of(preset)
	painted.Content = slices.DeleteFunc(painted.Content, func(c encoder.ContentCost) bool { return slices.Contains(RecordedKinds, c.Kind) })
	cmp := &RecordedComparison{Model: map[string][]Summary{}, Sent: map[string][]float64{},
		Params: map[string]Params{ModelBudget: Of(base), ModelPainted: painted}, Loss: map[string]float64{}, Preset: Of(preset)}
	for _, rec := range recs {
		end := min(length, rec.Duration())
		if end <= RecordedWarmup {
			return nil, fmt.Errorf("%s: %v long, not longer than the warm-up (%v)", rec.Path, end, RecordedWarmup)
		}
		for _, bps := range bitrates {
			c := Case{Kind: screen.SourceRecording, Recording: rec, Bitrate: bps, Length: end}
			frames, err := Real(c)
			if err != nil {
				return nil, fmt.Errorf("calibrate: real encoder, %s at %d bit/s: %w", rec.Path, bps, err)
			}
			row := recordedRow(rec, bps, frames, end)
			cmp.Cases, cmp.Rows, cmp.Real = append(cmp.Cases, c), append(cmp.Rows, row), append(cmp.Real, row.Summary)
			if progress != nil {
				fmt.Fprintf(progress, "%s at %.2g Mbit/s: OpenH264 sent %.2f Mbit/s, %.1f frames a second coded\n", row.Name, float64(bps)/1e6, row.Sent/1e6, row.Encoded)
			}
		}
	}
	if len(cmp.Cases) == 0 {
		return nil, fmt.Errorf("calibrate: no recordings to compare")
	}
	refit, _, err := Fit(cmp.Cases, cmp.Real, base, grid, RecordedWarmup)
	if err != nil {
		return nil, err
	}
	cmp.Params[ModelRefit] = refit
	// The recorded kind's cost alone, from the preset: the shared
	// parameters' grids left out, so they keep the painter's calibration.
	kindOnly := Grid{MotionBits: grid.MotionBits, KindMinFrameBytes: grid.KindMinFrameBytes, KeyframeBits: grid.KeyframeBits,
		FillExponent: grid.FillExponent}
	fitted, _, err := Fit(cmp.Cases, cmp.Real, painted.Apply(preset), kindOnly, RecordedWarmup)
	if err != nil {
		return nil, err
	}
	// Only the recorded kinds' costs are taken: the fit may also have let
	// the painted kinds' keyframes follow the shared one, which no
	// recorded case can see, and those stay the preset's.
	recorded := painted
	recorded.FillExponent = fitted.FillExponent
	cmp.Params[ModelRecorded] = recorded
	for _, kind := range RecordedKinds {
		if c, ok := fitted.cost(kind); ok {
			cmp.Params[ModelRecorded] = cmp.Params[ModelRecorded].withCost(c)
		}
	}
	for _, name := range RecordedModels {
		cfg := cmp.Params[name].Apply(base)
		for _, c := range cmp.Cases {
			frames, err := Model(c, cfg)
			if err != nil {
				return nil, err
			}
			cmp.Model[name] = append(cmp.Model[name], Summarise(frames, RecordedWarmup))
			cmp.Sent[name] = append(cmp.Sent[name], sentFrom(frames, RecordedWarmup, c.Length))
		}
		cmp.Loss[name] = Loss(cmp.Model[name], cmp.Real)
	}
	return cmp, nil
}

// recordedRow sums up OpenH264's frames over one recording from
// RecordedWarmup to end.
func recordedRow(rec *recording.Recording, bps int, frames []Frame, end time.Duration) RecordedRow {
	row := RecordedRow{Name: filepath.Base(rec.Path), Kind: rec.Meta.Kind, Bitrate: bps,
		Sent: sentFrom(frames, RecordedWarmup, end), Summary: Summarise(frames, RecordedWarmup)}
	span := (end - RecordedWarmup).Seconds()
	var offers, skips, coded int
	for _, f := range frames {
		if f.At < RecordedWarmup {
			continue
		}
		offers++
		if f.Skipped {
			skips++
		} else {
			coded++
		}
	}
	row.Encoded = float64(coded) / span
	row.Changes = float64(changes(rec, RecordedWarmup, end)) / span
	if offers > 0 {
		row.SkipRate = float64(skips) / float64(offers)
	}
	return row
}

// Kinds are the recordings' content kinds in the order of the cases.
func (r *RecordedComparison) Kinds() []string {
	var out []string
	for _, row := range r.Rows {
		if !slices.Contains(out, row.Kind) {
			out = append(out, row.Kind)
		}
	}
	return out
}

// PerKind is each content kind's errors of a configuration against the
// real runs, in Kinds' order.
func (r *RecordedComparison) PerKind(model string) []Errors {
	var out []Errors
	for _, k := range r.Kinds() {
		var m, ref []Summary
		for i, row := range r.Rows {
			if row.Kind == k {
				m, ref = append(m, r.Model[model][i]), append(ref, r.Real[i])
			}
		}
		out = append(out, Compare(m, ref))
	}
	return out
}

// ErrorTable is the per-kind error of each configuration, Markdown: the
// median absolute percentage errors of the P-frame and keyframe sizes and
// the skip-rate difference, as the painted calibration's table has them.
func (r *RecordedComparison) ErrorTable() string {
	var b strings.Builder
	b.WriteString("| content |")
	for _, what := range []string{"P-frame size MdAPE", "keyframe size MdAPE", "skip-rate difference"} {
		for i, name := range RecordedModels {
			if i == 0 {
				fmt.Fprintf(&b, " %s: %s |", what, name)
			} else {
				fmt.Fprintf(&b, " %s |", name)
			}
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", 3*len(RecordedModels)) + "\n")
	per := map[string][]Errors{}
	for _, name := range RecordedModels {
		per[name] = r.PerKind(name)
	}
	row := func(label string, e map[string]Errors) {
		fmt.Fprintf(&b, "| %s |", label)
		for _, name := range RecordedModels {
			fmt.Fprintf(&b, " %s |", pct(e[name].PMdAPE))
		}
		for _, name := range RecordedModels {
			fmt.Fprintf(&b, " %s |", pct(e[name].IMdAPE))
		}
		for _, name := range RecordedModels {
			fmt.Fprintf(&b, " %.1f pp |", e[name].SkipDiff)
		}
		b.WriteString("\n")
	}
	for i, k := range r.Kinds() {
		e := map[string]Errors{}
		for _, name := range RecordedModels {
			e[name] = per[name][i]
		}
		row(k, e)
	}
	all := map[string]Errors{}
	for _, name := range RecordedModels {
		all[name] = Compare(r.Model[name], r.Real)
	}
	row("all", all)
	return b.String()
}

// SentTable is what each encoder sent against the target, per kind and
// target, Markdown: the real encoder's share of the target beside each
// configuration's.
func (r *RecordedComparison) SentTable() string {
	var b strings.Builder
	b.WriteString("| recording | target | OpenH264 sent / target | " + strings.Join(RecordedModels, " | ") + " | OpenH264 frames coded a second | changes a second |\n")
	b.WriteString("|---|---|---|" + strings.Repeat("---|", len(RecordedModels)) + "---|---|\n")
	for i, row := range r.Rows {
		t := float64(row.Bitrate)
		fmt.Fprintf(&b, "| %s | %.2g Mbit/s | %.2f |", row.Kind, t/1e6, row.Sent/t)
		for _, name := range RecordedModels {
			fmt.Fprintf(&b, " %.2f |", r.Sent[name][i]/t)
		}
		fmt.Fprintf(&b, " %.1f | %.1f |\n", row.Encoded, row.Changes)
	}
	return b.String()
}

// ParamsTable is the configurations' shared parameters and their losses,
// Markdown.
func (r *RecordedComparison) ParamsTable() string {
	var b strings.Builder
	b.WriteString("| model | whole screen, Mbit | keyframe factor | smallest frame | first keyframe, Mbit | fill exponent | content costs | loss |\n|---|---|---|---|---|---|---|---|\n")
	for _, name := range RecordedModels {
		p := r.Params[name]
		var costs []string
		for _, c := range p.Content {
			costs = append(costs, fmt.Sprintf("%s: motion %.0f kbit, smallest %d B, keyframe %.2g Mbit", c.Kind, c.MotionBits/1e3, c.MinFrameBytes, c.KeyframeBits/1e6))
		}
		fmt.Fprintf(&b, "| %s | %.2g | %.2g | %d B | %.2g | %g | %s | %.3f |\n", name, p.FullScreenBits/1e6, p.KeyframeFactor,
			p.MinFrameBytes, p.FirstKeyframeBits/1e6, p.FillExponent, strings.Join(costs, "; "), r.Loss[name])
	}
	return b.String()
}
