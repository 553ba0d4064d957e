package measure

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

// TestComputationsAreTheCatalogue: every measurement of the catalogue has
// exactly one computation in the table and the table nothing else, so the
// two cannot drift (the table's keys are unique: the compiler refuses a
// repeated key in a map literal).
func TestComputationsAreTheCatalogue(t *testing.T) {
	var catalogued []string
	for _, m := range scenarios.Measurements {
		require.NotContains(t, catalogued, m.Name, "%s twice in the catalogue", m.Name)
		catalogued = append(catalogued, m.Name)
	}
	var missing, extra []string
	for _, name := range catalogued {
		if _, ok := computations[name]; !ok {
			missing = append(missing, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(computations)) {
		if !slices.Contains(catalogued, name) {
			extra = append(extra, name)
		}
	}
	assert.Empty(t, missing, "in the catalogue (scenarios.Measurements) without a computation in the table (computations)")
	assert.Empty(t, extra, "computed in the table (computations), but not in the catalogue (scenarios.Measurements)")
	for name, c := range computations {
		require.True(t, (c.session == nil) != (c.windowed == nil), "%s: one way to take it, of the session or over a window", name)
		// A measurement at an instant has no window: the catalogue's
		// keys say so (at), and the table must agree.
		atInstant := slices.Contains(scenarios.MeasurementKeys(name), "at")
		require.False(t, atInstant && c.session == nil, "%s reads at: it ignores the window", name)
	}
}
