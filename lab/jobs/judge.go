package jobs

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Judgement is one configuration's runs compared with baselines, scenario
// by scenario: what the nightly reports.
type Judgement struct {
	// Variant is the configuration the runs were made under; Seeds their
	// seeds.
	Variant string
	Seeds   []uint64
	// Scenarios are the scenarios' verdicts, in the plan's order.
	Scenarios []ScenarioJudgement
	// Errors are sessions that failed (or were cut short); Skipped those
	// that need ../shared, absent here.
	Errors  []Session
	Skipped []Session
	// NotApplicable lists the scenarios left out because the
	// configuration does not apply to them, and why.
	NotApplicable []string
	// Stale lists baselines of scenarios that did not run although the
	// whole library did: renamed or deleted scenarios.
	Stale []string
}

// ScenarioJudgement is one scenario's comparison.
type ScenarioJudgement struct {
	Scenario string
	// Verdicts has one verdict per metric of reports.Metrics; none when
	// there is no baseline.
	Verdicts []reports.Verdict
	// Baseline is what the runs were compared with (nil: none).
	Baseline *reports.Baseline
	// Results are the new runs that completed, Evidence their evidence.
	Results  []*result.Run
	Evidence []reports.Evidence
	// Notes say what a reader must know to trust the verdicts: no
	// baseline, a scenario changed since its baseline, failed runs.
	Notes []string
}

// Judge compares sessions of one configuration with baselines (by
// scenario name). scs are the scenarios as written that the sessions ran
// (for their fingerprints); library says the whole library ran, so a
// baseline without a scenario is stale.
func Judge(baselines map[string]*reports.Baseline, scs []*scenarios.Scenario, sessions []Session, library bool, o reports.Options) *Judgement {
	j := &Judgement{}
	byName := map[string]*ScenarioJudgement{}
	for _, sc := range scs {
		j.Scenarios = append(j.Scenarios, ScenarioJudgement{Scenario: sc.Name})
	}
	for i := range j.Scenarios {
		byName[j.Scenarios[i].Scenario] = &j.Scenarios[i]
	}
	for _, s := range sessions {
		if j.Variant == "" {
			j.Variant = s.Variant
		}
		if !slices.Contains(j.Seeds, s.Seed) {
			j.Seeds = append(j.Seeds, s.Seed)
		}
		sj := byName[s.Scenario]
		switch {
		case sj == nil:
			continue
		case s.Skipped:
			j.Skipped = append(j.Skipped, s)
		case s.Err != nil || s.Result == nil:
			j.Errors = append(j.Errors, s)
			sj.Notes = append(sj.Notes, fmt.Sprintf("seed %d failed: %v", s.Seed, s.Err))
		default:
			sj.Results = append(sj.Results, s.Result)
			sj.Evidence = append(sj.Evidence, reports.NewEvidence(s.Result))
		}
	}
	for _, sc := range scs {
		sj := byName[sc.Name]
		b := baselines[sc.Name]
		switch {
		case b == nil:
			sj.Notes = append(sj.Notes, "no baseline to compare with")
			continue
		case len(sj.Evidence) == 0:
			continue
		}
		sj.Baseline = b
		if fp := reports.Fingerprint(sc); b.Fingerprint != "" && b.Fingerprint != fp {
			sj.Notes = append(sj.Notes, fmt.Sprintf("the scenario changed since its baseline (%s, now %s): a difference may be the file's", b.Fingerprint, fp))
		}
		sj.Verdicts = reports.Compare(sc.Name, b.Runs, sj.Evidence, o)
	}
	if library {
		for name := range baselines {
			if byName[name] == nil {
				j.Stale = append(j.Stale, name)
			}
		}
		slices.Sort(j.Stale)
	}
	return j
}

// Verdicts lists every verdict with the given outcome, in scenario order.
func (j *Judgement) Verdicts(o reports.Outcome) []reports.Verdict {
	var out []reports.Verdict
	for _, sj := range j.Scenarios {
		for _, v := range sj.Verdicts {
			if v.Outcome == o {
				out = append(out, v)
			}
		}
	}
	return out
}

// Regressions lists the verdicts that regressed.
func (j *Judgement) Regressions() []reports.Verdict { return j.Verdicts(reports.Regression) }

// Failed says the nightly must fail: a regression, or a session that did
// not complete (a crash is a regression too, just not one with a number).
func (j *Judgement) Failed() bool { return len(j.Regressions()) > 0 || len(j.Errors) > 0 }

