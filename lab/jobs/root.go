package jobs

import (
	"path/filepath"

	"github.com/nuvirahub/latencylab/internal/modroot"
)

// ModuleRoot is the lab's module root above the working directory: a job
// runs in lab/jobs (go test's directory), and its relative paths
// (testdata/baselines, out/nightly) are the module root's, as a user
// writes them.
func ModuleRoot() (string, error) { return modroot.Find() }

// defaultRootAndSeeds fills in the options every job shares: the module
// root when none is given, and DefaultSeeds when no seed is.
func defaultRootAndSeeds(root *string, seeds *[]uint64) error {
	if *root == "" {
		r, err := ModuleRoot()
		if err != nil {
			return err
		}
		*root = r
	}
	if len(*seeds) == 0 {
		*seeds = DefaultSeeds
	}
	return nil
}

// under resolves a path given relative to the module root.
func under(root, p, def string) string {
	if p == "" {
		p = def
	}
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}
