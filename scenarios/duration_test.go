package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A scenario run for less than its duration keeps its expectations'
// windows, an open end closed at its own end, so that the lab can tell
// which windows the run covers; the library's scenario is left as it was.
func TestWithDurationKeepsTheWindows(t *testing.T) {
	lib, err := Library()
	require.NoError(t, err)
	sc := find(lib, "lan-animation")
	require.NotNil(t, sc)
	require.Equal(t, 20*time.Second, sc.Duration)
	require.Equal(t, time.Second, sc.Expect[0].From)
	require.Zero(t, sc.Expect[0].To, "the window is open to the end")
	before := *sc
	before.Expect = append([]Expectation(nil), sc.Expect...)

	short, err := sc.WithDuration(2 * time.Second)
	require.NoError(t, err, "a window after the run's end is no mistake: it is not judged")
	require.Equal(t, 2*time.Second, short.Duration)
	require.Equal(t, 20*time.Second, short.Expect[0].To, "an open end is the scenario's own end")
	require.Equal(t, &before, sc, "the library's scenario is unchanged")

	// A window with its own end keeps it; one measured at an instant
	// has no window to close.
	own := &Scenario{Name: "own", Description: "windows of its own", Duration: 40 * time.Second, Expect: []Expectation{
		{Measure: "latency.median", From: 20 * time.Second, To: 30 * time.Second, Max: ptr(0.1)},
		{Measure: "bitrate.target", At: 30 * time.Second, Max: ptr(4e6)},
	}}
	shortOwn, err := own.WithDuration(2 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, shortOwn.Expect[0].To)
	require.Zero(t, shortOwn.Expect[1].To)

	// The rest of the scenario is still checked against the new
	// duration: a phase after the end is refused as Validate refuses it.
	_, err = find(lib, "lan-outage").WithDuration(5 * time.Second)
	require.Error(t, err)
}

func find(lib []*Scenario, name string) *Scenario {
	for _, sc := range lib {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}
