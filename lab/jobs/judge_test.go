package jobs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports"
)

// fake is a result of scenario name whose 600 frames all take lat.
func fake(name string, seed uint64, lat time.Duration) *result.Run {
	r := &result.Run{Schema: result.Version, Scenario: name, Seed: seed, Duration: 10 * time.Second, Ran: 10 * time.Second}
	for i := range 600 {
		at := time.Duration(i+1) * time.Second / 60
		r.Frames = append(r.Frames, result.FrameRecord{Seq: uint64(i), Captured: at, Displayed: at + lat, Latency: lat})
	}
	r.Summary = result.Summary{Frames: 600, Displayed: 600, FPS: 60}
	return r
}

func TestJudge(t *testing.T) {
	scs, err := jobspec.Select("", []string{"lan-animation", "lan-outage", "busy-pc"})
	require.NoError(t, err)
	var base []Session
	for seed := range uint64(3) {
		base = append(base, Session{Variant: jobspec.AsWritten, Scenario: "lan-animation", Seed: seed, Result: fake("lan-animation", seed, 13*time.Millisecond)},
			Session{Variant: jobspec.AsWritten, Scenario: "lan-outage", Seed: seed, Result: fake("lan-outage", seed, 26*time.Millisecond)})
	}
	created := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	bl := map[string]*reports.Baseline{}
	for _, b := range NewBaselines(scs, base, "v1.2", created) {
		bl[b.Scenario] = b
	}
	require.Len(t, bl, 2, "a scenario without a completed session gets no baseline")
	require.Equal(t, "v1.2", bl["lan-animation"].Commit)
	bl["lan-outage"].Fingerprint = "0000"
	bl["renamed"] = &reports.Baseline{Scenario: "renamed"}

	var cur []Session
	for seed := range uint64(3) {
		cur = append(cur, Session{Variant: "x", Scenario: "lan-animation", Seed: seed, Result: fake("lan-animation", seed, 20*time.Millisecond)},
			Session{Variant: "x", Scenario: "lan-outage", Seed: seed, Result: fake("lan-outage", seed, 26*time.Millisecond)})
	}
	cur = append(cur, Session{Variant: "x", Scenario: "busy-pc", Seed: 0, Err: errors.New("boom")})
	j := Judge(bl, scs, cur, true, reports.Options{})
	require.Equal(t, "x", j.Variant)
	require.Equal(t, []uint64{0, 1, 2}, j.Seeds)
	require.True(t, j.Failed())
	require.Len(t, j.Regressions(), 2, "median and p95 of lan-animation")
	require.Equal(t, reports.Regression, j.Scenarios[0].Outcome())
	require.Equal(t, reports.Unchanged, j.Scenarios[1].Outcome())
	require.Equal(t, reports.NoData, j.Scenarios[2].Outcome())
	require.Contains(t, j.Scenarios[1].Notes[0], "the scenario changed since its baseline (0000, now ")
	require.Equal(t, []string{"renamed"}, j.Stale)
	require.Len(t, j.Errors, 1)
	sum := j.Summary()
	require.Contains(t, sum, "x, seeds 0,1,2: 3 scenarios: 1 regressed, 0 improved, 1 unchanged, 1 without data; 1 sessions failed, 0 skipped\n")
	require.Contains(t, sum, "REGRESSION  lan-animation latency.median: regression: baseline 13.0 ms")
	require.Contains(t, sum, "FAILED      busy-pc seed 0: boom")
	require.Contains(t, sum, "note        busy-pc: no baseline to compare with")
	require.Contains(t, sum, "note        renamed: a baseline without a scenario")

	// Without the whole library nothing is stale.
	require.Empty(t, Judge(bl, scs, cur, false, reports.Options{}).Stale)
}

