package jobs

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports"
	"github.com/nuvirahub/latencylab/reports/plots"
	"github.com/nuvirahub/latencylab/reports/render"
)

// The reports of the nightly and of compare are built from the same
// pieces: a verdict table, a per-scenario table, and for a scenario that
// changed its latency distributions side by side and its runs over time.

// withInterval writes a value and its interval: "23.3 ms [23.1, 23.5]".
func withInterval(m reports.Metric, v, lo, hi float64, signed bool) string {
	f := m.Format
	if signed {
		f = m.FormatSigned
	}
	return fmt.Sprintf("%s [%s, %s]", f(v), f(lo), f(hi))
}

func verdictRow(v reports.Verdict) []string {
	m := v.Metric
	if v.Outcome == reports.NoData {
		return []string{v.Scenario, m.Name, string(v.Outcome), v.Note, "", "", "", ""}
	}
	ks := ""
	if m.Latency() {
		ks = fmt.Sprintf("%.2f, %s", v.KSD, reports.FormatP(v.KSP))
	}
	return []string{v.Scenario, m.Name, string(v.Outcome),
		withInterval(m, v.A.Value, v.A.CI.Lo, v.A.CI.Hi, false) + fmt.Sprintf(" (%d runs)", v.RunsA),
		withInterval(m, v.B.Value, v.B.CI.Lo, v.B.CI.Hi, false) + fmt.Sprintf(" (%d runs)", v.RunsB),
		withInterval(m, v.Diff.Value, v.Diff.CI.Lo, v.Diff.CI.Hi, true),
		m.Format(v.MinChange), ks}
}

// verdictTable lists verdicts with their evidence; labelA and labelB name
// the two sides ("baseline", "new").
func verdictTable(caption, labelA, labelB string, vs []reports.Verdict) render.Table {
	t := render.Table{Caption: caption, Header: []string{"scenario", "metric", "outcome", labelA + " [CI]", labelB + " [CI]",
		"difference [CI]", "practical minimum", "KS D, p"}}
	for _, v := range vs {
		t.Rows = append(t.Rows, verdictRow(v))
	}
	return t
}

// cell sums a verdict up in a table cell: "23.3 -> 33.3 ms (+10.0 ms)",
// marked when it is not unchanged.
func cell(v reports.Verdict) string {
	if v.Outcome == reports.NoData {
		return "—"
	}
	m := v.Metric
	s := fmt.Sprintf("%s -> %s (%s)", m.Format(v.A.Value), m.Format(v.B.Value), m.FormatSigned(v.Diff.Value))
	switch v.Outcome {
	case reports.Regression:
		s += " REGRESSION"
	case reports.Improvement:
		s += " improved"
	}
	return s
}

// scenarioTable has a row per scenario: its outcome and each metric's
// change.
func scenarioTable(caption string, j *Judgement) render.Table {
	t := render.Table{Caption: caption, Header: []string{"scenario", "outcome"}}
	for _, m := range reports.Metrics {
		t.Header = append(t.Header, m.Name)
	}
	t.Header = append(t.Header, "notes")
	for _, sj := range j.Scenarios {
		row := []string{sj.Scenario, string(sj.Outcome())}
		for i := range reports.Metrics {
			if i < len(sj.Verdicts) {
				row = append(row, cell(sj.Verdicts[i]))
			} else {
				row = append(row, "—")
			}
		}
		t.Rows = append(t.Rows, append(row, strings.Join(sj.Notes, "; ")))
	}
	return t
}

// pooledSeconds is the evidence's latency quantiles of every run, in
// seconds, as plots.LatencyCDF takes them.
func pooledSeconds(ev []reports.Evidence) []float64 {
	var out []float64
	for _, e := range ev {
		for _, d := range e.Latency {
			out = append(out, d.Seconds())
		}
	}
	return out
}

