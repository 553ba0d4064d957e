package vnc

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

// -screen scenario draws the scenario's own screen section: still-refine's
// still desktop, then its photo at 1 s, then nothing more; no X display is
// needed to see which versions the driver would draw.
func TestScenarioScreen(t *testing.T) {
	lib, err := scenarios.Library()
	require.NoError(t, err)
	i := slices.IndexFunc(lib, func(sc *scenarios.Scenario) bool { return sc.Name == "still-refine" })
	require.NotEqual(t, -1, i)
	sc := lib[i]
	c := Config{Scenario: sc, Screen: ScenarioScreen, Duration: 6 * time.Second, Width: DefaultWidth, Height: DefaultHeight, Seed: sc.Seed}
	f, err := c.frames()
	require.NoError(t, err)
	changes := f.Changes(6 * time.Second)
	require.Equal(t, []time.Duration{0, time.Second}, changes, "the desktop at 0, the photo at 1 s")
	_, more := f.Next(time.Second)
	require.False(t, more, "the screen stays still after the photo")

	c.Screen = "nosuch"
	_, err = c.frames()
	require.ErrorContains(t, err, `unknown screen "nosuch"`)
}
