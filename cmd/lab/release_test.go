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
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/release"
	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/filetest"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/reports"
)

// The release binary (internal/release, make dist) runs a team's own
// folder from an empty working folder with no go command on PATH: lab
// test natively and exact, lab accept, then lab nightly against the
// baselines it wrote, and lab suite on the library built in. Its exact
// result is the checkout's, byte for byte (all but the wall time). (A lab
// whose built-in guest is not its own refuses exact sessions: lab/exact's
// TestShippedGuestMustBeItsOwn.)
func TestReleaseBinaryRunsAFolderAnywhere(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	// The host's cgo setting and no -trimpath (make dist sets both
	// otherwise): the same steps, on the build cache the other tests fill.
	b, err := release.Build(t.Context(), release.Options{Root: root, Out: filepath.Join(bin, "lab")})
	require.NoError(t, err)

	// The worked example of a team's repository (docs/own-scenarios.md):
	// its scenarios, a trace beside them, its CI job; not its baselines,
	// which the lab accepts here.
	mine := t.TempDir()
	require.NoError(t, os.CopyFS(mine, os.DirFS(filepath.Join(root, "docs", "team-example"))))
	require.NoError(t, os.RemoveAll(filepath.Join(mine, "baselines")))
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
	require.Contains(t, out, "2 sessions: 2 passed")
	require.Contains(t, out, "ran natively")
	require.NotContains(t, out, "unseeded", "the release is a test binary: its native sessions are seeded")

	out = lab(0, "test", "-out", "out/exact", "scenarios")
	require.Contains(t, out, "ran exact")
	require.Contains(t, out, "the guest built into this lab")

	out = lab(0, "accept", "-seeds", "1", "scenarios")
	require.Contains(t, out, "accepted: 2 baselines")
	require.FileExists(t, filepath.Join(mine, "baselines", "commute.json"), "a team's baselines, beside its scenarios")
	out = lab(0, "nightly", "-seeds", "1", "scenarios")
	require.Contains(t, out, "nightly: ")
	require.FileExists(t, filepath.Join(mine, "out", "nightly", "report.md"))
	out = lab(0, "grafana")
	require.FileExists(t, filepath.Join(mine, "grafana", "dashboards", "latency.json"))

	// The main job, the library built in: results and summary, and no
	// reproduction table, whose codec rows are the checkout's.
	out = lab(0, "suite", "-group", "lan", "-out", "out/suite")
	require.Regexp(t, `results: \d+ scenarios in `+regexp.QuoteMeta(filepath.Join(mine, "out", "suite")), out)
	require.NotContains(t, out, "PASS\n", "go test's closing line is left out")
	require.FileExists(t, filepath.Join(mine, "out", "suite", "lan-animation.json"))
	require.FileExists(t, filepath.Join(mine, "out", "suite", "summary.md"))
	require.NoFileExists(t, filepath.Join(mine, "out", "suite", "reproduction.md"))

	// The checkout's exact session of the same file, from the same
	// folder: the guest built from the module's source.
	t.Chdir(mine)
	fromSource := func(ctx context.Context, _ string, log io.Writer) (*exact.Runner, func(), error) {
		return openExact(ctx, root, log)
	}
	var stdout, stderr bytes.Buffer
	code := labTest(context.Background(), []string{"-out", "out/checkout", "scenarios"}, &stdout, &stderr, fromSource)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	for _, name := range []string{"commute.json", "office-wifi.json"} {
		require.Equal(t, withoutWall(t, filepath.Join(mine, "out", "checkout", name)), withoutWall(t, filepath.Join(mine, "out", "exact", name)),
			"%s: the release's exact session is the checkout's, byte for byte but the wall time", name)
	}
}

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

// The worked example's committed baselines are its scenarios' as they are
// written, so that its nightly, as the docs run it, compares like with
// like: one per scenario, by its fingerprint, at the nightly's seeds.
func TestTeamExampleBaselinesMatchItsScenarios(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	example := filepath.Join(root, "docs", "team-example")
	t.Chdir(example)
	scs, err := filetest.Load([]string{"scenarios"}, "")
	require.NoError(t, err)
	baselines, err := reports.ReadBaselines(filepath.Join(example, jobs.DefaultFileBaselines))
	require.NoError(t, err)
	require.Len(t, baselines, len(scs), "a baseline per scenario, none left over")
	for _, sc := range scs {
		b := baselines[sc.Name]
		require.NotNil(t, b, "%s: no baseline; accept it: cd docs/team-example && go run ../../cmd/lab accept scenarios", sc.Name)
		require.Equal(t, reports.Fingerprint(sc), b.Fingerprint, "%s changed since its baseline: accept it again (cd docs/team-example && go run ../../cmd/lab accept scenarios)", sc.Name)
		require.Len(t, b.Runs, len(jobs.DefaultSeeds), sc.Name)
	}
}
