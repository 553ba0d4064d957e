package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/release"
	"github.com/nuvirahub/latencylab/lab/exact"
)

// The release binary (internal/release, make dist) runs a team's own
// folder from an empty working folder with no go command on PATH: lab test
// natively and exact, lab accept, then lab nightly against the baselines
// it wrote. Its exact result is the checkout's, byte for byte (all but the
// wall time), and a lab whose built-in guest is not its own refuses exact
// sessions.
func TestReleaseBinaryRunsAFolderAnywhere(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	// The host's cgo setting and no -trimpath (make dist sets both
	// otherwise): the same steps, on the build cache the other tests fill.
	b, err := release.Build(t.Context(), release.Options{Root: root, Out: filepath.Join(bin, "lab")})
	require.NoError(t, err)

	mine := t.TempDir()
	writeFiles(t, filepath.Join(mine, "scenarios"), map[string]string{
		"defaults.yaml":    "duration: 3s\nseed: 7\ncontroller: {bitrate: 4Mbit/s}\nagent: {frame_sizes: budget}\nscreen: [{at: 0s, source: animation}]\n",
		"traces/cell.down": twoSpeedTrace(),
		"segment.yaml":     segmentScenario,
	})
	lab := func(want int, args ...string) string {
		t.Helper()
		cmd := exec.Command(b.Binary, args...)
		cmd.Dir = mine
		cmd.Env = []string{"PATH=" + bin, "HOME=" + os.Getenv("HOME")}
		if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
			cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+c)
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, want, code, "lab %s:\n%s", strings.Join(args, " "), out.String())
		return out.String()
	}
	_, err = exec.LookPath("go")
	require.NoError(t, err, "the test itself needs go, to build the release")

	out := lab(0, "test", "-exact=false", "-out", "out/native", "scenarios")
	require.Contains(t, out, "1 session: 1 passed")
	require.Contains(t, out, "ran natively")
	require.NotContains(t, out, "unseeded", "the release is a test binary: its native sessions are seeded")

	out = lab(0, "test", "-out", "out/exact", "scenarios")
	require.Contains(t, out, "ran exact")
	require.Contains(t, out, "the guest built into this lab")

	out = lab(0, "accept", "-seeds", "1", "scenarios")
	require.Contains(t, out, "accepted: 1 baselines")
	require.FileExists(t, filepath.Join(mine, "baselines", "fast-segment.json"), "a team's baselines, beside its scenarios")
	out = lab(0, "nightly", "-seeds", "1", "scenarios")
	require.Contains(t, out, "nightly: ")
	require.FileExists(t, filepath.Join(mine, "out", "nightly", "report.md"))

	// The checkout's exact session of the same file, from the same
	// folder: the guest built from the module's source.
	t.Chdir(mine)
	fromSource := func(ctx context.Context, _ string, log io.Writer) (*exact.Runner, func(), error) {
		return openExact(ctx, root, log)
	}
	var stdout, stderr bytes.Buffer
	code := labTest(context.Background(), []string{"-out", "out/checkout", "scenarios"}, &stdout, &stderr, fromSource)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	require.Equal(t, withoutWall(t, filepath.Join(mine, "out", "checkout", "fast-segment.json")), withoutWall(t, filepath.Join(mine, "out", "exact", "fast-segment.json")),
		"the release's exact session is the checkout's, byte for byte but the wall time")
}

// segmentScenario replays the fast half of the trace beside it.
const segmentScenario = `name: fast-segment
description: The fast half of a recording beside the file, from 4 s on.
network:
  up: {delay: 20ms}
  down: {delay: 20ms, trace: {file: traces/cell.down, offset: 4s}}
expect:
  - {measure: latency.median, max: 150ms, from: 1s}
`

// twoSpeedTrace is 1.5 Mbit/s for 4 s, then 12 Mbit/s for 4 s (mahimahi:
// a packet's delivery opportunity per line, in ms).
func twoSpeedTrace() string {
	var trace strings.Builder
	for ms := 0; ms < 4000; ms += 8 {
		fmt.Fprintln(&trace, ms)
	}
	for ms := 4000; ms < 8000; ms++ {
		fmt.Fprintln(&trace, ms)
	}
	return trace.String()
}

// withoutWall is a result file with its wall times ("wall_ns", the
// host's clock) taken out, and otherwise its bytes.
func withoutWall(t *testing.T, file string) string {
	t.Helper()
	data := readFile(t, file)
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, `"wall_ns"`) {
			lines = append(lines, line)
		}
	}
	require.True(t, json.Valid(data), file)
	return strings.Join(lines, "\n")
}
