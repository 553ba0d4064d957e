package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/agent/capture"
	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/bench"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/internal/evidence"
	"github.com/nuvirahub/latencylab/reports"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/nuvirahub/latencylab/viewer"
)

// quantity is a figure as a finding writes it: its number and unit, and the
// value in a measurement's unit (seconds, bits/s, a fraction, a count) with
// the kind of measurement that could bound it ("" when none does, as for
// bytes).
type quantity struct {
	text  string
	value float64
	kind  scenarios.Unit
	base  float64
}

// unitAfter is the unit after a number, past the end of a range ("3-4 ms").
var unitAfter = regexp.MustCompile(`^(?:-[\d.]+)?\s?(us|ms|s|Mbit/s|Gbit/s|KB|%)?`)

// quantities reads the figures of a text with their units.
func quantities(text string) []quantity {
	var out []quantity
	for _, n := range evidence.Numbers(text) {
		unit := unitAfter.FindStringSubmatch(text[n.End:])[1]
		q := quantity{text: strings.TrimSpace(text[n.Start:n.End] + " " + unit), value: n.Value}
		switch unit {
		case "us":
			q.kind, q.base = scenarios.UnitDuration, n.Value/1e6
		case "ms":
			q.kind, q.base = scenarios.UnitDuration, n.Value/1e3
		case "s":
			q.kind, q.base = scenarios.UnitDuration, n.Value
		case "Mbit/s":
			q.kind, q.base = scenarios.UnitRate, n.Value*1e6
		case "Gbit/s":
			q.kind, q.base = scenarios.UnitRate, n.Value*1e9
		case "%":
			q.kind, q.base = scenarios.UnitFraction, n.Value/100
		case "":
			q.kind, q.base = scenarios.UnitCount, n.Value
		}
		out = append(out, q)
	}
	return out
}

// bounded says which of the expectations of the scenarios cites holds q
// within its bounds, as "scenario: measure".
func bounded(q quantity, cites []*scenarios.Scenario) []string {
	var out []string
	for _, sc := range cites {
		for _, e := range sc.Expect {
			m, ok := scenarios.LookupMeasurement(e.Measure)
			if !ok || q.kind == "" || m.Unit != q.kind || (e.Min == nil && e.Max == nil) {
				continue
			}
			if (e.Min == nil || q.base >= *e.Min*(1-1e-9)) && (e.Max == nil || q.base <= *e.Max*(1+1e-9)) {
				out = append(out, sc.Name+": "+e.Measure)
			}
		}
	}
	return out
}

