package lab_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/labtest"
)

// Your own scenario files from go test:
// go test ./lab -run Files -args -scenarios DIR.
var (
	filesPaths    = flag.String("scenarios", "", "TestFiles: your own scenario files or folders of them, comma-separated, relative to the module's root (docs/own-scenarios.md)")
	filesDefaults = flag.String("defaults", "", "TestFiles: the defaults file of every scenario (default: each folder's defaults.yaml, else the library's)")
	filesSeeds    = flag.String("seeds", "", "TestFiles: run every scenario at each of these seeds, comma-separated (default: each scenario's own)")
)

// TestFiles runs your own scenario files, as lab test does, each a subtest
// (a seed a subtest of it with -seeds), one after another, natively in
// this process, through package labtest (what a team's own module's go
// test calls): each in its own synctest bubble with crypto/rand seeded by
// its seed, loaded and judged as lab test does (package filetest): an
// expectation not met fails the subtest with its file and line, measure,
// window, bound and value. Relative paths are the module root's, where
// the command is typed. Without -scenarios it is skipped: it runs only the
// files it is given.
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
	o := labtest.Options{Defaults: *filesDefaults}
	if *filesSeeds != "" {
		if o.Seeds, err = jobspec.ParseSeeds(*filesSeeds); err != nil {
			t.Fatalf("-seeds: %v", err)
		}
	}
	labtest.Run(t, o, paths...)
}
