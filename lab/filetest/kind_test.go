package filetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// A failed band says the session changed, a failed requirement with its
// source names it, in lab test's and JUnit's message as in the report; a
// plain bound's message is as it was.
func TestJudgeSaysTheKindOfBound(t *testing.T) {
	band := result.Check{Measure: "latency.median", Unit: scenarios.UnitDuration, From: time.Second, To: 4 * time.Second,
		Min: bound(0.02), Max: bound(0.04), Value: 0.0133, Band: true, Line: 7}
	required := result.Check{Measure: "fps", Unit: scenarios.UnitRatio, To: 4 * time.Second, Min: bound(50), Value: 24.8,
		Required: "the display's 60 Hz", Line: 8}
	v := Judge(Outcome{Scenario: "kinds", File: "mine/kinds.yaml", Seed: 1, Result: run("kinds", band, required, medianMissed)})
	require.Equal(t, Fail, v.Status)
	require.Equal(t, []string{
		"mine/kinds.yaml:7: latency.median over [1s, 4s) = 13.3 ms, want >= 20 ms and <= 40 ms: changed: below the band measured for this scenario; " +
			"if the change is intended, measure the band again (make bounds, for the library's scenarios) and move min and max to it",
		"mine/kinds.yaml:8: fps over [0s, 4s) = 24.8, want >= 50: below the required minimum; required by the display's 60 Hz",
		"mine/kinds.yaml:7: latency.median over [1s, 4s) = 133 ms, want <= 50 ms",
	}, v.Failed())
}