// figures draws a scenario's comparison: the latency distributions of
// both sides (each run's quantiles pooled, as the verdict weighs them),
// and the new side's runs over time, plus, when there are results on
// both sides, where each side's time goes stage by stage, and the new
// side's first run's stages over time. A figure that
// cannot be drawn is left out with a line saying why.
func figures(scenario, labelA, labelB string, a, b []reports.Evidence, resultsA, resultsB []*result.Run) ([]render.Figure, []string) {
	var figs []render.Figure
	var notes []string
	add := func(name, caption string, png []byte, err error) {
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: not drawn: %v", caption, err))
			return
		}
		figs = append(figs, render.Figure{Name: name, Caption: caption, PNG: png})
	}
	png, err := plots.LatencyCDF(scenario+": latency distribution", []plots.Series{
		{Label: labelA, Values: pooledSeconds(a)}, {Label: labelB, Values: pooledSeconds(b)},
	})
	add("cdf-"+scenario+".png", fmt.Sprintf("%s: latency CDF, %s against %s (each run's %d quantiles pooled)", scenario, labelB, labelA, reports.Quantiles), png, err)

	over := map[string]*result.Run{}
	for _, r := range resultsA {
		over[fmt.Sprintf("%s seed %d", labelA, r.Seed)] = r
		break // one of the other side's runs is enough to see the difference
	}
	for _, r := range resultsB {
		over[fmt.Sprintf("%s seed %d", labelB, r.Seed)] = r
	}
	if len(over) > 0 {
		png, err = plots.LatencyOverTime(scenario+": latency and bitrate over time", over)
		add("time-"+scenario+".png", fmt.Sprintf("%s: latency and bitrate over time, %s", scenario, strings.Join(slices.Sorted(maps.Keys(over)), ", ")), png, err)
	}
	if len(resultsA) > 0 && len(resultsB) > 0 {
		png, err = plots.StageBreakdown(scenario+": where a frame's time goes", map[string]*result.Run{
			labelA: resultsA[0], labelB: resultsB[0],
		})
		add("stages-"+scenario+".png", fmt.Sprintf("%s: median time per stage, seed %d of %s and seed %d of %s", scenario, resultsA[0].Seed, labelA, resultsB[0].Seed, labelB), png, err)
	}
	if len(resultsB) > 0 {
		r := resultsB[0]
		png, err = plots.StagesOverTime(fmt.Sprintf("%s: where a frame's time goes, over time (%s seed %d)", scenario, labelB, r.Seed), r)
		add("stages-time-"+scenario+".png", fmt.Sprintf("%s: the median of each stage per %v bucket of display, stacked, seed %d of %s; the line is the median latency, the dashed line the downlink's bottleneck queue", scenario, r.SampleEvery, r.Seed, labelB), png, err)
	}
	return figs, notes
}

