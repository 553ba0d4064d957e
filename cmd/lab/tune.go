package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
	"github.com/nuvirahub/latencylab/lab/tune"
	"github.com/nuvirahub/latencylab/scenarios"
)

// exitTuneDone is lab tune -status's exit status once the tune is done,
// so that a script loops while it is 0.
const exitTuneDone = 3

// errTuneDone makes main exit with exitTuneDone.
var errTuneDone = errors.New("tune: done")

// tuneCmd searches the ABR's parameters (lab/tune). Without -ask, -tell
// or -status it runs the whole tune here, each step's sessions under go
// test (lab/jobs/tune_job_test.go), like lab sweep; the three split it
// for a cluster, where each step's grid runs as lab sweep shards.
func tuneCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "out/tune", "the tune's folder: its settings, steps, parts and report")
	ask := fs.Bool("ask", false, "start a tune in -state and write its first step's grid (pending/grid.yaml), then stop: run it with lab sweep shards")
	tell := fs.Bool("tell", false, "merge the pending step's parts (pending/parts), write the next step's grid, or the report when done")
	status := fs.Bool("status", false, "print where the tune in -state stands; exit 0 while a step is pending, 3 when done")
	params := fs.String("params", strings.Join(tune.DefaultParams, ","), "the ABR's parameters to search, comma-separated (add min,max to search the bitrate's bounds)")
	scs := fs.String("scenarios", "", "training scenarios, comma-separated: library names, .yaml files or folders of them (relative to the module's root), or group:NAME; empty is the default set: the abr, rmcat and cellular groups without old behaviours")
	heldOut := fs.String("held-out", "", "scenarios kept out of the search and run only in the validation, as -scenarios")
	seeds := fs.String("seeds", "1,2,3", "training seeds, comma-separated")
	valSeeds := fs.String("validation-seeds", "4,5,6", "held-out seeds, comma-separated: the validation runs every scenario under them")
	wBitrate := fs.Float64("weight-bitrate", tune.DefaultWeights.Bitrate, "the objective's ms of p95 per percent of bitrate below the write-up's values")
	wFreeze := fs.Float64("weight-freeze", tune.DefaultWeights.Freeze, "the objective's ms of p95 per freeze per minute")
	pop := fs.Int("population", 0, "candidates per generation; 0 is CMA-ES's default, 4 + 3 ln(parameters)")
	gens := fs.Int("generations", 8, "generations the search runs at most")
	step := fs.Float64("step", 0.3, "the search's initial step, a share of each parameter's range (on its scale)")
	seed := fs.Uint64("seed", 1, "the optimiser's seed")
	screen := fs.Int("screen", 1, "race the candidates: score each on the first N training seeds only, and confirm on the rest a generation's best there when it beats the best confirmed; 0 (or as many as -seeds) scores every candidate on every training seed")
	warmup := fs.String("warmup", scenarios.FormatDuration(grid.DefaultWarmup), "the start of each session left out of the measurements")
	duration := fs.String("duration", "", "cut every scenario to this duration (quick tunes); a scenario whose timeline changes after the cut is refused")
	gridParts := fs.String("grid-parts", "", "the part files of a sweep to measure the tune against (a glob, quoted, or comma-separated): its best point under this objective is validated beside the winner")
	exactFlag := fs.Bool("exact", true, "run every session exact (lab/exact): a candidate's score is a function of the candidate; false runs them natively, about 10x faster")
	parallel := fs.Int("parallel", 0, "sessions at once when the tune runs here; 0 is every core")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: lab tune [flags]
       lab tune -ask [flags]   then per step: lab sweep shards of pending/grid.yaml, lab tune -tell
       lab tune -status -state DIR

Searches the ABR's parameters with CMA-ES for the setting that scores best
on a set of scenarios (docs/abr.md, "Tune the ABR"): generations of
candidates, each run on the training scenarios under the first training
seed (-screen) and the promising ones confirmed under the rest, then the
winner, the write-up's values and a sweep grid's best point validated on
held-out seeds (and scenarios). The report (-state/report) gives the recommendation
as a scenario snippet, the training and held-out scores, the convergence
against the grid and the latency/bitrate front.

Without -ask, -tell or -status, the whole tune runs here, each step's
sessions in the jobs' worker processes like lab sweep's, and an interrupted tune resumes.
For a cluster (docs/cluster.md): -ask writes the first step; lab sweep
-grid STATE/pending/grid.yaml -shard i/n -out STATE/pending/parts runs it
in shards; -tell merges them and writes the next step, until -status says
done. Paths are relative to the working directory, scenario files to the
module's root.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("tune: unexpected argument %q", fs.Arg(0))
	}
	modes := 0
	for _, m := range []bool{*ask, *tell, *status} {
		if m {
			modes++
		}
	}
	if modes > 1 {
		return errors.New("tune: -ask, -tell and -status are steps of their own: give one")
	}
	dir, err := filepath.Abs(*state)
	if err != nil {
		return err
	}
	switch {
	case *status:
		st, err := tune.ReadStatus(dir)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, st)
		if st.Pending == "" {
			return errTuneDone
		}
		return nil
	case *tell:
		st, err := tune.Tell(dir)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, st.Note)
		fmt.Fprintln(stdout, st)
		return nil
	}
	// -ask, or a whole run: a run resumes a tune already started.
	if _, err := os.Stat(filepath.Join(dir, tune.SettingsFile)); err != nil || *ask {
		s, err := tuneSettings(*params, *scs, *heldOut, *seeds, *valSeeds, *warmup, *duration, *gridParts)
		if err != nil {
			return err
		}
		s.Weights = tune.Weights{Bitrate: *wBitrate, Freeze: *wFreeze}
		s.Population, s.Generations, s.Step, s.Seed, s.Screen, s.Exact = *pop, *gens, *step, *seed, *screen, *exactFlag
		if s.Grid != nil {
			// The grid's best under this tune's weights.
			if s.Grid, err = tune.GridBestOf(s.Grid.Parts, s.Weights); err != nil {
				return fmt.Errorf("tune: -grid-parts: %w", err)
			}
		}
		if err := tune.Ask(dir, s); err != nil {
			return fmt.Errorf("tune: %w", err)
		}
		st, err := tune.ReadStatus(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tune started in %s: %s\n", dir, st)
		if s.Grid != nil {
			fmt.Fprintf(stdout, "the grid's best point: %s, score %.1f over its %d sessions\n", s.Grid.Point.ID, s.Grid.Figures.Score, s.Grid.Sessions)
		}
		if *ask {
			return nil
		}
	} else {
		fmt.Fprintf(stdout, "tune in %s goes on where it stopped (its settings are %s; the flags are not read again)\n", dir, filepath.Join(dir, tune.SettingsFile))
	}
	root, err := workRoot()
	if err != nil {
		return err
	}
	return goTest("tune", jobRun{root: root, test: "TestTune",
		args: []string{"-tune-state=" + dir, "-parallel=" + strconv.Itoa(*parallel)}}, stdout, stderr)
}

