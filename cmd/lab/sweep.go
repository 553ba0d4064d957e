package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nuvirahub/latencylab/lab/sweep"
)

// modulePath is the lab's module: lab sweep looks for its root to build
// the sweep job from source.
const modulePath = "github.com/nuvirahub/latencylab"

// sweepCmd runs an ABR sweep, or a shard of one. The sessions need
// testing/synctest bubbles, which only a test can make, so it starts the
// job entry point with go test (lab/jobs/sweep_job_test.go) and
// streams its progress and output. The flags are checked here first, so
// a typo fails at once rather than after a build.
func sweepCmd(args []string, stdout, stderr io.Writer) error {
	job, err := sweepCommand(args, stderr)
	if err != nil {
		return err
	}
	return goTest("sweep", job, stdout, stderr)
}

// sweepCommand checks the sweep's flags and returns its job. The
// -grid and -out paths are relative to the working directory, as a user
// expects; scenario files (in -scenarios or a grid file) are relative to
// the module's root, so that every machine of a sharded sweep names the
// same file.
func sweepCommand(args []string, stderr io.Writer) (jobRun, error) {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sweep.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: lab sweep [flags]

An ABR parameter sweep: every combination of the listed values of the ABR's
parameters (a point), on every scenario and seed, in virtual time on every
core. The flags replace what a -grid file says. -shard i/n runs the points
whose index is i-1 modulo n and writes its part file; merge the parts with
lab sweep-merge. A 1/1 run writes the report itself. -grid and -out are
relative to the working directory, scenario files to the module's root.

Sessions run exact by default: each in a fresh WebAssembly instance with
deterministic clocks (lab/exact), so that the table is the same from
any run, machine or sharding of the grid (the first run builds the guest,
about a minute). -exact=false runs them natively, about 10 times faster,
where a few sessions in a hundred differ from run to run.

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return jobRun{}, err
	}
	if fs.NArg() > 0 {
		return jobRun{}, fmt.Errorf("sweep: unexpected argument %q", fs.Arg(0))
	}
	root, err := workRoot()
	if err != nil {
		return jobRun{}, err
	}
	for _, name := range []string{sweep.FlagGrid, sweep.FlagOut} {
		if f := fs.Lookup(name); f.Value.String() != "" {
			p, err := filepath.Abs(f.Value.String())
			if err != nil {
				return jobRun{}, err
			}
			_ = f.Value.Set(p) // a string flag takes any string
		}
	}
	job, err := sweep.JobFromFlags(fs, root)
	if err != nil {
		return jobRun{}, fmt.Errorf("sweep: %w", err)
	}
	jobArgs, err := job.Args()
	if err != nil {
		return jobRun{}, err
	}
	return jobRun{root: root, test: "TestSweep", args: jobArgs}, nil
}

// errNotInModule says the working directory is not inside the lab's
// checkout.
var errNotInModule = errors.New("not inside the latencylab module's checkout")

// moduleRoot finds the lab's module root above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module "+modulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNotInModule
		}
		dir = parent
	}
}

// sweepMerge merges a sharded sweep's part files into its table, Pareto
// plots and report. It runs no session.
func sweepMerge(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sweep-merge", flag.ContinueOnError)
	fs.SetOutput(out)
	dir := fs.String("out", sweep.DefaultOut, "the folder for the report and table")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: lab sweep-merge [-out DIR] part.json ...\n\nMerges the part files of every shard of one sweep (lab sweep -shard i/n)\ninto its table, Pareto plots and report; refuses parts of different grids,\nmissing points and points given twice.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("sweep-merge: no part files: expected the sweep-part-IofN.json of every shard")
	}
	var parts []*sweep.Part
	for _, file := range fs.Args() {
		p, err := sweep.ReadPart(file)
		if err != nil {
			return fmt.Errorf("sweep-merge: %w", err)
		}
		parts = append(parts, p)
	}
	table, err := sweep.Merge(parts)
	if err != nil {
		return fmt.Errorf("sweep-merge: %w", err)
	}
	if err := sweep.WriteReport(*dir, table); err != nil {
		return fmt.Errorf("sweep-merge: %w", err)
	}
	fmt.Fprintf(out, "merged %d part(s): %d points, %d sessions, %.0f scenario seconds in %.1f wall seconds of machine time (%.0f per wall second), %.1f s elapsed if the parts ran at once\n",
		len(parts), len(table.Rows), table.Sessions(), table.Virtual().Seconds(), table.Wall().Seconds(), table.Speed(), table.Elapsed().Seconds())
	base := filepath.Join(*dir, sweep.ReportBase)
	fmt.Fprintf(out, "report: %s.md, %s.html; table: %s\n", base, base, filepath.Join(*dir, sweep.TableFile))
	return nil
}
