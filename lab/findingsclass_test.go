package lab

import (
	"encoding/json"
	"fmt"
	"math"
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
	"github.com/nuvirahub/latencylab/internal/docregion"
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
	clock := scenario("lan-animation").Clocks.Agent
	slow := scenario("viewer-slow-old")
	lossy := scenario("lossy-fixed-bitrate").Network.Down[0]
	jitter := scenario("abr-mobile-still-old").Network.Down[0].Jitter
	require.NotNil(t, jitter)
	return map[string][]float64{
		"viewer.DefaultReportEvery": {ms(viewer.DefaultReportEvery)},
		"viewer.DefaultDecode":      {ms(viewer.DefaultDecode)},
		"clock offset":              {clock.Offset.Seconds(), clock.DriftPPM},
		"the refresh":               {scenario("lan-animation").Agent.Refresh},
		"the lab's slow viewer":     {ms(slow.Viewer.Present), slow.Agent.Refresh, slow.Duration.Seconds()},
		"the queue's size":          {float64(lossy.Queue.Packets)},
		"uniform jitter":            {ms(jitter.Spread), 100 * jitter.Correlation},
		"openh264-asm preset":       {encode(encoder.PresetOpenH264Asm)},
		"openh264 preset":           {encode(encoder.PresetOpenH264)},
		"time-to-low-latency":       {under},
		"practical minimum of 2 ms or 5%": {practical.MinAbs, 100 * practical.MinRel,
			practical.MinAbs / practical.MinRel},
		"defaults.yaml":             {ms(lan.Delay), float64(lan.Rate) / 1e9},
		"capture.DefaultGPUConvert": {ms(capture.DefaultGPUConvert)},
		// The CPU's conversion, and its mean's difference from the GPU's.
		"DefaultCPUConvertMin and Max": {ms(capture.DefaultCPUConvertMin), ms(capture.DefaultCPUConvertMax),
			ms(capture.DefaultCPUConvertMin+capture.DefaultCPUConvertMax)/2 - ms(capture.DefaultGPUConvert)},
		"encoder presets openh264": {encode(encoder.PresetOpenH264), encode(encoder.PresetOpenH264Asm)},
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

// findingName is a finding's ID inside a text.
var findingName = regexp.MustCompile(`\b[NE][1-9][0-9]*\b`)

// codecFigures are the figures the E findings' whys derive from the codec
// lab's reference run, by finding: every figure of the finding's reference
// row and its inverse (a ratio read the other way), the matrix's change
// percentages, and the figures each why computes from the run's bytes and
// times, each computed here the way the why says.
func codecFigures(t *testing.T, findings []Finding, rows map[string]string) map[string][]float64 {
	root, err := moduleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, CodecReference))
	require.NoError(t, err)
	var run struct {
		Cases []struct {
			Name string `json:"name"`
			W    int    `json:"w"`
			H    int    `json:"h"`
			Kind string `json:"kind"`
			Pct  int    `json:"pct"`
		} `json:"cases"`
		Results []struct {
			Case   string  `json:"case"`
			Codec  string  `json:"codec"`
			Bytes  float64 `json:"bytes"`
			Median float64 `json:"median_ns"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(data, &run))
	type key struct{ c, codec string }
	bytes, times := map[key]float64{}, map[key]float64{}
	for _, r := range run.Results {
		bytes[key{r.Case, r.Codec}], times[key{r.Case, r.Codec}] = r.Bytes, r.Median
	}
	get := func(m map[key]float64, c, codec string) float64 {
		v, ok := m[key{c, codec}]
		require.True(t, ok, "%s %s in %s", c, codec, CodecReference)
		return v
	}
	var pcts []float64
	for _, c := range run.Cases {
		if !slices.Contains(pcts, float64(c.Pct)) && c.Pct > 0 {
			pcts = append(pcts, float64(c.Pct))
		}
	}
	pframe := func(kind string, pct float64) string { return fmt.Sprintf("p-%s-%dpct", kind, int(pct)) }
	// span is the lowest and highest of f over the change percentages but
	// those left out.
	span := func(f func(pct float64) float64, except ...float64) []float64 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range pcts {
			if !slices.Contains(except, p) {
				lo, hi = min(lo, f(p)), max(hi, f(p))
			}
		}
		return []float64{lo, hi}
	}
	sig2 := func(v float64) float64 { // two significant figures
		e := math.Pow(10, math.Floor(math.Log10(math.Abs(v)))-1)
		return math.Round(v/e) * e
	}
	// The write-ups' ratios ("10x (720p), 14x (1080p), 22x (4K)").
	writeUp := map[string][]float64{}
	for _, f := range findings {
		for _, m := range regexp.MustCompile(`([\d.]+)x\b`).FindAllStringSubmatch(f.Figures, -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			writeUp[f.ID] = append(writeUp[f.ID], v)
		}
	}
	out := map[string][]float64{}
	for id, row := range rows {
		for _, n := range evidence.Numbers(row) {
			out[id] = append(out[id], n.Value)
			if n.Value != 0 {
				out[id] = append(out[id], 1/n.Value)
			}
		}
		out[id] = append(out[id], pcts...)
	}
	// E5: a solid keyframe's bytes per 32x32 tile, the tile codec's and
	// Hextile's, and what Hextile's would give the write-up's ratio.
	solid := "key-solid-1080p"
	tiles := float64(1920 / codec.TileSize * (1080 / codec.TileSize))
	hextile32 := get(bytes, solid, "hextile") / tiles
	ratio := writeUp["E5"][0]
	out["E5"] = append(out["E5"], get(bytes, solid, "tile")/tiles, math.Round(hextile32), math.Round(hextile32)*ratio, math.Round(hextile32)/ratio)
	// E6: the bytes per tile the write-up's ratios mean, from Hextile's
	// Raw gradient tiles (two significant figures, as written).
	for i, res := range []string{"720p", "1080p", "4K"} {
		c := "key-gradient-" + res
		j := slices.IndexFunc(run.Cases, func(k struct {
			Name string `json:"name"`
			W    int    `json:"w"`
			H    int    `json:"h"`
			Kind string `json:"kind"`
			Pct  int    `json:"pct"`
		}) bool {
			return k.Name == c
		})
		require.GreaterOrEqual(t, j, 0, c)
		// Hextile's 16x16 tiles, the last row or column cut short; four
		// make a 32x32 one.
		n := math.Ceil(float64(run.Cases[j].W)/16) * math.Ceil(float64(run.Cases[j].H)/16) / 4
		out["E6"] = append(out["E6"], sig2(get(bytes, c, "hextile")/n/writeUp["E6"][i]))
	}
	// E7: how much smaller the tile codecs are on the noise block, and the
	// first change at which the tile codec is smaller on scattered noise.
	for _, cd := range []string{"tile", "tile-pertile"} {
		out["E7"] = append(out["E7"], span(func(p float64) float64 {
			return 100 * (1 - get(bytes, pframe("noise-block", p), cd)/get(bytes, pframe("noise-block", p), "hextile"))
		})...)
	}
	for _, p := range pcts {
		if get(bytes, pframe("noise", p), "tile") < get(bytes, pframe("noise", p), "hextile") {
			out["E7"] = append(out["E7"], p)
			break
		}
	}
	// E11: encode times against Hextile's, on points but at 50% and on
	// blocks, for both framings.
	for _, cd := range []string{"tile", "tile-pertile"} {
		slower := func(kind string) func(float64) float64 {
			return func(p float64) float64 {
				return get(times, pframe(kind, p), cd) / get(times, pframe(kind, p), "hextile")
			}
		}
		out["E11"] = append(out["E11"], span(slower("points"), 50)...)
		out["E11"] = append(out["E11"], span(slower("blocks"))...)
	}
	// E12: what carrying single-colour tiles forward cuts from the tile
	// codec's solid blocks at 50% and 90%.
	for _, p := range []float64{50, 90} {
		out["E12"] = append(out["E12"], 100*(1-get(bytes, pframe("blocks", p), "tile-carry")/get(bytes, pframe("blocks", p), "tile")))
	}
	return out
}

// whyProblems lists the figures of each finding's why that nothing pins. A
// figure of a why is pinned when it is
//
//   - a figure of the write-up for this finding, or for a finding the why
//     names (checked against FINDINGS.md by TestFindingsMatchTheSharedTable);
//   - the value of a model input the why names (findingParameters, read
//     from the code);
//   - a value the suite measured, as the written table shows it in the
//     finding's row or in the row of a finding the why names ("= 13.3 ms":
//     make readme writes it from the run, and the scenario's bounds, set by
//     the bound rule, fail the suite when it moves);
//   - quoted by the finding's evidence (pinned by the test that measures
//     it), or derived from the codec lab's reference run as codecFigures
//     says (the row is generated from the same run).
func whyProblems(findings []Finding, measured map[string][]float64, params map[string][]float64, codecFigs map[string][]float64) []string {
	byID := map[string]Finding{}
	for _, f := range findings {
		byID[f.ID] = f
	}
	var out []string
	for _, f := range findings {
		// The finding's own row, and those of the findings the why names.
		named := append([]string{f.ID}, findingName.FindAllString(f.Why, -1)...)
		var known []float64
		add := func(text string) {
			for _, n := range evidence.Numbers(text) {
				known = append(known, n.Value)
			}
		}
		add(f.Figures)
		add(f.Documented)
		for _, id := range named[1:] {
			add(byID[id].Figures)
		}
		for name, vs := range params {
			if strings.Contains(f.Why, name) {
				known = append(known, vs...)
			}
		}
		for _, e := range f.Evidence {
			add(e.Lab)
		}
		known = append(known, codecFigs[f.ID]...)
		for _, n := range evidence.Numbers(f.Why) {
			// A known figure written with fewer decimals is the same figure.
			half := 0.5 * math.Pow(10, -float64(n.Decimals))
			if slices.ContainsFunc(known, func(v float64) bool { return math.Abs(v-n.Value) <= half*(1+1e-9) }) {
				continue
			}
			if slices.ContainsFunc(named, func(id string) bool {
				return slices.ContainsFunc(measured[id], func(v float64) bool { return math.Abs(v-n.Value) <= half*(1+1e-9) })
			}) {
				continue
			}
			out = append(out, fmt.Sprintf("%s: the why's %s is pinned by nothing", f.ID, quantities(f.Why[n.Start:])[0].text))
		}
	}
	return out
}

// measuredValue is a value a check of the suite measured, as the table
// writes it: "= 13.3 ms, want".
var measuredValue = regexp.MustCompile(`= ([\d.]+)(?: ?[a-zA-Z/%]+)?(?:, want|: )`)

// writtenMeasurements reads, by finding, the values the suite measured from
// the written reproduction table.
func writtenMeasurements(t *testing.T) map[string][]float64 {
	root, err := moduleRoot()
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, docregion.Reproduction.File))
	require.NoError(t, err)
	i, j, err := docregion.Reproduction.Find(string(doc))
	require.NoError(t, err)
	_, rows := tableRows(t, string(doc[i:j]))
	out := map[string][]float64{}
	for id, cells := range rows {
		for _, m := range measuredValue.FindAllStringSubmatch(cells[3], -1) {
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			out[id] = append(out[id], v)
		}
	}
	require.NotEmpty(t, out["N20"], "the suite's values in the written table")
	return out
}

// Every figure of a why is pinned (whyProblems).
func TestEveryWhyFigureIsPinned(t *testing.T) {
	rep, err := LoadReproduction()
	require.NoError(t, err)
	for _, p := range whyProblems(rep.Findings, writtenMeasurements(t), findingParameters(t), codecFigures(t, rep.Findings, rep.Codec)) {
		t.Error(p)
	}
}

// The why rule takes each source of a pinned figure, and nothing else.
func TestWhyFigureRules(t *testing.T) {
	fs := []Finding{
		{ID: "N1", Figures: "38 ms", Why: "13.3 ms (N2's 25 ms), p.Input's 15 ms, the codec's 0.13x read as 7.7x, 2.5 the measured 2.46 rounded"},
		{ID: "N2", Figures: "25 ms", Why: "—"},
	}
	measured := map[string][]float64{"N1": {13.3, 2.46}}
	params := map[string][]float64{"p.Input": {15}}
	codecs := map[string][]float64{"N1": {0.13, 1 / 0.13}}
	require.Empty(t, whyProblems(fs, measured, params, codecs))
	fs[0].Why += ", and 12 ms"
	require.Equal(t, []string{"N1: the why's 12 ms is pinned by nothing"}, whyProblems(fs, measured, params, codecs))
	fs[0].Why = "13.4 ms, N2's 26 ms, 16 ms"
	require.Len(t, whyProblems(fs, measured, params, codecs), 3)
}
