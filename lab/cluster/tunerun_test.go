package cluster

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/lab/tune"
)

// tinyTune is a tune small enough for a test: two parameters, three
// candidates, one generation, one scenario cut to 4 s, one training and
// one held-out seed; exact, as the Jobs run it. (More generations only
// repeat the step; the unit tests of lab/tune replay several.) The
// scenario is N9's link at 8 Mbit/s, whose video (the budget's sizes)
// fills the link from the start, so that the candidates' settings tell in
// 4 s; with abr-lossy's OpenH264 sizes every candidate scored the same
// there.
var tinyTune = []string{"-scenarios", "lossy-fixed-bitrate", "-duration", "4s", "-seeds", "1", "-validation-seeds", "2",
	"-params", "threshold,hold", "-population", "3", "-generations", "1"}

// A tune's Jobs run on this machine as a cluster would run them: the ask
// Job's command, then per step the generation Job's command once per
// completion index (separate processes, at once, as the pods run) and the
// tell Job's, until the tell says done. The report is the one lab tune
// writes when it runs every step itself, unsharded, byte for byte: a
// candidate's score is a function of the candidate, not of the sharding.
func TestLocalRunOfTheTuneJobs(t *testing.T) {
	requireJobTools(t)
	root, err := modroot.Find()
	require.NoError(t, err)
	jobs, _ := objects(t)
	bin := labBinary(t, root)

	state := t.TempDir()
	run := func(j *batchv1.Job, extra ...string) string {
		t.Helper()
		cmd := podCommand(t, j, root, bin, map[string]string{"STATE": state, "TUNE_FLAGS": strings.Join(tinyTune, " ")}, extra...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "FAILED: " + err.Error() + "\n" + string(out)
		}
		return string(out)
	}

	began := time.Now()
	out1 := run(jobs[tuneAskJob])
	require.Contains(t, out1, "tune started in "+filepath.Join(state, "tune"))
	n := int(*jobs[tuneGenJob].Spec.Completions)
	steps := 0
	for {
		steps++
		require.LessOrEqual(t, steps, 2, "a generation and the validation, then done")
		outs := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { outs[i] = run(jobs[tuneGenJob], "JOB_COMPLETION_INDEX="+strconv.Itoa(i)) })
		}
		wg.Wait()
		for i, o := range outs {
			require.NotContains(t, o, "FAILED", "index %d: %s", i, o)
		}
		told := run(jobs[tuneTellJob])
		require.NotContains(t, told, "FAILED", told)
		if strings.HasSuffix(strings.TrimSpace(told), "tune: done") {
			break
		}
		require.True(t, strings.HasSuffix(strings.TrimSpace(told), "tune: step pending"), told)
	}
	require.Equal(t, 2, steps)
	t.Logf("the Jobs' tune: %d steps of %d shards in %s", steps, n, time.Since(began).Round(100*time.Millisecond))

	began = time.Now()
	whole := filepath.Join(t.TempDir(), "whole")
	cmd := exec.Command(filepath.Join(bin, "lab"), append([]string{"tune", "-state", whole}, tinyTune...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "lab tune, unsharded: %s", out)
	t.Logf("the same tune unsharded: %s", time.Since(began).Round(100*time.Millisecond))

	for _, f := range []string{tune.ReportBase + ".md", tune.SnippetFile, tune.ConvergencePlot, tune.FrontPlot} {
		want, err := os.ReadFile(filepath.Join(whole, tune.ReportDir, f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(state, "tune", tune.ReportDir, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s: the Jobs' tune differs from the unsharded one", f)
	}
	report, err := os.ReadFile(filepath.Join(whole, tune.ReportDir, tune.ReportBase+".md"))
	require.NoError(t, err)
	require.Contains(t, string(report), "The search ran 4 sessions (4 candidates, the write-up's values among them); the validation 4 more.")
}
