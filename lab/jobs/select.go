package jobs

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Select picks scenarios of the library: those named (in the given
// order), else those of group, else all of them.
func Select(group string, names []string) ([]*scenarios.Scenario, error) {
	lib, err := scenarios.Library()
	if err != nil {
		return nil, fmt.Errorf("the scenario library does not load: %w", err)
	}
	var all []string
	for _, sc := range lib {
		all = append(all, sc.Name)
	}
	var out []*scenarios.Scenario
	switch {
	case len(names) > 0 && group != "":
		return nil, errors.New("both a group and scenarios: give one or the other")
	case len(names) > 0:
		for _, n := range names {
			i := slices.Index(all, n)
			if i < 0 {
				return nil, fmt.Errorf("no scenario %q in the library%s", n, suggest(n, all))
			}
			out = append(out, lib[i])
		}
	case group != "":
		if !slices.Contains(scenarios.Groups, group) {
			return nil, fmt.Errorf("no group %q%s: groups are %s", group, suggest(group, scenarios.Groups), strings.Join(scenarios.Groups, ", "))
		}
		for _, sc := range lib {
			if slices.Contains(sc.Groups, group) {
				out = append(out, sc)
			}
		}
	default:
		out = lib
	}
	return out, nil
}

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