// The nightly end to end on two scenarios: accept a baseline, find nothing
// against it with the same configuration, and find the old pipeline.
func TestNightlyAcceptJudgeAndFlag(t *testing.T) {
	root := t.TempDir()
	o := NightlyOptions{Root: root, Seeds: []uint64{1, 2}, Baselines: "bl", Out: "out",
		Scenarios: []string{"pipeline-encoder-first-fix", "still-refine"}, Accept: true}
	run, err := Nightly(t, o)
	require.NoError(t, err)
	require.Equal(t, 2, run.Accepted)
	require.Greater(t, run.AcceptedBytes, int64(1000))
	require.FileExists(t, filepath.Join(root, "bl", "still-refine.json"))
	require.Equal(t, 4, run.Sessions)

	o.Accept = false
	run, err = Nightly(t, o)
	require.NoError(t, err)
	require.False(t, run.Judgement.Failed(), run.Judgement.Summary())
	require.Equal(t, filepath.Join(root, "out", "report.md"), run.Report)
	md, err := os.ReadFile(run.Report)
	require.NoError(t, err)
	require.Contains(t, string(md), "## Regressions\n\nNone.")
	require.FileExists(t, filepath.Join(root, "out", "report.html"))
	suite, err := reports.ReadSuite(run.Suite)
	require.NoError(t, err)
	require.Len(t, suite.Runs, 4)
	require.Equal(t, []uint64{1, 2}, suite.Seeds)

	o.Config = "old-pipeline"
	o.Out = "out-old"
	run, err = Nightly(t, o)
	require.NoError(t, err)
	require.True(t, run.Judgement.Failed())
	var got []string
	for _, v := range run.Judgement.Regressions() {
		got = append(got, v.Scenario+" "+v.Metric.Name)
	}
	require.Contains(t, got, "pipeline-encoder-first-fix latency.median")
	md, err = os.ReadFile(run.Report)
	require.NoError(t, err)
	require.Contains(t, string(md), "## pipeline-encoder-first-fix: regression")
	require.Contains(t, string(md), "switches.old\\_capture\\_first: true")
	require.FileExists(t, filepath.Join(root, "out-old", "cdf-pipeline-encoder-first-fix.png"))
	require.Equal(t, "old-pipeline", suite2(t, run.Suite).Label)

	o.Accept = true
	_, err = Nightly(t, o)
	require.ErrorContains(t, err, `accepting a baseline under configuration "old-pipeline"`)
}

func suite2(t *testing.T, path string) *reports.Suite {
	s, err := reports.ReadSuite(path)
	require.NoError(t, err)
	return s
}

func TestCompareReport(t *testing.T) {
	root := t.TempDir()
	run, err := Compare(t, CompareOptions{Root: root, A: jobspec.AsWritten, B: "old-pipeline",
		Scenarios: []string{"pipeline-encoder-first-fix"}, Seeds: []uint64{1, 2}})
	require.NoError(t, err)
	require.Equal(t, "old-pipeline against as-written: worse in 1 scenarios (pipeline-encoder-first-fix: latency.median +10.0 ms, latency.p95 +16.7 ms), better in 0, no different in 0.", run.Verdict())
	md, err := os.ReadFile(run.Report)
	require.NoError(t, err)
	for _, want := range []string{"# Compare: old-pipeline against as-written", "Verdict: old-pipeline against as-written: worse in 1",
		"| pipeline-encoder-first-fix | latency.median | regression |", "(stages-pipeline-encoder-first-fix.png)", "(time-pipeline-encoder-first-fix.png)",
		"(stages-time-pipeline-encoder-first-fix.png)"} {
		require.Contains(t, string(md), want)
	}

	for _, c := range []struct {
		o    CompareOptions
		want string
	}{
		{CompareOptions{A: jobspec.AsWritten}, "compare needs two configurations"},
		{CompareOptions{A: "old-pipeline", B: "old-pipeline"}, "-a and -b are the same configuration"},
		{CompareOptions{A: jobspec.AsWritten, B: "old-pipelin"}, "-b: configuration \"old-pipelin\": unknown configuration"},
		{CompareOptions{A: jobspec.AsWritten, B: "old-abr", Scenarios: []string{"lan-animation"}}, "no scenario takes both configurations:\nlan-animation: not applicable"},
	} {
		c.o.Root = root
		_, err := Compare(t, c.o)
		require.ErrorContains(t, err, c.want)
	}
	require.True(t, strings.HasSuffix(run.Report, filepath.Join("out", "compare", "report.md")))
}
