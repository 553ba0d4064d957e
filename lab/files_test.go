package lab_test

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/filetest"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Your own scenario files from go test:
// go test ./lab -run Files -args -scenarios DIR.
var (
	filesPaths    = flag.String("scenarios", "", "TestFiles: your own scenario files or folders of them, comma-separated, relative to the module's root (docs/own-scenarios.md)")
	filesDefaults = flag.String("defaults", "", "TestFiles: the defaults file of every scenario (default: each folder's defaults.yaml, else the library's)")
	filesSeeds    = flag.String("seeds", "", "TestFiles: run every scenario at each of these seeds, comma-separated (default: each scenario's own)")
)

// TestFiles runs your own scenario files, as lab test does, each a subtest
// in its own synctest bubble (a seed a subtest of it with -seeds), in
// parallel, natively in this process. It loads and judges them as lab test
// does (package filetest): an expectation not met fails the subtest with
// its file and line, measure, window, bound and value. Relative paths are
// the module root's, where the command is typed. Without -scenarios it is
// skipped: it runs only the files it is given.
func TestFiles(t *testing.T) {
	if *filesPaths == "" {
		t.Skip("no -scenarios: go test ./lab -run Files -args -scenarios DIR runs your own scenario files (docs/own-scenarios.md)")
	}
	// Paths are the module root's, as the user types them there (go
	// test runs in lab/), as the jobs' are.
	root, err := jobs.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	var paths []string
	for _, p := range strings.Split(*filesPaths, ",") {
		if p = strings.TrimSpace(p); p != "" {
			paths = append(paths, p)
		}
	}
	var seeds []uint64
	if *filesSeeds != "" {
		var err error
		if seeds, err = jobspec.ParseSeeds(*filesSeeds); err != nil {
			t.Fatalf("-seeds: %v", err)
		}
	}
	scs, err := filetest.Load(paths, *filesDefaults)
	if err != nil {
		t.Fatalf("the scenario files do not load: nothing ran\n%v", err)
	}
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			if len(seeds) == 0 {
				runFile(t, sc, sc.Seed)
				return
			}
			for _, seed := range seeds {
				t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
					t.Parallel()
					runFile(t, sc, seed)
				})
			}
		})
	}
}

// runFile runs one scenario file at a seed in a bubble and judges it.
func runFile(t *testing.T, base *scenarios.Scenario, seed uint64) {
	sc := *base
	sc.Seed = seed
	o := filetest.Outcome{Scenario: sc.Name, File: sc.File, Seed: seed}
	began := time.Now()
	synctest.Test(t, func(t *testing.T) {
		res, err := lab.Run(t.Context(), &sc)
		o.Result = res
		if err != nil {
			o.Err, o.Skipped = err.Error(), errors.Is(err, lab.ErrSharedAbsent)
		}
	})
	o.Wall = time.Since(began)
	v := filetest.Judge(o)
	switch v.Status {
	case filetest.Skipped:
		t.Skip(v.Why)
	case filetest.Error:
		t.Fatalf("%s (%s, seed %d): %s", sc.Name, sc.File, seed, v.Why)
	}
	for _, m := range v.Failed() {
		t.Errorf("expectation not met: %s", m)
	}
	t.Logf("%s seed %d: %s", sc.Name, seed, filetest.Headline(o.Result))
}