// findingParameters are the model inputs a calibrated finding's why may
// name, as it names them, each with its values in the unit the write-ups
// write the figure in. They are read from the code and the library, so a
// parameter that changes parts from the figure it was calibrated to.
func findingParameters(t *testing.T) map[string][]float64 {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	encode := func(name string) float64 {
		c, err := encoder.Preset(name)
		require.NoError(t, err)
		return ms(c.EncodeTime.Mean)
	}
	lib, err := scenarios.Library()
	require.NoError(t, err)
	scenario := func(name string) *scenarios.Scenario {
		i := slices.IndexFunc(lib, func(s *scenarios.Scenario) bool { return s.Name == name })
		require.GreaterOrEqual(t, i, 0, name)
		return lib[i]
	}
	spikes := scenario("mobile-spikes").Network.Down[0].Spikes
	require.NotNil(t, spikes)
	lan := scenario("lan-animation").Network.Down[0]
	relay := scenario("path-lan-relay").Path.RelayDelay
	threshold, ok := scenarios.LookupMeasurement("time-to-low-latency")
	require.True(t, ok)
	m := regexp.MustCompile(`under (\d+) ms`).FindStringSubmatch(threshold.Doc)
	require.NotNil(t, m, "time-to-low-latency's threshold")
	under, _ := strconv.ParseFloat(m[1], 64)
	var practical reports.Metric
	for _, mt := range reports.Metrics {
		if mt.Name == "latency.median" {
			practical = mt
		}
	}
	root, err := moduleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, CodecReference))
	require.NoError(t, err)
	var codecRun struct{ Iters, Warmup int }
	require.NoError(t, json.Unmarshal(data, &codecRun))
	var sizes []float64
	for _, c := range bench.Cases() {
		sizes = append(sizes, float64(c.W), float64(c.H))
	}
	return map[string][]float64{
		"viewer.DefaultReportEvery": {ms(viewer.DefaultReportEvery)},
		"time-to-low-latency":       {under},
		"practical minimum of 2 ms or 5%": {practical.MinAbs, 100 * practical.MinRel,
			practical.MinAbs / practical.MinRel},
		"defaults.yaml":                {ms(lan.Delay), float64(lan.Rate) / 1e9},
		"capture.DefaultGPUConvert":    {ms(capture.DefaultGPUConvert)},
		"DefaultCPUConvertMin and Max": {ms(capture.DefaultCPUConvertMin), ms(capture.DefaultCPUConvertMax)},
		"encoder presets openh264":     {encode(encoder.PresetOpenH264), encode(encoder.PresetOpenH264Asm)},
		"agent/abr": {abr.DefaultWindow.Seconds(), abr.DefaultBaseline.Seconds(), ms(abr.DefaultThreshold),
			abr.DefaultSustain.Seconds(), 100 * abr.DefaultDecrease, 100 * abr.DefaultIncrease, abr.DefaultHold.Seconds()},
		"busy-pc encoder preset":    {encode(encoder.PresetBusyPC)},
		"the spikes impairment":     {ms(spikes.Min), ms(spikes.Max)},
		"agent.DefaultRefinePasses": {agent.DefaultRefinePasses},
		"DefaultRefineEvery":        {ms(agent.DefaultRefineEvery)},
		"encoder.DefaultRestart":    {encoder.DefaultRestart.Seconds()},
		"DefaultReconfigure":        {ms(encoder.DefaultReconfigure.Min), ms(encoder.DefaultReconfigure.Max)},
		"relay_delay":               {ms(relay), 2 * ms(relay)},
		"agent/codec/tile":          {codec.TileSize},
		"agent/codec/bench":         sizes,
		"lab codecs -iters":         {float64(codecRun.Iters), float64(codecRun.Warmup)},
	}
}

// classProblems checks each finding's class against its evidence, where a
// rule can say it, and returns what does not hold:
//
//   - reproduced: every figure of the write-up lies within the bounds of an
//     expectation of a library scenario that cites the finding (the suite
//     then fails when the lab stops showing it);
//   - not reproduced: no figure of the write-up lies within such bounds;
//   - partly: some figure lies outside every such bound (where all lie
//     inside, the finding is reproduced);
//   - calibrated: the why names a model input, and every figure of the
//     write-up is the value of an input it names;
//   - every class: something measures the finding (a scenario, evidence or
//     the codec lab's reference run).
func classProblems(findings []Finding, lib []*scenarios.Scenario, params map[string][]float64, codecRows map[string]string) []string {
	var out []string
	for _, f := range findings {
		var cites []*scenarios.Scenario
		for _, sc := range lib {
			if slices.Contains(sc.Findings, f.ID) {
				cites = append(cites, sc)
			}
		}
		_, codecRow := codecRows[f.ID]
		if len(cites) == 0 && len(f.Evidence) == 0 && !codecRow {
			out = append(out, fmt.Sprintf("%s (%s): nothing measures it", f.ID, f.Class))
		}
		qs := quantities(f.Figures)
		var inside, outside []string
		for _, q := range qs {
			if b := bounded(q, cites); len(b) > 0 {
				inside = append(inside, fmt.Sprintf("%s (%s)", q.text, strings.Join(b, ", ")))
			} else {
				outside = append(outside, q.text)
			}
		}
		switch f.Class {
		case Reproduced:
			if len(outside) > 0 {
				out = append(out, fmt.Sprintf("%s (reproduced): the write-up's %s lies within no bound of a scenario citing it", f.ID, strings.Join(outside, ", ")))
			}
		case NotReproduced:
			if len(inside) > 0 {
				out = append(out, fmt.Sprintf("%s (not reproduced): the write-up's %s lies within a passing bound", f.ID, strings.Join(inside, ", ")))
			}
		case Partly:
			if len(qs) > 0 && len(cites) > 0 && len(outside) == 0 {
				out = append(out, fmt.Sprintf("%s (partly): every figure of the write-up lies within a bound (%s): reproduced", f.ID, strings.Join(inside, ", ")))
			}
		case Calibrated:
			var named []string
			var values []float64
			for name, vs := range params {
				if strings.Contains(f.Why, name) {
					named = append(named, name)
					values = append(values, vs...)
				}
			}
			if len(named) == 0 {
				out = append(out, fmt.Sprintf("%s (calibrated): the why names no model input the rule knows", f.ID))
				continue
			}
			for _, q := range qs {
				if !slices.ContainsFunc(values, func(v float64) bool { return v == q.value }) {
					slices.Sort(named)
					out = append(out, fmt.Sprintf("%s (calibrated): the write-up's %s is the value of none of the inputs the why names (%s)", f.ID, q.text, strings.Join(named, "; ")))
				}
			}
		}
	}
	return out
}