// tuneSettings reads the flags that say what the tune runs on.
func tuneSettings(params, scs, heldOut, seeds, valSeeds, warmup, duration, gridParts string) (tune.Settings, error) {
	var s tune.Settings
	var errs []error
	keys := splitList(params)
	ps, err := tune.ParamsByKey(keys)
	if err != nil {
		errs = append(errs, fmt.Errorf("-params: %w", err))
	}
	s.Params = ps
	if s.Scenarios, err = tuneScenarios(scs); err != nil {
		errs = append(errs, fmt.Errorf("-scenarios: %w", err))
	} else if len(s.Scenarios) == 0 {
		if s.Scenarios, err = tune.DefaultScenarios(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.HeldOut, err = tuneScenarios(heldOut); err != nil {
		errs = append(errs, fmt.Errorf("-held-out: %w", err))
	}
	for _, f := range []struct {
		name, list string
		to         *[]uint64
	}{{"seeds", seeds, &s.Seeds}, {"validation-seeds", valSeeds, &s.ValidationSeeds}} {
		var g grid.Grid
		if err := g.SetSeeds(f.list); err != nil {
			errs = append(errs, fmt.Errorf("-%s: %w", f.name, err))
		}
		*f.to = g.Seeds
	}
	if s.Warmup, err = scenarios.ParseDuration(warmup); err != nil {
		errs = append(errs, fmt.Errorf("-warmup: %w", err))
	}
	if duration != "" {
		if s.Duration, err = scenarios.ParseDuration(duration); err != nil {
			errs = append(errs, fmt.Errorf("-duration: %w", err))
		}
	}
	if gridParts != "" {
		files, err := partFiles(gridParts)
		if err != nil {
			errs = append(errs, fmt.Errorf("-grid-parts: %w", err))
		}
		s.Grid = &tune.GridBest{Parts: files}
	}
	// The training and held-out scenarios must load and take the ABR
	// before a session runs.
	if len(errs) == 0 {
		root, err := workRoot()
		if err != nil {
			return s, err
		}
		g := grid.Grid{Scenarios: append(slices.Clone(s.Scenarios), s.HeldOut...), Warmup: s.Warmup, Duration: s.Duration}
		loaded, err := sweep.LoadScenarios(g, root)
		if err != nil {
			errs = append(errs, err)
		}
		for _, sc := range loaded {
			if err := tune.WriteUp(s.Params).Apply(sc); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return s, errors.Join(errs...)
}

// tuneScenarios reads a comma-separated list of scenario names, files,
// folders (every .yaml file in it; relative to the module's root, as the
// sweep reads files, so that every machine of a cluster names the same)
// and group:NAME (every library scenario of the group).
func tuneScenarios(list string) ([]string, error) {
	var out []string
	for _, item := range splitList(list) {
		group, ok := strings.CutPrefix(item, "group:")
		if !ok {
			files, err := scenarioFolder(item)
			if err != nil {
				return nil, err
			}
			if files == nil {
				files = []string{item}
			}
			out = append(out, files...)
			continue
		}
		if !slices.Contains(scenarios.Groups, group) {
			return nil, fmt.Errorf("group %q: expected one of %s", group, strings.Join(scenarios.Groups, ", "))
		}
		lib, err := scenarios.Library()
		if err != nil {
			return nil, err
		}
		for _, sc := range lib {
			if slices.Contains(sc.Groups, group) && !slices.Contains(out, sc.Name) {
				out = append(out, sc.Name)
			}
		}
	}
	return out, nil
}

// scenarioFolder lists the scenario files of a folder, as the module's
// root sees them; nil when item is not a folder.
func scenarioFolder(item string) ([]string, error) {
	if sweep.IsFile(item) {
		return nil, nil
	}
	dir := item
	if !filepath.IsAbs(dir) {
		root, err := workRoot()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(root, item)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && sweep.IsFile(e.Name()) {
			out = append(out, filepath.Join(item, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("folder %s holds no scenario file (.yaml or .yml)", item)
	}
	return out, nil
}

// partFiles expands a comma-separated list of part files and globs.
func partFiles(list string) ([]string, error) {
	var out []string
	for _, item := range splitList(list) {
		matches, err := filepath.Glob(item)
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s: no such file", item)
		}
		out = append(out, matches...)
	}
	return out, nil
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