// Outcome is the scenario's overall outcome: a regression if any metric
// regressed, else an improvement if any improved, else unchanged (or no
// data when there is nothing to compare).
func (sj ScenarioJudgement) Outcome() reports.Outcome {
	has := func(o reports.Outcome) bool {
		return slices.ContainsFunc(sj.Verdicts, func(v reports.Verdict) bool { return v.Outcome == o })
	}
	switch {
	case has(reports.Regression):
		return reports.Regression
	case has(reports.Improvement):
		return reports.Improvement
	case len(sj.Verdicts) == 0 || !has(reports.Unchanged):
		return reports.NoData
	}
	return reports.Unchanged
}

// Summary is the judgement for a console: a count line, then every
// regression, improvement, error and note with its evidence.
func (j *Judgement) Summary() string {
	var b strings.Builder
	count := map[reports.Outcome]int{}
	for _, sj := range j.Scenarios {
		count[sj.Outcome()]++
	}
	fmt.Fprintf(&b, "%s, seeds %s: %d scenarios: %d regressed, %d improved, %d unchanged, %d without data; %d sessions failed, %d skipped\n",
		j.Variant, seedList(j.Seeds), len(j.Scenarios), count[reports.Regression], count[reports.Improvement],
		count[reports.Unchanged], count[reports.NoData], len(j.Errors), len(j.Skipped))
	for _, v := range j.Regressions() {
		fmt.Fprintf(&b, "REGRESSION  %s\n", v)
	}
	for _, v := range j.Verdicts(reports.Improvement) {
		fmt.Fprintf(&b, "improvement %s\n", v)
	}
	for _, s := range j.Errors {
		fmt.Fprintf(&b, "FAILED      %s seed %d: %v\n", s.Scenario, s.Seed, s.Err)
	}
	for _, sj := range j.Scenarios {
		for _, n := range sj.Notes {
			if !strings.HasPrefix(n, "seed ") { // failures are listed above
				fmt.Fprintf(&b, "note        %s: %s\n", sj.Scenario, n)
			}
		}
	}
	for _, name := range j.Stale {
		fmt.Fprintf(&b, "note        %s: a baseline without a scenario in the library (accept to remove it)\n", name)
	}
	for _, n := range j.NotApplicable {
		fmt.Fprintf(&b, "left out    %s\n", n)
	}
	return b.String()
}

func seedList(seeds []uint64) string {
	var s []string
	for _, v := range seeds {
		s = append(s, fmt.Sprint(v))
	}
	return strings.Join(s, ",")
}

// Applicable splits scenarios into those every configuration applies to
// and, for the others, a line saying which refused and why: an ABR
// setting on a fixed bitrate is no session to run, nor a failure.
func Applicable(scs []*scenarios.Scenario, cfgs ...jobspec.Config) ([]*scenarios.Scenario, []string) {
	var ok []*scenarios.Scenario
	var left []string
	for _, sc := range scs {
		var why error
		for _, c := range cfgs {
			cp := *sc
			if err := c.Apply(&cp); err != nil {
				why = fmt.Errorf("%s: %w", c.Spec, err)
				break
			}
		}
		if why != nil {
			left = append(left, fmt.Sprintf("%s: not applicable: %v", sc.Name, why))
			continue
		}
		ok = append(ok, sc)
	}
	return ok, left
}

// NewBaselines makes a baseline of each scenario from its sessions that
// completed; a scenario none of whose sessions completed gets none (its
// old baseline, if any, stays).
func NewBaselines(scs []*scenarios.Scenario, sessions []Session, commit string, created time.Time) []*reports.Baseline {
	var out []*reports.Baseline
	for _, sc := range scs {
		b := &reports.Baseline{Scenario: sc.Name, Fingerprint: reports.Fingerprint(sc), Created: created.UTC(), Commit: commit}
		for _, s := range sessions {
			if s.Scenario == sc.Name && s.Err == nil && s.Result != nil {
				b.Variant = s.Variant
				b.Runs = append(b.Runs, reports.NewEvidence(s.Result))
			}
		}
		if len(b.Runs) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// variantOf is a configuration as a Plan's variant, labelled by its spec;
// as-written applies nothing.
func variantOf(c jobspec.Config) Variant {
	if c.Named.Name == jobspec.AsWritten && len(c.Settings) == 0 {
		return Variant{Label: c.Spec}
	}
	return Variant{Label: c.Spec, Apply: c.Apply}
}
