package jobs

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports"
	"github.com/nuvirahub/latencylab/reports/render"
	"github.com/nuvirahub/latencylab/scenarios"
)

// DefaultCompareOut is compare's report folder, relative to the module's
// root.
const DefaultCompareOut = "out/compare"

// CompareOptions configure a comparison of two configurations.
type CompareOptions struct {
	// Root is the module's root; relative paths are its.
	Root string
	// A and B are the configurations (jobspec.Parse); B is judged against
	// A, as new runs against a baseline.
	A, B string
	// Files, when given, are the scenarios to run (a team's own folder,
	// loaded by filetest.Load); else Scenarios names scenarios of the
	// library; else Group picks a group; else the whole library runs.
	Files     []*scenarios.Scenario
	Scenarios []string
	Group     string
	// Seeds are the seeds (default 1, 2, 3).
	Seeds []uint64
	// Out is the report's folder.
	Out string
	// Parallel, Progress and Exact are the Plan's.
	Parallel int
	Progress io.Writer
	Exact    *exact.Runner
	// Stats tunes the comparison.
	Stats reports.Options
}

// CompareRun is what a comparison found.
type CompareRun struct {
	// A and B are the two configurations.
	A, B jobspec.Config
	// Judgement is B's runs judged against A's.
	Judgement *Judgement
	// Report is the Markdown report's path (report.html beside it).
	Report string
	// Sessions counts the sessions of both sides; Wall is the time they
	// took.
	Sessions int
	Wall     time.Duration
}

// Verdict sums the comparison up in a sentence: in how many scenarios B
// is worse than A, better, or no different, naming the changed ones and
// their largest latency change.
func (c *CompareRun) Verdict() string {
	var worse, better []string
	same := 0
	for _, sj := range c.Judgement.Scenarios {
		switch sj.Outcome() {
		case reports.Regression:
			worse = append(worse, changed(sj, reports.Regression))
		case reports.Improvement:
			better = append(better, changed(sj, reports.Improvement))
		case reports.Unchanged:
			same++
		}
	}
	list := func(s []string) string {
		if len(s) == 0 {
			return ""
		}
		return " (" + strings.Join(s, "; ") + ")"
	}
	return fmt.Sprintf("%s against %s: worse in %d scenarios%s, better in %d%s, no different in %d.",
		c.B.Spec, c.A.Spec, len(worse), list(worse), len(better), list(better), same)
}

// changed names a scenario and its metrics of one outcome with their
// differences.
func changed(sj ScenarioJudgement, o reports.Outcome) string {
	var parts []string
	for _, v := range sj.Verdicts {
		if v.Outcome == o {
			parts = append(parts, v.Metric.Name+" "+v.Metric.FormatSigned(v.Diff.Value))
		}
	}
	return sj.Scenario + ": " + strings.Join(parts, ", ")
}

// Compare runs scenarios under two configurations for the same seeds,
// judges B against A scenario by scenario with the nightly's rule, and
// writes a report with the evidence, plots and the verdict.
func Compare(t *testing.T, o CompareOptions) (*CompareRun, error) {
	t.Helper()
	if err := defaultRootAndSeeds(&o.Root, &o.Seeds); err != nil {
		return nil, err
	}
	if o.A == "" || o.B == "" {
		return nil, errors.New("compare needs two configurations, -a and -b: names like old-pipeline, settings like threshold=80ms, or both")
	}
	a, err := jobspec.Parse(o.A)
	if err != nil {
		return nil, fmt.Errorf("-a: %w", err)
	}
	b, err := jobspec.Parse(o.B)
	if err != nil {
		return nil, fmt.Errorf("-b: %w", err)
	}
	if a.Spec == b.Spec {
		return nil, fmt.Errorf("-a and -b are the same configuration, %q: nothing to compare", a.Spec)
	}
	scs, err := selectScenarios(o.Files, o.Group, o.Scenarios)
	if err != nil {
		return nil, err
	}
	scs, left := Applicable(scs, a, b)
	if len(scs) == 0 {
		return nil, fmt.Errorf("no scenario takes both configurations:\n%s", strings.Join(left, "\n"))
	}

	began := time.Now()
	sessions := Run(t, Plan{Scenarios: scs, Variants: []Variant{variantOf(a), variantOf(b)}, Seeds: o.Seeds, Parallel: o.Parallel, Progress: o.Progress, Exact: o.Exact})
	run := &CompareRun{A: a, B: b, Sessions: len(sessions), Wall: time.Since(began)}
	var sa, sb []Session
	for _, s := range sessions {
		if s.Variant == a.Spec {
			sa = append(sa, s)
		} else {
			sb = append(sb, s)
		}
	}
	base := map[string]*reports.Baseline{}
	for _, bl := range NewBaselines(scs, sa, "", began) {
		base[bl.Scenario] = bl
	}
	run.Judgement = Judge(base, scs, sb, false, o.Stats)
	run.Judgement.NotApplicable = left
	for _, s := range sa {
		if s.Err != nil && !s.Skipped {
			run.Judgement.Errors = append(run.Judgement.Errors, s)
		}
	}

	out := under(o.Root, o.Out, DefaultCompareOut)
	if err := render.Write(out, "report", compareDoc(run, sa, o.Seeds, reports.Describe(o.Root), began)); err != nil {
		return run, err
	}
	run.Report = filepath.Join(out, "report.md")
	return run, nil
}

