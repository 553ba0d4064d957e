package result

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/scenarios"
)

func bound(v float64) *float64 { return &v }

// TestCheckSaysWhatKindOfBoundFailed reads each kind of verdict as a
// report prints it: a band's failure says the session changed and how to
// accept the change, whichever way it moved; a requirement's says which
// bound it missed and what requires it; a check the run did not cover is
// not judged, with no value and no pass or fail.
func TestCheckSaysWhatKindOfBoundFailed(t *testing.T) {
	band := Check{Measure: "estimate.error.max", Unit: scenarios.UnitDuration, From: time.Second, To: 20 * time.Second,
		Min: bound(86e-6), Max: bound(170e-6), Band: true}
	required := Check{Measure: "latency.median", Unit: scenarios.UnitDuration, To: 20 * time.Second,
		Min: bound(0.015), Max: bound(0.017), Required: "N4: conversion on the processor"}
	for _, tc := range []struct {
		name  string
		check Check
		value float64
		want  string
	}{
		{"band below", band, 65.4e-6,
			"estimate.error.max [1s, 20s) = 0.0654 ms, want >= 0.086 ms and <= 0.17 ms: FAIL: changed: below the band measured for this scenario; " +
				"if the change is intended, measure the band again (make bounds, for the library's scenarios) and move min and max to it"},
		{"band above", band, 250e-6,
			"estimate.error.max [1s, 20s) = 0.25 ms, want >= 0.086 ms and <= 0.17 ms: FAIL: changed: above the band measured for this scenario; " +
				"if the change is intended, measure the band again (make bounds, for the library's scenarios) and move min and max to it"},
		{"band within", band, 120e-6, "estimate.error.max [1s, 20s) = 0.12 ms, want >= 0.086 ms and <= 0.17 ms: pass"},
		{"requirement below", required, 0.0133,
			"latency.median [0s, 20s) = 13.3 ms, want >= 15 ms and <= 17 ms: FAIL: below the required minimum; required by N4: conversion on the processor"},
		{"requirement above", required, 0.019,
			"latency.median [0s, 20s) = 19 ms, want >= 15 ms and <= 17 ms: FAIL: above the required maximum; required by N4: conversion on the processor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.check
			c.Value = tc.value
			c.Within = (c.Min == nil || c.Value >= *c.Min) && (c.Max == nil || c.Value <= *c.Max)
			c.Pass = c.Within
			require.Equal(t, tc.want, c.String())
		})
	}

	// A requirement with nothing said about where it comes from still
	// says which bound it missed.
	plain := Check{Measure: "fps", Unit: scenarios.UnitRatio, To: 10 * time.Second, Min: bound(35), Value: 28.2}
	require.Equal(t, "fps [0s, 10s) = 28.2, want >= 35: FAIL: below the required minimum", plain.String())

	// Not judged: no value (nothing measured for this window), neither
	// pass nor FAIL, and the reason.
	short := band
	short.NotJudged = "the run lasted 2s, and this window ends at 20s"
	short.Pass = true
	require.Equal(t, "estimate.error.max [1s, 20s), want >= 0.086 ms and <= 0.17 ms: not judged (the run lasted 2s, and this window ends at 20s)", short.String())
	require.Equal(t, short.Subject()+": "+short.Verdict(), short.String())

	// A band that could not be measured fails for that, not as a change.
	broken := band
	broken.Error = "no frames displayed in the window"
	require.Equal(t, "estimate.error.max [1s, 20s): no frames displayed in the window, want >= 0.086 ms and <= 0.17 ms: FAIL", broken.String())
}
