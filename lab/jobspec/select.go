package jobspec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

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