// compareDoc is compare's report: the verdict, a table of every scenario,
// then each scenario's evidence and plots.
func compareDoc(run *CompareRun, sa []Session, seeds []uint64, commit string, began time.Time) *render.Doc {
	j := run.Judgement
	la, lb := run.A.Spec, run.B.Spec
	doc := &render.Doc{Title: fmt.Sprintf("Compare: %s against %s", lb, la)}
	doc.Intro = []string{
		fmt.Sprintf("A: %s%s. B: %s%s.", la, changesText(run.A), lb, changesText(run.B)),
		sessionsText(run, j, seeds, commit, began),
		"Verdict: " + run.Verdict(),
		"Rule (B judged against A as the nightly judges new runs against the baseline): " + reports.Rule,
	}
	doc.Sections = append(doc.Sections, render.Section{
		Heading: "Every scenario",
		Tables:  []render.Table{scenarioTable(fmt.Sprintf("%s -> %s and the difference for each metric.", la, lb), j)},
	})
	resultsA := map[string][]*Session{}
	for i := range sa {
		if sa[i].Result != nil && sa[i].Err == nil {
			resultsA[sa[i].Scenario] = append(resultsA[sa[i].Scenario], &sa[i])
		}
	}
	for _, sj := range j.Scenarios {
		s := render.Section{Heading: fmt.Sprintf("%s: %s", sj.Scenario, sj.Outcome())}
		if len(sj.Verdicts) > 0 {
			s.Tables = []render.Table{verdictTable("", la, lb, sj.Verdicts)}
		}
		s.Paragraphs = append(s.Paragraphs, sj.Notes...)
		if sj.Baseline != nil && len(sj.Evidence) > 0 {
			figs, notes := figures(sj.Scenario, la, lb, sj.Baseline.Runs, sj.Evidence, resultsOf(resultsA[sj.Scenario]), sj.Results)
			s.Figures, s.Paragraphs = figs, append(s.Paragraphs, notes...)
		}
		doc.Sections = append(doc.Sections, s)
	}
	var notes []string
	for _, s := range j.Errors {
		notes = append(notes, fmt.Sprintf("%s under %s, seed %d, failed: %v", s.Scenario, s.Variant, s.Seed, s.Err))
	}
	notes = append(notes, j.NotApplicable...)
	if len(notes) > 0 {
		doc.Sections = append(doc.Sections, render.Section{Heading: "Failures and notes", Paragraphs: notes})
	}
	return doc
}

// sessionsText says what ran: sessions run for the comparison, or runs
// read from result files (CompareResults, which runs nothing).
func sessionsText(run *CompareRun, j *Judgement, seeds []uint64, commit string, began time.Time) string {
	if run.Wall == 0 {
		return fmt.Sprintf("%d scenarios, seeds %s: %d runs read from result files, %s.",
			len(j.Scenarios), seedList(seeds), run.Sessions, began.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%d scenarios x seeds %s under each, %s (commit %s): %d sessions in %.1f s wall.",
		len(j.Scenarios), seedList(seeds), began.UTC().Format(time.RFC3339), orUnknown(commit), run.Sessions, run.Wall.Seconds())
}

func resultsOf(ss []*Session) []*result.Run {
	var out []*result.Run
	for _, s := range ss {
		out = append(out, s.Result)
	}
	return out
}
