package sweep

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab/sweep/grid"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The sweep job's flags besides the axes (one flag per axis, named by its
// key: -threshold 30ms,60ms).
const (
	FlagGrid      = "grid"
	FlagScenarios = "scenarios"
	FlagSeeds     = "seeds"
	FlagWarmup    = "warmup"
	FlagDuration  = "duration"
	FlagShard     = "shard"
	FlagOut       = "out"
	FlagParallel  = "parallel"
	FlagExact     = "exact"
)

// DefaultOut is where the job writes, relative to the module's root.
const DefaultOut = "out/sweep"

// RegisterFlags defines the sweep job's flags on fs. A flag fs already
// has is left as it is and shared: go test gives every job entry point of
// lab/jobs one flag set, so -out, -seeds, -scenarios and -parallel
// may already be another job's, and defining them twice would panic.
func RegisterFlags(fs *flag.FlagSet) {
	def := func(name, value, usage string) {
		if fs.Lookup(name) == nil {
			fs.String(name, value, usage)
		}
	}
	def(FlagGrid, "", "a grid file (YAML: the axes, scenarios, seeds, warmup, duration); the flags below replace what it says")
	for _, key := range grid.AxisKeys() {
		def(key, "", fmt.Sprintf("%s values to try, comma-separated (%s each)", key, grid.AxisWhat(key)))
	}
	def(FlagScenarios, "", "scenarios, comma-separated: library names or .yaml files relative to the module's root")
	def(FlagSeeds, "", "seeds, comma-separated; none keeps each scenario's own")
	def(FlagWarmup, scenarios.FormatDuration(grid.DefaultWarmup), "the start left out of the measurements")
	def(FlagDuration, "", "cut every scenario to this duration (quick sweeps)")
	def(FlagShard, "1/1", "the shard to run, i/n from 1/n to n/n: the points whose index is i-1 modulo n")
	def(FlagOut, DefaultOut, "the folder for the part file (and, for 1/1, the report)")
	def(FlagParallel, "0", "sessions at once; 0 is every core")
	def(FlagExact, "true", "run every session exact (WebAssembly, lab/exact): the same table from any run or sharding, about 10x slower; false runs them natively")
}

// Job is what the flags ask for.
type Job struct {
	Grid grid.Grid
	// GridFile is the grid file the job read, absolute; Args passes it on
	// for a grid of candidates, which no flag spells.
	GridFile string
	// Shard is the shard to run.
	Shard ShardID
	// Out is the output folder.
	Out string
	// Parallel bounds the sessions run at once (0: every core).
	Parallel int
	// Exact runs every session exact (RunOptions.Exact).
	Exact bool
}

// JobFromFlags reads the flags of fs, after it parsed them: the grid file
// if any, then each flag given on the command line over it. Relative
// paths (-grid, -out) are relative to root, the module's root, as are
// scenario files, which stay relative in the grid so that a sweep names
// the same files on every machine of a sharded run.
func JobFromFlags(fs *flag.FlagSet, root string) (Job, error) {
	get := func(name string) string {
		if f := fs.Lookup(name); f != nil {
			return f.Value.String()
		}
		return ""
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}

	var j Job
	var errs []error
	flagErr := func(name string, err error) {
		errs = append(errs, fmt.Errorf("-%s: %w", name, err))
	}
	j.Grid = grid.Grid{Warmup: grid.DefaultWarmup}
	if file := get(FlagGrid); file != "" {
		g, err := grid.Load(abs(file))
		if err != nil {
			return j, err
		}
		j.Grid = g
		j.GridFile = abs(file)
	}
	for _, key := range grid.AxisKeys() {
		if given[key] {
			if err := j.Grid.SetAxis(key, get(key)); err != nil {
				flagErr(key, err)
			}
		}
	}
	if given[FlagScenarios] {
		if err := j.Grid.SetScenarios(get(FlagScenarios)); err != nil {
			flagErr(FlagScenarios, err)
		}
	}
	if given[FlagSeeds] {
		if err := j.Grid.SetSeeds(get(FlagSeeds)); err != nil {
			flagErr(FlagSeeds, err)
		}
	}
	for _, f := range []struct {
		name string
		to   *time.Duration
	}{{FlagWarmup, &j.Grid.Warmup}, {FlagDuration, &j.Grid.Duration}} {
		if !given[f.name] || get(f.name) == "" {
			continue
		}
		d, err := scenarios.ParseDuration(get(f.name))
		if err != nil {
			flagErr(f.name, err)
			continue
		}
		*f.to = d
	}
	i, n, err := grid.ParseShard(get(FlagShard))
	if err != nil {
		flagErr(FlagShard, err)
	}
	j.Shard = ShardID{I: i, N: n}
	j.Out = abs(get(FlagOut))
	if j.Out == "" {
		j.Out = abs(DefaultOut)
	}
	if p := get(FlagParallel); p != "" {
		if j.Parallel, err = strconv.Atoi(p); err != nil || j.Parallel < 0 {
			flagErr(FlagParallel, fmt.Errorf("%s is not a count of sessions: expected 0 (every core) or more", p))
		}
	}
	j.Exact = true
	if e := get(FlagExact); e != "" {
		if j.Exact, err = strconv.ParseBool(e); err != nil {
			flagErr(FlagExact, fmt.Errorf("%s is not true or false", e))
		}
	}
	if len(errs) == 0 {
		if err := j.Grid.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(j.Grid.Scenarios) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no scenarios: give -scenarios or a grid file with scenarios"))
	}
	return j, errors.Join(errs...)
}

// Args writes the job back as flags, the way RegisterFlags reads them,
// for a command that starts the job in another directory (go test -C):
// Out becomes absolute, the grid is spelt out in full, so that no file
// but the scenarios' is read again.
func (j Job) Args() ([]string, error) {
	out, err := filepath.Abs(j.Out)
	if err != nil {
		return nil, err
	}
	g := &j.Grid
	var args []string
	if len(g.Candidates) > 0 {
		if j.GridFile == "" {
			return nil, errors.New("sweep: a grid of candidates is passed on as its file, and this job read none")
		}
		args = append(args, "-"+FlagGrid+"="+j.GridFile)
	}
	for _, key := range grid.AxisKeys() {
		if vals := g.Values(key); len(vals) > 0 {
			args = append(args, "-"+key+"="+strings.Join(vals, ","))
		}
	}
	var seeds []string
	for _, s := range g.Seeds {
		seeds = append(seeds, strconv.FormatUint(s, 10))
	}
	args = append(args,
		"-"+FlagScenarios+"="+strings.Join(g.Scenarios, ","),
		"-"+FlagSeeds+"="+strings.Join(seeds, ","),
		"-"+FlagWarmup+"="+scenarios.FormatDuration(g.Warmup),
	)
	if g.Duration > 0 {
		args = append(args, "-"+FlagDuration+"="+scenarios.FormatDuration(g.Duration))
	}
	return append(args,
		"-"+FlagShard+"="+j.Shard.String(),
		"-"+FlagOut+"="+out,
		"-"+FlagParallel+"="+strconv.Itoa(j.Parallel),
		"-"+FlagExact+"="+strconv.FormatBool(j.Exact),
	), nil
}
