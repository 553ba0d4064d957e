package labtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/modroot"
)

// A team's module, elsewhere, imports the lab through a replace directive
// and runs its own scenario folder in its own go test: a scenario that
// meets its bounds passes, one that does not fails with its file and
// line, and go test fails.
func TestAnotherModuleRunsItsScenarios(t *testing.T) {
	root, err := modroot.Find()
	require.NoError(t, err)
	team := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(team, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write("go.mod", "module example.com/team\n\ngo 1.26\n\n"+
		"require github.com/nuvirahub/latencylab v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/nuvirahub/latencylab => "+root+"\n")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	write("go.sum", string(sum))
	write("scenarios/defaults.yaml", "duration: 2s\nseed: 3\nnetwork:\n  both: {delay: 5ms, rate: 20Mbit/s}\n")
	write("scenarios/quick.yaml", "name: quick-lan\ndescription: A fast link.\nexpect:\n  - {measure: latency.median, max: 100ms, from: 1s}\n")
	write("scenarios/hopeful.yaml", "name: hopeful-bound\ndescription: A bound no link meets.\nexpect:\n  - {measure: fps, min: 10}\n  - {measure: latency.median, max: 1ms, from: 1s}\n")
	write("team_test.go", `package team

import (
	"testing"

	"github.com/nuvirahub/latencylab/lab/labtest"
)

func TestScenarios(t *testing.T) {
	got := labtest.Run(t, labtest.Options{}, "scenarios")
	if len(got) != 2 {
		t.Errorf("%d sessions, want 2", len(got))
	}
}
`)
	// -mod=mod: the team's go.mod lists only the lab; the go command
	// adds the lab's own requirements from its go.mod, found in the
	// module cache the lab's build filled. -vet=off: the module's own
	// test, run, not reviewed (vet would first gather facts for every
	// package of the lab under the new main module).
	cmd := exec.Command("go", "test", "-mod=mod", "-vet=off", "-count=1", "-v", ".")
	cmd.Dir = team
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a scenario fails, so go test fails:\n%s", out)
	text := string(out)
	t.Logf("the team's go test -v printed:\n%s", text)
	require.Contains(t, text, "--- PASS: TestScenarios/quick-lan", text)
	require.Contains(t, text, "--- FAIL: TestScenarios/hopeful-bound", text)
	require.Regexp(t, `expectation not met: scenarios/hopeful.yaml:5: latency.median over \[1s, 2s\) = [0-9.]+ ms, want <= 1 ms`, text)
	require.True(t, strings.Contains(text, "\nFAIL\n") || strings.HasSuffix(text, "FAIL\n"), text)
}
