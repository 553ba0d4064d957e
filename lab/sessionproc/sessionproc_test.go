package sessionproc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

// A scenario crosses to another process as data and comes back equal,
// its expectations' lines those of its file (the YAML written anew has
// other lines), so that a failed check there names the line the user
// wrote.
func TestItemKeepsTheScenario(t *testing.T) {
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, sc := range lib {
		item, err := NewItem(sc)
		require.NoError(t, err)
		back, err := item.Scenario()
		require.NoError(t, err, sc.Name)
		require.Equal(t, sc, back, sc.Name)
	}
}

func TestItemRefusesABrokenScenario(t *testing.T) {
	_, err := Item{Name: "x", File: "x.yaml", YAML: "name: x\nduration: soon\n"}.Scenario()
	require.ErrorContains(t, err, "scenario x does not survive the trip to the worker")
}
