package jobs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two servers' runs from lab vnc's worked example (testdata/vnc), judged
// against each other without running anything: each side is labelled by
// the encoder its runs share, the runs pair by scenario, and the report
// is written.
func TestCompareResultsOfTwoServers(t *testing.T) {
	vnc := filepath.Join("..", "..", "testdata", "vnc")
	out := t.TempDir()
	run, err := CompareResults(CompareResultsOptions{
		A:   []string{filepath.Join(vnc, "*-x11vnc-zrle-*.json")},
		B:   []string{filepath.Join(vnc, "*-xvnc-zrle-*.json")},
		Out: out,
	})
	require.NoError(t, err)
	require.Equal(t, "x11vnc-zrle", run.A.Spec)
	require.Equal(t, "xvnc-zrle", run.B.Spec)
	require.Equal(t, 4, run.Sessions)
	var names []string
	for _, sj := range run.Judgement.Scenarios {
		names = append(names, sj.Scenario)
		require.NotNil(t, sj.Baseline, "%s: A's run is B's baseline", sj.Scenario)
		require.NotEmpty(t, sj.Verdicts, "%s: judged", sj.Scenario)
	}
	require.Equal(t, []string{"lan-animation", "lossy-fixed-bitrate"}, names)
	require.Contains(t, run.Verdict(), "xvnc-zrle against x11vnc-zrle")
	md, err := os.ReadFile(run.Report)
	require.NoError(t, err)
	require.Contains(t, string(md), "4 runs read from result files")
	require.FileExists(t, filepath.Join(out, "cdf-lan-animation.png"))
}

func TestCompareResultsRefusesWhatIsNotThere(t *testing.T) {
	vnc := filepath.Join("..", "..", "testdata", "vnc")
	_, err := CompareResults(CompareResultsOptions{A: []string{filepath.Join(vnc, "*-nosuch-*.json")}, B: []string{vnc}, Out: t.TempDir()})
	require.ErrorContains(t, err, `-a-results: "`+filepath.Join(vnc, "*-nosuch-*.json")+`" matches no file`)
	_, err = CompareResults(CompareResultsOptions{A: []string{vnc}, Out: t.TempDir()})
	require.EqualError(t, err, "-b-results: no result files given")
	png := filepath.Join(vnc, "latency-cdf.png")
	_, err = CompareResults(CompareResultsOptions{A: []string{vnc}, B: []string{png}, Out: t.TempDir()})
	require.ErrorContains(t, err, "-b-results: ")
	require.ErrorContains(t, err, "latency-cdf.png")
}
