package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// callerWorkflow is what the tests read of tune.yml and tune-step.yml
// beyond the workflow type: jobs that call a reusable workflow, and the
// reusable workflow's inputs.
type callerWorkflow struct {
	On struct {
		Dispatch dispatch `yaml:"workflow_dispatch"`
		Call     struct {
			Inputs map[string]struct {
				Type     string `yaml:"type"`
				Required bool   `yaml:"required"`
			} `yaml:"inputs"`
		} `yaml:"workflow_call"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Needs any            `yaml:"needs"`
		If    string         `yaml:"if"`
		Uses  string         `yaml:"uses"`
		With  map[string]any `yaml:"with"`
	} `yaml:"jobs"`
}

func loadCaller(t *testing.T, name string) *callerWorkflow {
	t.Helper()
	var w callerWorkflow
	readWorkflow(t, name, &w)
	return &w
}

// tune.yml chains the ask, one tune-step.yml per step and the report, and
// holds enough steps for its default flags' generations, their
// confirmations and the validation; each step reads the state the one before wrote.
func TestTuneWorkflowChainsItsSteps(t *testing.T) {
	w := loadCaller(t, "tune.yml")
	flags := strings.Fields(w.On.Dispatch.Inputs["flags"].Default)
	gens := 0
	for i, f := range flags {
		if f == "-generations" && i+1 < len(flags) {
			gens, _ = strconv.Atoi(flags[i+1])
		}
	}
	require.Positive(t, gens, "the default flags give -generations")
	steps := 0
	for name := range w.Jobs {
		if strings.HasPrefix(name, "step") {
			steps++
		}
	}
	require.Equal(t, 2*gens+1, steps, "a step per generation and its confirmation (lab tune races its candidates by default), and one for the validation")
	prev := "ask"
	for k := 1; k <= steps; k++ {
		j, ok := w.Jobs["step"+strconv.Itoa(k)]
		require.True(t, ok, "step%d", k)
		require.Equal(t, "./.github/workflows/tune-step.yml", j.Uses)
		require.Equal(t, prev, j.Needs, "step%d runs after %s", k, prev)
		require.Equal(t, k, j.With["step"])
		require.Equal(t, k-1, j.With["after"], "step%d reads the state of the step before", k)
		require.Equal(t, "${{ inputs.shards }}", j.With["shards"])
		prev = "step" + strconv.Itoa(k)
	}
	require.Equal(t, prev, w.Jobs["report"].Needs)

	full := loadWorkflow(t, "tune.yml")
	require.Equal(t, "tune-state-0", full.step(t, "ask", "actions/upload-artifact", "").With["name"])
	ask := full.step(t, "ask", "", "tune -ask")
	require.Contains(t, ask.Run, "go run ./cmd/lab tune -ask -state state $FLAGS")
	require.Equal(t, "tune-state-"+strconv.Itoa(steps), full.step(t, "report", "actions/download-artifact", "").With["name"])
}

// tune-step.yml: the plan reads the step before's state, the shards run
// the pending grid's shards into parts of this step, the tell merges them
// into the state it hands on; every state it reads is the step before's.
func TestTuneStepWorkflow(t *testing.T) {
	c := loadCaller(t, "tune-step.yml")
	for _, in := range []string{"step", "after"} {
		require.True(t, c.On.Call.Inputs[in].Required, in)
		require.Equal(t, "number", c.On.Call.Inputs[in].Type, in)
	}
	require.Equal(t, "needs.plan.outputs.pending == 'true'", c.Jobs["shard"].If)
	require.Contains(t, c.Jobs["tell"].If, "!failure()", "the tell hands the state on when the tune is done too")

	w := loadWorkflow(t, "tune-step.yml")
	for _, job := range []string{"plan", "shard", "tell"} {
		require.Equal(t, "tune-state-${{ inputs.after }}", w.step(t, job, "actions/download-artifact", "").With["name"], job)
	}
	shard := w.step(t, "shard", "", "lab sweep")
	require.Equal(t, `go run ./cmd/lab sweep -grid state/pending/grid.yaml -shard "$SHARD" -out parts`, shard.Run)
	require.Equal(t, "${{ matrix.shard }}/${{ needs.plan.outputs.count }}", shard.Env["SHARD"])
	require.Equal(t, "${{ fromJSON(needs.plan.outputs.shards) }}", w.Jobs["shard"].Strategy.Matrix["shard"])
	require.Equal(t, "tune-parts-${{ inputs.step }}-${{ matrix.shard }}", w.step(t, "shard", "actions/upload-artifact", "").With["name"])
	var parts workflowStep
	for _, s := range w.Jobs["tell"].Steps {
		if s.With["pattern"] != nil {
			parts = s
		}
	}
	require.Equal(t, "tune-parts-${{ inputs.step }}-*", parts.With["pattern"])
	require.Equal(t, "state/pending/parts", parts.With["path"])
	require.Contains(t, w.step(t, "tell", "", "tune -tell").Run, "go run ./cmd/lab tune -tell -state state")
	require.Equal(t, "tune-state-${{ inputs.step }}", w.step(t, "tell", "actions/upload-artifact", "").With["name"])

	// The plan's status step, run in bash with a stand-in go: lab tune
	// -status's 0 is a pending step, 3 a tune done, anything else fails.
	status := w.step(t, "plan", "", "tune -status")
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\nexit \"$FAKE_STATUS\"\n"), 0o755))
	for code, want := range map[string]string{"0": "pending=true", "3": "pending=false", "1": ""} {
		out := filepath.Join(t.TempDir(), "output")
		cmd := exec.Command("bash", "-e", "-c", status.Run)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_STATUS="+code, "SHARDS=3", "GITHUB_OUTPUT="+out)
		msg, err := cmd.CombinedOutput()
		if want == "" {
			require.Error(t, err, "status %s must fail the plan: %s", code, msg)
			continue
		}
		require.NoError(t, err, "status %s: %s", code, msg)
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, want+"\nshards=[1,2,3]\ncount=3\n", string(data), "status %s", code)
	}
}
