package jobs

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports"
	"github.com/nuvirahub/latencylab/reports/render"
	"github.com/nuvirahub/latencylab/scenarios"
)

// CompareResultsOptions configure a comparison of runs already made: two
// sets of result files, e.g. lab vnc's runs of x11vnc and of Xvnc, or two
// folders of lab run -out. No session runs.
type CompareResultsOptions struct {
	// A and B are each a list of result files, folders (every .json file
	// in them) or glob patterns; B is judged against A.
	A, B []string
	// Out is the report's folder.
	Out string
	// Stats tunes the comparison.
	Stats reports.Options
}

// CompareResults judges side B's runs against side A's scenario by
// scenario (runs pair by the scenario's name; the seeds are what the
// files hold), with the nightly's rule, and writes the same report as
// Compare. A side is labelled by the encoder its runs share (lab vnc
// records the server and encoding there), else by its patterns.
func CompareResults(o CompareResultsOptions) (*CompareRun, error) {
	began := time.Now()
	ra, err := readSide("a", o.A)
	if err != nil {
		return nil, err
	}
	rb, err := readSide("b", o.B)
	if err != nil {
		return nil, err
	}
	la, lb := sideLabel(ra, o.A), sideLabel(rb, o.B)
	if la == lb {
		la, lb = "A: "+la, "B: "+lb
	}
	var names []string
	for _, r := range append(slices.Clone(ra), rb...) {
		if !slices.Contains(names, r.Scenario) {
			names = append(names, r.Scenario)
		}
	}
	// Judge takes scenarios for their names and fingerprints; the files
	// carry no scenario, so both sides fingerprint the same stand-in.
	var scs []*scenarios.Scenario
	for _, n := range names {
		scs = append(scs, &scenarios.Scenario{Name: n})
	}
	sessions := func(variant string, runs []*result.Run) []Session {
		var out []Session
		for _, r := range runs {
			out = append(out, Session{Variant: variant, Scenario: r.Scenario, File: r.File, Seed: r.Seed, Result: r})
		}
		return out
	}
	sa, sb := sessions(la, ra), sessions(lb, rb)
	base := map[string]*reports.Baseline{}
	for _, bl := range NewBaselines(scs, sa, "", began) {
		base[bl.Scenario] = bl
	}
	run := &CompareRun{A: jobspec.Config{Spec: la}, B: jobspec.Config{Spec: lb}, Sessions: len(sa) + len(sb)}
	run.Judgement = Judge(base, scs, sb, false, o.Stats)
	for _, sj := range run.Judgement.Scenarios {
		if len(sj.Evidence) == 0 {
			run.Judgement.NotApplicable = append(run.Judgement.NotApplicable,
				fmt.Sprintf("%s: runs in A only", sj.Scenario))
		}
	}
	var seeds []uint64
	for _, r := range append(slices.Clone(ra), rb...) {
		if !slices.Contains(seeds, r.Seed) {
			seeds = append(seeds, r.Seed)
		}
	}
	slices.Sort(seeds)
	if err := render.Write(o.Out, "report", compareDoc(run, sa, seeds, "", began)); err != nil {
		return run, err
	}
	run.Report = filepath.Join(o.Out, "report.md")
	return run, nil
}

// readSide reads one side's result files, in the order given (a folder's
// and a pattern's files sorted by name); a side without a file is an error.
func readSide(side string, specs []string) ([]*result.Run, error) {
	if len(specs) == 0 {
		return nil, fmt.Errorf("-%s-results: no result files given", side)
	}
	var files []string
	for _, spec := range specs {
		matches, err := filepath.Glob(spec)
		if err != nil {
			return nil, fmt.Errorf("-%s-results: %q: %w", side, spec, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("-%s-results: %q matches no file", side, spec)
		}
		for _, m := range matches {
			inside, err := filepath.Glob(filepath.Join(m, "*.json"))
			if err != nil {
				return nil, err
			}
			if len(inside) == 0 {
				inside = []string{m} // a file, or a folder without results (Read says so)
			}
			for _, f := range inside {
				if !slices.Contains(files, f) {
					files = append(files, f)
				}
			}
		}
	}
	var runs []*result.Run
	for _, f := range files {
		r, err := result.Read(f)
		if err != nil {
			return nil, fmt.Errorf("-%s-results: %w", side, err)
		}
		if r.Scenario == "" {
			return nil, fmt.Errorf("-%s-results: %s: no scenario name: not a run's result", side, f)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// sideLabel is the encoder every run of a side shares, else the side's
// patterns.
func sideLabel(runs []*result.Run, specs []string) string {
	enc := runs[0].Encoder
	for _, r := range runs[1:] {
		if r.Encoder != enc {
			enc = ""
			break
		}
	}
	if enc != "" {
		return enc
	}
	return strings.Join(specs, ",")
}

// ErrNoResults is returned when a results comparison is asked for without
// both sides.
var ErrNoResults = errors.New("compare results needs both -a-results and -b-results")
