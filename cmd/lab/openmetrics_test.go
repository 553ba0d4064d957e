package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/reports/plots/plotstest"
)

// A result file becomes OpenMetrics placed at -start, which promtool
// turns into a TSDB block.
func TestOpenMetricsExportsAResult(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "wired.json")
	writeResult(t, in, plotstest.Result("wired", 0))
	file := filepath.Join(dir, "run.om")
	var out bytes.Buffer
	require.NoError(t, openmetricsCmd([]string{"-start", "2026-01-01T00:00:00Z", "-o", file, in}, &out))
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	text := string(data)
	require.True(t, strings.HasSuffix(text, "\n# EOF\n"))
	require.Contains(t, text, "# TYPE lab_frame_latency_seconds histogram\n")
	require.Contains(t, text, "# TYPE lab_frames_displayed counter\n")
	// Time zero of the run at 2026-01-01T00:00:00Z.
	require.Contains(t, text, `lab_frames_displayed_total{scenario="wired"} 0.0 1.7672256e+09`+"\n")

	require.ErrorContains(t, openmetricsCmd([]string{"-start", "yesterday", in}, &out), "-start")
	require.ErrorContains(t, openmetricsCmd(nil, &out), "one result file")

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found in PATH (Debian: apt-get install prometheus); it checks the OpenMetrics export"
		if os.Getenv("LAB_REQUIRE_PROMETHEUS") == "1" {
			t.Fatal(msg + ", and LAB_REQUIRE_PROMETHEUS=1 requires it")
		}
		t.Skip(msg + "; set LAB_REQUIRE_PROMETHEUS=1 to make this a failure")
	}
	got, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data")).CombinedOutput()
	require.NoError(t, err, "promtool tsdb create-blocks-from openmetrics:\n%s", got)
	blocks, err := filepath.Glob(filepath.Join(dir, "data", "*", "meta.json"))
	require.NoError(t, err)
	require.Len(t, blocks, 1, "a 10 s run fits one block:\n%s", got)
}
