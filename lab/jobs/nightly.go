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
	"github.com/nuvirahub/latencylab/reports"
	"github.com/nuvirahub/latencylab/reports/render"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Defaults of the nightly, relative to the module's root.
const (
	DefaultBaselines  = "testdata/baselines"
	DefaultNightlyOut = "out/nightly"
	// DefaultFileBaselines is the baselines' folder of a nightly of a
	// team's own scenario files, relative to the folder the job runs in
	// (the user's): a repository with scenarios/ and baselines/ side by
	// side (docs/own-scenarios.md).
	DefaultFileBaselines = "baselines"
)

// DefaultSeeds are the nightly's seeds, the committed baseline's.
var DefaultSeeds = []uint64{1, 2, 3}

// NightlyOptions configure a nightly run; the zero value is the nightly:
// the whole library, as written, seeds 1, 2 and 3, against
// testdata/baselines, the report in out/nightly.
type NightlyOptions struct {
	// Root is the module's root; relative paths below are its.
	Root string
	// Seeds are the seeds every scenario runs with.
	Seeds []uint64
	// Baselines is the baselines' folder; Out the report's.
	Baselines, Out string
	// Files, when given, are the scenarios to run instead of the
	// library's (a team's own folder, loaded by filetest.Load); their
	// baselines' folder is then DefaultFileBaselines unless Baselines
	// says otherwise.
	Files []*scenarios.Scenario
	// Scenarios limits the run to scenarios of the library, Group to a
	// group; a limited run neither prunes baselines nor calls any stale.
	Scenarios []string
	Group     string
	// Config is the configuration to run (jobspec.Parse); as-written by
	// default. Another one checks what the nightly would say of a change
	// (old-pipeline must regress).
	Config string
	// Accept writes this run's evidence as the new baselines (the
	// configuration must be as-written). It refuses a work tree with
	// uncommitted changes (ErrDirty) unless AllowDirty: a baseline names
	// the commit its runs were made from, and "-dirty" names none.
	Accept     bool
	AllowDirty bool
	// Parallel bounds the sessions at once (0: every core); Progress gets
	// a line per session.
	Parallel int
	Progress io.Writer
	// Exact, when set, runs every session exact (Plan.Exact).
	Exact *exact.Runner
	// Stats tunes the comparison.
	Stats reports.Options
}

// NightlyRun is what a nightly did.
type NightlyRun struct {
	// Judgement is every scenario compared with its baseline.
	Judgement *Judgement
	// Report is the Markdown report's path (report.html beside it);
	// Suite the suite file of every result.
	Report, Suite string
	// Baselines is the baselines' folder; Accepted counts the baselines
	// written there, AcceptedBytes their size.
	Baselines     string
	Accepted      int
	AcceptedBytes int64
	// Sessions counts the sessions; Wall is the time they took.
	Sessions int
	Wall     time.Duration
}

// ErrDirty is the refusal to accept baselines from a work tree with
// uncommitted changes: the code and scenarios they were made from would
// be in no commit.
var ErrDirty = errors.New("accept: the work tree has uncommitted changes")

// Nightly runs the library (or a group) for every seed under one
// configuration, compares every scenario with its baseline, writes the
// report, the suite of results and, with Accept, the new baselines. It
// fails (returns an error) only when it could not do that; regressions
// are in the judgement, for the caller to fail on.
func Nightly(t *testing.T, o NightlyOptions) (*NightlyRun, error) {
	t.Helper()
	if err := defaultRootAndSeeds(&o.Root, &o.Seeds); err != nil {
		return nil, err
	}
	if o.Config == "" {
		o.Config = jobspec.AsWritten
	}
	cfg, err := jobspec.Parse(o.Config)
	if err != nil {
		return nil, err
	}
	if o.Accept && (cfg.Named.Name != jobspec.AsWritten || len(cfg.Settings) > 0) {
		return nil, fmt.Errorf("accepting a baseline under configuration %q: the baseline is the library as written; run -accept without -variant", cfg.Spec)
	}
	// The commit is described before the sessions run: it is the source
	// they were built from, and a tree made dirty meanwhile is refused
	// before an hour of sessions, not after.
	commit := reports.Describe(o.Root)
	if o.Accept && !o.AllowDirty && strings.HasSuffix(commit, "-dirty") {
		return nil, fmt.Errorf("%w (git describe in %s: %s): a baseline names the commit its runs were made from. "+
			"Commit the change first (git status lists it), then accept, and commit testdata/baselines; "+
			"or, to accept anyway, lab accept -allow-dirty (the baselines then say %s)", ErrDirty, o.Root, commit, commit)
	}
	scs, err := selectScenarios(o.Files, o.Group, o.Scenarios)
	if err != nil {
		return nil, err
	}
	scs, left := Applicable(scs, cfg)
	if len(scs) == 0 {
		return nil, fmt.Errorf("configuration %q applies to no scenario:\n%s", cfg.Spec, strings.Join(left, "\n"))
	}
	defBaselines := DefaultBaselines
	if o.Files != nil {
		defBaselines = DefaultFileBaselines
	}
	dir, out := under(o.Root, o.Baselines, defBaselines), under(o.Root, o.Out, DefaultNightlyOut)
	baselines, err := reports.ReadBaselines(dir)
	if err != nil {
		return nil, err
	}

	began := time.Now()
	sessions := Run(t, Plan{Scenarios: scs, Variants: []Variant{variantOf(cfg)}, Seeds: o.Seeds, Parallel: o.Parallel, Progress: o.Progress, Exact: o.Exact})
	run := &NightlyRun{Sessions: len(sessions), Wall: time.Since(began), Baselines: dir}
	whole := o.Group == "" && len(o.Scenarios) == 0
	run.Judgement = Judge(baselines, scs, sessions, whole && len(left) == 0, o.Stats)
	run.Judgement.NotApplicable = left

	suite := &reports.Suite{Label: cfg.Spec, Created: began.UTC(), Commit: commit, Seeds: o.Seeds, Config: cfg.Changes()}
	for _, s := range sessions {
		if s.Result != nil {
			suite.Runs = append(suite.Runs, s.Result)
		}
	}
	run.Suite = filepath.Join(out, "suite.json")
	if err := reports.WriteSuite(run.Suite, suite); err != nil {
		return run, err
	}
	doc := nightlyDoc(run, cfg, dir, commit, began)
	if err := render.Write(out, "report", doc); err != nil {
		return run, err
	}
	run.Report = filepath.Join(out, "report.md")

	if o.Accept {
		fresh := NewBaselines(scs, sessions, commit, began)
		if len(fresh) == 0 {
			return run, errors.New("accept: no session completed: nothing to accept")
		}
		// Prune only when the whole library ran and every scenario has
		// a fresh baseline: a failed scenario keeps its old one.
		prune := whole && len(fresh) == len(scs)
		n, err := reports.WriteBaselines(dir, fresh, prune)
		if err != nil {
			return run, err
		}
		run.Accepted, run.AcceptedBytes = len(fresh), n
	}
	return run, nil
}
