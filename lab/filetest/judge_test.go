package filetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

func bound(v float64) *float64 { return &v }

// run makes a result with the checks given and plain headline figures.
func run(name string, checks ...result.Check) *result.Run {
	return &result.Run{
		Schema: result.Version, Scenario: name, Seed: 1, Duration: 4 * time.Second, Ran: 4 * time.Second,
		Summary: result.Summary{
			Latency: result.LatencySummary{Median: 23500 * time.Microsecond, P95: 24300 * time.Microsecond},
			FPS:     59.8, Freezes: []result.Interval{{}},
		},
		Checks: checks,
	}
}

var (
	medianMet = result.Check{Measure: "latency.median", Unit: scenarios.UnitDuration, From: time.Second, To: 4 * time.Second,
		Max: bound(0.06), Value: 0.0235, Pass: true, Line: 7}
	medianMissed = result.Check{Measure: "latency.median", Unit: scenarios.UnitDuration, From: time.Second, To: 4 * time.Second,
		Max: bound(0.05), Value: 0.133, Line: 7}
	fpsMissed   = result.Check{Measure: "fps", Unit: scenarios.UnitRatio, To: 4 * time.Second, Min: bound(50), Max: bound(70), Value: 24.8, Line: 8}
	notMeasured = result.Check{Measure: "recovery", Unit: scenarios.UnitDuration, To: 4 * time.Second, Max: bound(2), Error: "no phase change in the window", Line: 9}
)

// The one rule: a session that did not run to its end is an error, one
// that needs ../shared is skipped unless LAB_REQUIRE_SHARED=1, one that
// missed an expectation fails, each expectation with a message that names
// the file and line, the measure, the window, the bound and the value.
func TestJudge(t *testing.T) {
	t.Setenv(needs.Shared, "")
	v := Judge(Outcome{Scenario: "good", File: "mine/good.yaml", Seed: 1, Result: run("good", medianMet)})
	require.Equal(t, Pass, v.Status)
	require.True(t, v.Status.OK())
	require.Equal(t, []Judged{{Name: "latency.median [1s, 4s) <= 60 ms", Pass: true, Line: 7,
		Message: "mine/good.yaml:7: latency.median over [1s, 4s) = 23.5 ms, want <= 60 ms"}}, v.Checks)
	require.Empty(t, v.Failed())

	v = Judge(Outcome{Scenario: "bad", File: "mine/bad.yaml", Seed: 1, Result: run("bad", medianMissed, fpsMissed, notMeasured)})
	require.Equal(t, Fail, v.Status)
	require.False(t, v.Status.OK())
	require.Equal(t, []string{
		"mine/bad.yaml:7: latency.median over [1s, 4s) = 133 ms, want <= 50 ms",
		"mine/bad.yaml:8: fps over [0s, 4s) = 24.8, want >= 50 and <= 70",
		"mine/bad.yaml:9: recovery over [0s, 4s) could not be measured: no phase change in the window, want <= 2 s",
	}, v.Failed())
	require.Equal(t, "fps [0s, 4s) >= 50 and <= 70", v.Checks[1].Name, "the case's name holds no value: the same in every run")

	v = Judge(Outcome{Scenario: "cut", Result: run("cut", medianMet), Err: "lab: interrupted at 2s"})
	require.Equal(t, Error, v.Status, "a result that is not whole is no pass")
	require.Equal(t, "lab: interrupted at 2s", v.Why)
	require.Empty(t, v.Checks)
	require.Equal(t, Error, Judge(Outcome{Scenario: "none"}).Status)

	skipped := Outcome{Scenario: "lte", Err: "lab: shared trace folder absent: trace \"shared:x\"", Skipped: true}
	v = Judge(skipped)
	require.Equal(t, Skipped, v.Status)
	require.True(t, v.Status.OK(), "a skip alone does not fail a run")
	require.Contains(t, v.Why, "LAB_REQUIRE_SHARED=1 makes this a failure")
	t.Setenv(needs.Shared, "1")
	v = Judge(skipped)
	require.Equal(t, Error, v.Status)
	require.Contains(t, v.Why, "LAB_REQUIRE_SHARED=1 requires it")
}

// A session from package jobs becomes an outcome with every field.
func TestFromSession(t *testing.T) {
	r := run("x")
	o := FromSession(jobs.Session{Scenario: "x", File: "x.yaml", Seed: 3, Result: r, Err: errors.New("boom"), Skipped: true, Wall: time.Second})
	require.Equal(t, Outcome{Scenario: "x", File: "x.yaml", Seed: 3, Result: r, Err: "boom", Skipped: true, Wall: time.Second}, o)
}

// The progress line has the verdict, scenario, seed, wall time and
// headline figures, then each expectation missed; the summary a row per
// session and the counts.
func TestProgressAndSummary(t *testing.T) {
	t.Setenv(needs.Shared, "")
	good := Outcome{Scenario: "good", File: "good.yaml", Seed: 1, Result: run("good", medianMet), Wall: 750 * time.Millisecond}
	bad := Outcome{Scenario: "bad", File: "bad.yaml", Seed: 2, Result: run("bad", medianMet, medianMissed), Wall: 540 * time.Millisecond}
	broken := Outcome{Scenario: "broken", File: "broken.yaml", Seed: 1, Err: "exact: session broken (seed 1): the guest died\nits last lines"}
	skipped := Outcome{Scenario: "lte", File: "lte.yaml", Seed: 1, Err: "trace absent", Skipped: true}
	outcomes := []Outcome{good, bad, broken, skipped}
	var verdicts []Verdict
	for _, o := range outcomes {
		verdicts = append(verdicts, Judge(o))
	}

	require.Equal(t, "[1/4] pass    good                         seed 1      0.75 s wall  latency median 23.5 ms, p95 24.3 ms, 59.8 fps, 1 freeze; checks 1/1\n",
		ProgressLine(good, verdicts[0], 1, 4))
	require.Equal(t, "[2/4] FAIL    bad                          seed 2      0.54 s wall  latency median 23.5 ms, p95 24.3 ms, 59.8 fps, 1 freeze; checks 1/2\n"+
		"    bad.yaml:7: latency.median over [1s, 4s) = 133 ms, want <= 50 ms\n",
		ProgressLine(bad, verdicts[1], 2, 4))
	require.Equal(t, "[3/4] error   broken                       seed 1      0.00 s wall\n    exact: session broken (seed 1): the guest died\n",
		ProgressLine(broken, verdicts[2], 3, 4), "the first line of the error; the rest is in the report")

	s := Summary(outcomes, verdicts)
	require.Contains(t, s, "| good | 1 | pass | 23.5 ms | 24.3 ms | 59.8 | 1 | 1/1 | 0.75 s |\n")
	require.Contains(t, s, "| bad | 2 | FAIL | 23.5 ms | 24.3 ms | 59.8 | 1 | 1/2 | 0.54 s |\n")
	require.Contains(t, s, "| broken | 1 | error | exact: session broken (seed 1): the guest died |")
	require.Contains(t, s, "| lte | 1 | skipped | trace absent; LAB_REQUIRE_SHARED=1 makes this a failure |")
	require.True(t, strings.HasSuffix(s, "\n4 sessions: 1 passed, 1 failed, 1 error, 1 skipped\n"), s)
}