// Each finding's class agrees with its evidence where a rule can say it
// (classProblems).
func TestFindingClassesFollowTheirEvidence(t *testing.T) {
	rep, err := LoadReproduction()
	require.NoError(t, err)
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, p := range classProblems(rep.Findings, lib, findingParameters(t), rep.Codec) {
		t.Error(p)
	}
}

// The rules catch each kind of misclassification.
func TestFindingClassRules(t *testing.T) {
	lo, hi := 0.010, 0.020
	lib := []*scenarios.Scenario{{Name: "s", Findings: []string{"X1"},
		Expect: []scenarios.Expectation{{Measure: "latency.median", Min: &lo, Max: &hi}}}}
	params := map[string][]float64{"p.Input": {15}}
	ev := []Evidence{{Lab: "l", Command: "c"}}
	for _, tc := range []struct {
		f    Finding
		want string
	}{
		{Finding{ID: "X1", Class: Reproduced, Figures: "15 ms"}, ""},
		{Finding{ID: "X1", Class: Reproduced, Figures: "25 ms"}, "lies within no bound"},
		{Finding{ID: "X2", Class: Reproduced, Figures: "15 ms", Evidence: ev}, "lies within no bound"},
		{Finding{ID: "X1", Class: NotReproduced, Figures: "15 ms"}, "lies within a passing bound"},
		{Finding{ID: "X1", Class: NotReproduced, Figures: "38 ms"}, ""},
		{Finding{ID: "X1", Class: Partly, Figures: "12 ms -> 15 ms"}, "reproduced"},
		{Finding{ID: "X1", Class: Partly, Figures: "12 ms -> 38 ms"}, ""},
		{Finding{ID: "X1", Class: Calibrated, Figures: "15 ms", Why: "p.Input"}, ""},
		{Finding{ID: "X1", Class: Calibrated, Figures: "16 ms", Why: "p.Input"}, "the value of none"},
		{Finding{ID: "X1", Class: Calibrated, Figures: "15 ms", Why: "a guess"}, "names no model input"},
		{Finding{ID: "X3", Class: Calibrated, Figures: "15 ms", Why: "p.Input"}, "nothing measures it"},
	} {
		got := strings.Join(classProblems([]Finding{tc.f}, lib, params, nil), "\n")
		if tc.want == "" {
			require.Empty(t, got, "%+v", tc.f)
		} else {
			require.Contains(t, got, tc.want, "%+v", tc.f)
		}
	}
}
