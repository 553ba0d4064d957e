package jobs

import (
	"errors"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/scenarios"
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

// selectScenarios is a job's scenarios: the files given, else the
// library's (a group, named ones, or all). Files are chosen by naming
// them, so -group and -scenario are refused beside them.
func selectScenarios(files []*scenarios.Scenario, group string, names []string) ([]*scenarios.Scenario, error) {
	if files == nil {
		return jobspec.Select(group, names)
	}
	if group != "" || len(names) > 0 {
		return nil, errors.New("-group and -scenario pick from the library: with scenario files, name the files or folders to run instead")
	}
	if len(files) == 0 {
		return nil, errors.New("no scenario in the files given")
	}
	return files, nil
}
