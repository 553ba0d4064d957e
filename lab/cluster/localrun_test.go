package cluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/lab/sweep"
)

// labBinary is lab built from the module's source in root, once for the
// package's tests (a link takes seconds), in a folder removed when the
// last test that asked for it is done.
func labBinary(t *testing.T, root string) string {
	t.Helper()
	built.once.Do(func() {
		began := time.Now()
		built.dir, built.err = os.MkdirTemp("", "cluster-lab-")
		if built.err != nil {
			return
		}
		build := exec.Command("go", "build", "-o", filepath.Join(built.dir, "lab"), "./cmd/lab")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/lab: %w\n%s", err, out)
		}
		t.Logf("lab built in %s", time.Since(began).Round(100*time.Millisecond))
	})
	require.NoError(t, built.err)
	return built.dir
}

var built struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// requireJobTools fails the test when go or sh is missing: the local runs
// run the Jobs' commands with them.
func requireJobTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"go", "sh"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "this test runs the Jobs' commands with %s; install it (the lab's image has both)", tool)
	}
}

// The sweep's Jobs run on this machine as a cluster would run them: lab
// built, then the shards Job's container command once per completion index,
// each its own process with JOB_COMPLETION_INDEX set, then the merge Job's
// command, all from the module's root as the image's /src, with STATE a
// folder and GRID a tiny grid (testdata/tiny-grid.yaml: 3 points, one
// scenario cut to 3 s, exact). The merged table and Pareto plots are the
// unsharded run's, byte for byte (the report is not: it says how the
// sweep ran and how long it took).
func TestLocalRunOfTheSweepJobs(t *testing.T) {
	requireJobTools(t)
	root, err := modroot.Find()
	require.NoError(t, err)
	grid, err := filepath.Abs(filepath.Join("testdata", "tiny-grid.yaml"))
	require.NoError(t, err)
	jobs, _ := objects(t)
	shards, merge := jobs[shardsJob], jobs[mergeJob]

	bin := labBinary(t, root)

	state := t.TempDir()
	// run runs a Job's container as the pod would: its command, its
	// environment with GRID and STATE pointed here, lab first on PATH.
	// It runs on the test's goroutine and on others (the indexes): it
	// reports a failure with Errorf, which both may call.
	run := func(j *batchv1.Job, extra ...string) string {
		t.Helper()
		cmd := podCommand(t, j, root, bin, map[string]string{"STATE": state, "GRID": grid}, extra...)
		began := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("job %s %v: %v\n%s", j.Name, extra, err, out)
		}
		t.Logf("job %s %v: %s", j.Name, extra, time.Since(began).Round(100*time.Millisecond))
		return string(out)
	}

	// The indexes run at once, as a cluster's pods do.
	n := int(*shards.Spec.Completions)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { run(shards, "JOB_COMPLETION_INDEX="+strconv.Itoa(i)) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	parts, err := filepath.Glob(filepath.Join(state, "parts", "*.json"))
	require.NoError(t, err)
	require.Len(t, parts, n, "a part per index")
	for i := range n {
		p, err := sweep.ReadPart(filepath.Join(state, "parts", sweep.PartName(i+1, n)))
		require.NoError(t, err, "index %d writes shard %d of %d", i, i+1, n)
		require.Equal(t, sweep.ShardID{I: i + 1, N: n}, p.Shard)
		require.True(t, p.Exact, "the Jobs run exact sessions, the default")
		for _, pt := range p.Points {
			require.Equal(t, i, pt.Point.Index%n, "shard %d holds the points of index %d mod %d", i+1, i, n)
		}
	}
	merged := run(merge)
	require.Contains(t, merged, "merged "+strconv.Itoa(n)+" part(s): 3 points, 3 sessions")

	whole := filepath.Join(t.TempDir(), "whole")
	began := time.Now()
	cmd := exec.Command(filepath.Join(bin, "lab"), "sweep", "-grid", grid, "-shard", "1/1", "-out", whole)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the unsharded sweep: %s", out)
	t.Logf("unsharded sweep: %s", time.Since(began).Round(100*time.Millisecond))

	for _, f := range []string{sweep.TableFile, sweep.BitratePlot, sweep.QualityPlot} {
		want, err := os.ReadFile(filepath.Join(whole, f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(state, "report", f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s: the merged sweep's differs from the unsharded one's", f)
	}
	table, err := os.ReadFile(filepath.Join(state, "report", sweep.TableFile))
	require.NoError(t, err)
	for k := 1; k <= 3; k++ {
		require.Contains(t, string(table), "\n| "+strconv.Itoa(k)+" | ", "a row per point")
	}
	require.NotContains(t, string(table), "| n/a |", "every session measured")
}

// podCommand is a Job's container command as its pod would run it, here:
// from the module's root (the image's /src), with the container's
// environment, the values of set for the variables it has, lab from bin
// first on PATH, and extra (JOB_COMPLETION_INDEX=i) last.
func podCommand(t *testing.T, j *batchv1.Job, root, bin string, set map[string]string, extra ...string) *exec.Cmd {
	t.Helper()
	c := container(t, j)
	require.Equal(t, imageWorkdir, c.WorkingDir)
	cmd := exec.Command(c.Command[0], append(c.Command[1:], c.Args...)...)
	cmd.Dir = root
	vars := env(t, c)
	for k, v := range set {
		if _, ok := vars[k]; ok {
			vars[k] = v
		}
	}
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		_, set := vars[name]
		return set || name == "PATH" || name == "JOB_COMPLETION_INDEX"
	})
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}
