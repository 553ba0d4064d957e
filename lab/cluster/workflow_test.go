package cluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// dispatch is what the tests read of a workflow's manual trigger: its
// inputs' defaults.
type dispatch struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
}

// workflow is what the tests read of a GitHub Actions workflow.
type workflow struct {
	On struct {
		Dispatch dispatch `yaml:"workflow_dispatch"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Needs    any               `yaml:"needs"`
		Outputs  map[string]string `yaml:"outputs"`
		Strategy struct {
			Matrix map[string]any `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []workflowStep `yaml:"steps"`
	} `yaml:"jobs"`
}

type workflowStep struct {
	ID   string            `yaml:"id"`
	Uses string            `yaml:"uses"`
	With map[string]any    `yaml:"with"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

// step finds the step of a job that uses an action (by its name before @)
// or runs a command containing the text; fails the test when none does.
func (w *workflow) step(t *testing.T, job, uses, runs string) workflowStep {
	t.Helper()
	j, ok := w.Jobs[job]
	require.True(t, ok, "job %s", job)
	for _, s := range j.Steps {
		name, _, _ := strings.Cut(s.Uses, "@")
		if (uses != "" && name == uses) || (runs != "" && strings.Contains(s.Run, runs)) {
			return s
		}
	}
	require.FailNow(t, "no such step", "job %s: a step using %q or running %q", job, uses, runs)
	return workflowStep{}
}

// plan runs the plan job's shard-list step in bash, as the runner would,
// with the shards input set to shards; its outputs, or the error.
func (w *workflow) plan(t *testing.T, shards string) (map[string]string, error) {
	t.Helper()
	s := w.step(t, "plan", "", "GITHUB_OUTPUT")
	require.Equal(t, "${{ inputs.shards }}", s.Env["SHARDS"])
	out := filepath.Join(t.TempDir(), "output")
	cmd := exec.Command("bash", "-e", "-c", s.Run)
	cmd.Env = append(os.Environ(), "SHARDS="+shards, "GITHUB_OUTPUT="+out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: msg}
	}
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	outputs := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, ok := strings.Cut(l, "=")
		require.True(t, ok, "%q: GITHUB_OUTPUT takes name=value lines", l)
		outputs[k] = v
	}
	return outputs, nil
}

func loadWorkflow(t *testing.T, name string) *workflow {
	t.Helper()
	var w workflow
	readWorkflow(t, name, &w)
	return &w
}

// readWorkflow decodes .github/workflows/NAME into v.
func readWorkflow(t *testing.T, name string, v any) {
	t.Helper()
	root, err := modroot.Find()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, ".github", "workflows", name))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, v))
}

// The sweep workflow's matrix is the shards 1 to n, each once, for the n
// its shard command divides by; the list comes from the shards input
// through the plan job, whose step runs here in bash.
func TestSweepWorkflowShards(t *testing.T) {
	_, err := exec.LookPath("bash")
	require.NoError(t, err, "the test runs the workflow's plan step in bash, as GitHub's runner does")
	w := loadWorkflow(t, "sweep.yml")
	root, err := modroot.Find()
	require.NoError(t, err)

	inputs := w.On.Dispatch.Inputs
	require.Contains(t, inputs, "grid")
	_, err = os.Stat(filepath.Join(root, inputs["grid"].Default))
	require.NoError(t, err, "the default grid is a file of the repository")
	n, err := strconv.Atoi(inputs["shards"].Default)
	require.NoError(t, err, "the shards input's default")
	require.Equal(t, 4, n)

	plan := w.Jobs["plan"]
	require.Equal(t, "${{ steps.shards.outputs.shards }}", plan.Outputs["shards"])
	require.Equal(t, "${{ steps.shards.outputs.count }}", plan.Outputs["count"])
	require.Equal(t, "shards", w.step(t, "plan", "", "GITHUB_OUTPUT").ID)
	shardJob := w.Jobs["shard"]
	require.Equal(t, "plan", shardJob.Needs)
	require.Equal(t, "${{ fromJSON(needs.plan.outputs.shards) }}", shardJob.Strategy.Matrix["shard"])
	run := w.step(t, "shard", "", "lab sweep ")
	require.Equal(t, "${{ matrix.shard }}/${{ needs.plan.outputs.count }}", run.Env["SHARD"])
	require.Equal(t, "${{ inputs.grid }}", run.Env["GRID"])
	require.Equal(t, `go run ./cmd/lab sweep -grid "$GRID" -shard "$SHARD" -out parts`, strings.TrimSpace(run.Run))

	for _, count := range []int{n, 1, 7} {
		outputs, err := w.plan(t, strconv.Itoa(count))
		require.NoError(t, err)
		var list []int
		require.NoError(t, json.Unmarshal([]byte(outputs["shards"]), &list), outputs["shards"])
		require.Equal(t, strconv.Itoa(count), outputs["count"])
		seen := map[int]bool{}
		for _, i := range list {
			flag := strings.NewReplacer("${{ matrix.shard }}", strconv.Itoa(i), "${{ needs.plan.outputs.count }}", outputs["count"]).Replace(run.Env["SHARD"])
			si, sn, err := grid.ParseShard(flag)
			require.NoError(t, err, "matrix entry %d", i)
			require.Equal(t, count, sn, "every shard divides by the count")
			require.False(t, seen[si], "shard %d twice", si)
			seen[si] = true
		}
		require.Len(t, seen, count, "every shard from 1 to %d", count)
	}
	for _, bad := range []string{"0", "65", "x", "", "04", "-1", "2 3"} {
		_, err := w.plan(t, bad)
		require.Error(t, err, "shards %q", bad)
	}

	// Each shard uploads its part under a name of its own, which the
	// merge job's pattern takes.
	up := w.step(t, "shard", "actions/upload-artifact", "")
	require.Equal(t, "sweep-part-${{ matrix.shard }}", up.With["name"])
	require.Equal(t, "parts/sweep-part-*.json", up.With["path"])
	down := w.step(t, "merge", "actions/download-artifact", "")
	for i := 1; i <= n; i++ {
		ok, err := path.Match(down.With["pattern"].(string), "sweep-part-"+strconv.Itoa(i))
		require.NoError(t, err)
		require.True(t, ok, "the merge downloads shard %d's part", i)
	}
	require.Equal(t, true, down.With["merge-multiple"])
	require.Equal(t, "parts", down.With["path"])
	require.Contains(t, w.step(t, "merge", "", "sweep-merge").Run, "go run ./cmd/lab sweep-merge -out report parts/*.json")
	require.Equal(t, "shard", w.Jobs["merge"].Needs)

	// The caches: Go's (setup-go) in every job, and the exact guest's
	// machine code, saved once by the plan and restored by the shards,
	// under one key, at the folder lab/exact uses by default on Linux.
	for job := range w.Jobs {
		w.step(t, job, "actions/setup-go", "")
	}
	save := w.step(t, "plan", "actions/cache", "")
	restore := w.step(t, "shard", "actions/cache/restore", "")
	require.Equal(t, "~/.cache/latencylab/exact", save.With["path"])
	require.Equal(t, save.With, restore.With)
}