// nightlyDoc is the nightly's report.
func nightlyDoc(run *NightlyRun, cfg jobspec.Config, baselineDir, commit string, began time.Time) *render.Doc {
	j := run.Judgement
	regressions, improvements := j.Regressions(), j.Verdicts(reports.Improvement)
	doc := &render.Doc{Title: fmt.Sprintf("Nightly: %s against the baseline", cfg.Spec)}
	doc.Intro = append(doc.Intro,
		fmt.Sprintf("%d scenarios x seeds %s under %s%s, %s (commit %s): %d sessions in %.1f s wall.",
			len(j.Scenarios), seedList(j.Seeds), cfg.Spec, changesText(cfg), began.UTC().Format(time.RFC3339), orUnknown(commit),
			run.Sessions, run.Wall.Seconds()),
		fmt.Sprintf("Baseline: %s (%s).", baselineDir, baselineText(j)),
		fmt.Sprintf("Outcome: %d regressions, %d improvements in %d scenarios; %d sessions failed, %d skipped.",
			len(regressions), len(improvements), len(j.Scenarios), len(j.Errors), len(j.Skipped)),
		"Rule: "+reports.Rule+" The interval accounts for run-to-run noise: the seeds change the network's random decisions, and quic-go in a bubble is not bit-deterministic (docs/determinism.md).",
	)
	sec := render.Section{Heading: "Regressions"}
	if len(regressions) == 0 {
		sec.Paragraphs = []string{"None."}
	} else {
		sec.Tables = []render.Table{verdictTable("Every metric that regressed, with its evidence.", "baseline", "new", regressions)}
	}
	doc.Sections = append(doc.Sections, sec)
	sec = render.Section{Heading: "Improvements"}
	if len(improvements) == 0 {
		sec.Paragraphs = []string{"None."}
	} else {
		sec.Paragraphs = []string{"Accept the baseline (lab accept) once an improvement is understood, so that it is guarded from now on."}
		sec.Tables = []render.Table{verdictTable("Every metric that improved, with its evidence.", "baseline", "new", improvements)}
	}
	doc.Sections = append(doc.Sections, sec)
	doc.Sections = append(doc.Sections, render.Section{
		Heading:    "Every scenario",
		Paragraphs: []string{"Baseline -> new and the difference for each metric; the evidence of every verdict is in the regression and improvement tables above, and in suite.json beside this report."},
		Tables:     []render.Table{scenarioTable("", j)},
	})
	for _, sj := range j.Scenarios {
		if o := sj.Outcome(); o != reports.Regression && o != reports.Improvement {
			continue
		}
		s := render.Section{Heading: fmt.Sprintf("%s: %s", sj.Scenario, sj.Outcome())}
		for _, v := range sj.Verdicts {
			if v.Outcome == reports.Regression || v.Outcome == reports.Improvement {
				s.Paragraphs = append(s.Paragraphs, v.String())
			}
		}
		figs, notes := figures(sj.Scenario, "baseline", cfg.Spec, sj.Baseline.Runs, sj.Evidence, nil, sj.Results)
		s.Figures, s.Paragraphs = figs, append(s.Paragraphs, notes...)
		doc.Sections = append(doc.Sections, s)
	}
	var notes []string
	for _, s := range j.Errors {
		notes = append(notes, fmt.Sprintf("%s seed %d failed: %v", s.Scenario, s.Seed, s.Err))
	}
	for _, s := range j.Skipped {
		notes = append(notes, fmt.Sprintf("%s seed %d skipped: %v", s.Scenario, s.Seed, s.Err))
	}
	for _, sj := range j.Scenarios {
		for _, n := range sj.Notes {
			notes = append(notes, sj.Scenario+": "+n)
		}
	}
	for _, name := range j.Stale {
		notes = append(notes, name+": a baseline without a scenario in the library (accept to remove it)")
	}
	notes = append(notes, j.NotApplicable...)
	if len(notes) > 0 {
		doc.Sections = append(doc.Sections, render.Section{Heading: "Failures and notes", Paragraphs: notes})
	}
	return doc
}

func changesText(cfg jobspec.Config) string {
	ch := cfg.Changes()
	if len(ch) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(ch)) {
		parts = append(parts, k+": "+ch[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// baselineText says when and from what the baselines were made, and with
// which seeds, the most common first: after a partial accept they differ.
func baselineText(j *Judgement) string {
	count := map[string]int{}
	for _, sj := range j.Scenarios {
		if b := sj.Baseline; b != nil {
			var seeds []uint64
			for _, r := range b.Runs {
				seeds = append(seeds, r.Seed)
			}
			count[fmt.Sprintf("made %s at commit %s, seeds %s", b.Created.Format(time.DateOnly), orUnknown(b.Commit), seedList(seeds))]++
		}
	}
	if len(count) == 0 {
		return "none found"
	}
	keys := slices.SortedFunc(maps.Keys(count), func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d scenarios %s", count[k], k))
	}
	return strings.Join(parts, "; ")
}
