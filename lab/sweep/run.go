package sweep

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Measures are the catalogue measurements taken of every session, over
// [Warmup, end): the latency's median and 95th percentile, the mean
// encoded bitrate, the quality of the last image displayed, and the
// freezes.
var Measures = []string{"latency.median", "latency.p95", "bitrate.mean", "quality.final", "freezes"}

// IsFile tells whether a grid's scenario names a file rather than a
// scenario of the library: it ends in .yaml or .yml.
func IsFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

// LoadScenarios finds the grid's scenarios, in its order: library names
// in the embedded library, files relative to root (the module's root, so
// that a grid names the same file on every machine), and cuts them to
// the grid's duration. The copies are validated here so that a bad cut
// stops the job before any session runs.
func LoadScenarios(g grid.Grid, root string) ([]*scenarios.Scenario, error) {
	lib, err := scenarios.Library()
	if err != nil {
		return nil, err
	}
	var out []*scenarios.Scenario
	var errs []error
	for _, name := range g.Scenarios {
		var sc *scenarios.Scenario
		if IsFile(name) {
			file := name
			if !filepath.IsAbs(file) {
				file = filepath.Join(root, file)
			}
			if sc, err = scenarios.LoadFile(file); err != nil {
				errs = append(errs, err)
				continue
			}
		} else {
			for _, s := range lib {
				if s.Name == name {
					sc = s
				}
			}
			if sc == nil {
				errs = append(errs, fmt.Errorf("scenario %s is not in the library (scenarios/library): name a library scenario or a .yaml file", name))
				continue
			}
		}
		c := *sc
		if g.Duration > 0 {
			c.Duration = g.Duration
			c.Expect = nil // their windows belong to the full length
			if err := c.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("scenario %s cut to %s: %w", name, scenarios.FormatDuration(g.Duration), err))
				continue
			}
		}
		if g.Warmup >= c.Duration {
			errs = append(errs, fmt.Errorf("scenario %s lasts %s, no longer than the warm-up %s: nothing would be measured",
				name, scenarios.FormatDuration(c.Duration), scenarios.FormatDuration(g.Warmup)))
			continue
		}
		out = append(out, &c)
	}
	return out, errors.Join(errs...)
}

// RunOptions are how RunShard runs its sessions. The zero value runs on
// every core, silently, with library scenarios only.
type RunOptions struct {
	// Parallel bounds the sessions run at once; 0 is GOMAXPROCS.
	Parallel int
	// Progress gets jobs.Run's line per finished session.
	Progress io.Writer
	// Root is what scenario files of the grid are relative to: the
	// module's root.
	Root string
	// Exact, when set, runs every session exact (jobs.Plan.Exact), so
	// that a point's figures are the same in any run, shard or machine.
	Exact *exact.Runner
}

// RunShard runs shard i of n of the grid: every point of the shard on
// every scenario and seed, each session in its own bubble (jobs.Run, on
// t), and returns the part. A session that fails is recorded in the part
// with its error rather than stopping the others; Merge and the table
// show it.
func RunShard(t *testing.T, g grid.Grid, i, n int, o RunOptions) (*Part, error) {
	t.Helper()
	if err := g.Validate(); err != nil {
		return nil, err
	}
	points, err := grid.Shard(g.Points(), i, n)
	if err != nil {
		return nil, err
	}
	scs, err := LoadScenarios(g, o.Root)
	if err != nil {
		return nil, err
	}
	variants := make([]jobs.Variant, len(points))
	for k, p := range points {
		variants[k] = Variant(p)
	}
	workers := o.Parallel
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	part := &Part{Schema: PartSchema, Grid: g, Shard: ShardID{I: i, N: n}, Parallel: workers, Exact: o.Exact != nil, Points: []PointResult{}}
	if o.Exact != nil {
		part.Guest = o.Exact.Guest()
	}
	if len(points) == 0 {
		return part, nil // more shards than points: an empty, valid part
	}
	// jobs.Run prints the estimate of every point's sessions first.
	began := time.Now()
	sessions := jobs.Run(t, jobs.Plan{Scenarios: scs, Variants: variants, Seeds: g.Seeds, Parallel: workers, Progress: o.Progress, Exact: o.Exact})
	part.Wall = time.Since(began)
	// jobs.Run returns the sessions variant by variant, then scenario,
	// then seed: a point's sessions are consecutive.
	per := len(sessions) / len(points)
	for k, p := range points {
		pr := PointResult{Point: p}
		for _, s := range sessions[k*per : (k+1)*per] {
			if s.Variant != p.ID {
				return nil, fmt.Errorf("sweep: session of %s found among those of %s", s.Variant, p.ID)
			}
			run := measureSession(s, g.Warmup)
			part.Virtual += run.Ran
			pr.Runs = append(pr.Runs, run)
		}
		part.Points = append(part.Points, pr)
	}
	return part, nil
}

// measureSession takes Measures of one session over [warmup, end).
func measureSession(s jobs.Session, warmup time.Duration) RunResult {
	run := RunResult{Scenario: s.Scenario, Seed: s.Seed, Wall: s.Wall, Measures: map[string]float64{}}
	if s.Result != nil {
		run.Ran = s.Result.Ran
	}
	if s.Err != nil {
		// An interrupted session has a result, but of a shorter session
		// than the others: its figures would not compare.
		run.Error = s.Err.Error()
		return run
	}
	for _, name := range Measures {
		v, err := measure.Of(s.Result, name, warmup, 0)
		if err != nil {
			if run.Missing == nil {
				run.Missing = map[string]string{}
			}
			run.Missing[name] = strings.TrimPrefix(err.Error(), "lab: ")
			continue
		}
		run.Measures[name] = v
	}
	return run
}

// Variant is the point as a jobs.Variant, labelled by its ID.
func Variant(p grid.Point) jobs.Variant {
	return jobs.Variant{Label: p.ID, Apply: p.Apply}
}
