package cluster

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The manifests' names: the claim the Jobs share, and each Job.
const (
	claimName      = "lab-state"
	shardsJob      = "lab-sweep-shards"
	mergeJob       = "lab-sweep-merge"
	tuneAskJob     = "lab-tune-ask"
	tuneGenJob     = "lab-tune-generation"
	tuneTellJob    = "lab-tune-tell"
	imageWorkdir   = "/src"
	shardArgsRegex = `-shard "\$\(\(JOB_COMPLETION_INDEX \+ 1\)\)/([0-9]+)"`
)

// objects decodes every manifest and returns the Jobs by name and the
// claim, failing the test on any decoding error.
func objects(t *testing.T) (map[string]*batchv1.Job, *corev1.PersistentVolumeClaim) {
	t.Helper()
	ms, err := Manifests()
	require.NoError(t, err)
	jobs := map[string]*batchv1.Job{}
	var claim *corev1.PersistentVolumeClaim
	for _, m := range ms {
		for _, o := range m.Objects {
			switch {
			case o.Job != nil:
				require.NotContains(t, jobs, o.Job.Name, "%s: a second Job of this name", m.File)
				jobs[o.Job.Name] = o.Job
			case o.Claim != nil:
				require.Nil(t, claim, "%s: a second claim", m.File)
				claim = o.Claim
			}
		}
	}
	return jobs, claim
}

// container is a Job's one container.
func container(t *testing.T, j *batchv1.Job) corev1.Container {
	t.Helper()
	require.Len(t, j.Spec.Template.Spec.Containers, 1, "job %s: one container", j.Name)
	return j.Spec.Template.Spec.Containers[0]
}

// env is a container's environment as a map (values only: the manifests
// set no variable from a reference).
func env(t *testing.T, c corev1.Container) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range c.Env {
		require.Nil(t, e.ValueFrom, "%s: set literally", e.Name)
		out[e.Name] = e.Value
	}
	return out
}

// Every manifest decodes strictly into the API's types, and the files hold
// the claim and the five Jobs, each once.
func TestManifestsDecodeStrictly(t *testing.T) {
	ms, err := Manifests()
	require.NoError(t, err)
	var files []string
	for _, m := range ms {
		files = append(files, filepath.Base(m.File))
		require.Len(t, m.Objects, 1, "%s: one object per file", m.File)
	}
	require.Equal(t, []string{"state-pvc.yaml", "sweep-merge.yaml", "sweep-shards.yaml", "tune-ask.yaml", "tune-generation.yaml", "tune-tell.yaml"}, files)
	jobs, claim := objects(t)
	require.NotNil(t, claim)
	require.Equal(t, claimName, claim.Name)
	require.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, claim.Spec.AccessModes,
		"pods on several nodes write their parts at once")
	require.True(t, claim.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("1Gi")) >= 0)
	require.Equal(t, []string{mergeJob, shardsJob, tuneAskJob, tuneGenJob, tuneTellJob}, slices.Sorted(maps.Keys(jobs)))
}

// A misspelt field, at the top or deep in a pod's container, is an error
// naming the file, its line and the field; so is a kind the lab has no
// manifest of. Documents of a file are read in order, empty ones skipped.
func TestDecodeRefusesWhatTheAPIDoesNotHave(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("k8s", "sweep-merge.yaml"))
	require.NoError(t, err)
	claim, err := os.ReadFile(filepath.Join("k8s", "state-pvc.yaml"))
	require.NoError(t, err)

	objs, err := Decode("both.yaml", []byte(string(claim)+"---\n"+string(good)+"---\n"))
	require.NoError(t, err)
	require.Len(t, objs, 2)
	require.Equal(t, claimName, objs[0].Name())
	require.Equal(t, mergeJob, objs[1].Name())
	require.Greater(t, objs[1].Line, objs[0].Line)

	for _, c := range []struct {
		name, from, to, want string
	}{
		{"a spec field", "  backoffLimit: 0", "  backofLimit: 0",
			`typo.yaml:%d: backofLimit: no such field in a Job (misspelt, or in the wrong place)`},
		{"a container field", "          workingDir: /src", "          workDir: /src",
			`typo.yaml:%d: workDir: no such field in a Job (misspelt, or in the wrong place)`},
		{"a field in the wrong place", "      restartPolicy: Never", "      restartPolicy: Never\n      completions: 3",
			`typo.yaml:%d: completions: no such field in a Job (misspelt, or in the wrong place)`},
		{"a wrong type", "  backoffLimit: 0", "  backoffLimit: none",
			`typo.yaml:%d: spec.backoffLimit: a string where a Job expects int32`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := string(good)
			require.Contains(t, text, c.from+"\n")
			text = strings.Replace(text, c.from+"\n", c.to+"\n", 1)
			line := 1 + strings.Count(text[:strings.Index(text, c.to)], "\n")
			if strings.Contains(c.to, "\n") {
				line++ // the field is the second line of the replacement
			}
			_, err := Decode("typo.yaml", []byte(text))
			require.EqualError(t, err, strings.ReplaceAll(c.want, "%d", strconv.Itoa(line)))
		})
	}

	_, err = Decode("deploy.yaml", []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"))
	require.EqualError(t, err, `deploy.yaml:1: kind: "Deployment" of apiVersion "apps/v1": expected a batch/v1 Job or a v1 PersistentVolumeClaim`)
	_, err = Decode("old.yaml", []byte("apiVersion: batch/v1beta1\nkind: Job\n"))
	require.ErrorContains(t, err, `old.yaml:1: kind: "Job" of apiVersion "batch/v1beta1"`)
	_, err = Decode("bad.yaml", []byte("kind: [\n"))
	require.ErrorContains(t, err, "bad.yaml: yaml:")
}

// The two sharded Jobs (a sweep and a tune's step): Indexed, N pods at
// most at once, each index tried again on its own, and the command's shard
// count N equal to completions.
func TestShardJobs(t *testing.T) {
	jobs, _ := objects(t)
	for _, name := range []string{shardsJob, tuneGenJob} {
		t.Run(name, func(t *testing.T) {
			j := jobs[name]
			s := j.Spec
			require.NotNil(t, s.CompletionMode)
			require.Equal(t, batchv1.IndexedCompletion, *s.CompletionMode)
			require.NotNil(t, s.Completions)
			require.NotNil(t, s.Parallelism)
			require.GreaterOrEqual(t, *s.Parallelism, int32(1))
			require.LessOrEqual(t, *s.Parallelism, *s.Completions, "parallelism beyond completions starts no more pods")
			require.NotNil(t, s.BackoffLimitPerIndex, "a failed shard is retried without failing the others")
			require.Equal(t, corev1.RestartPolicyNever, s.Template.Spec.RestartPolicy, "backoffLimitPerIndex needs Never")

			c := container(t, j)
			m := regexp.MustCompile(shardArgsRegex).FindStringSubmatch(strings.Join(c.Args, " "))
			require.NotNil(t, m, "the command passes the pod's index as the shard, from 1: %q", c.Args)
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			require.Equal(t, int(*s.Completions), n, "the command's shard count is completions")

			// One session per core: as many cores requested as sessions
			// run at once.
			par, err := strconv.Atoi(env(t, c)["PARALLEL"])
			require.NoError(t, err, "PARALLEL")
			require.Contains(t, strings.Join(c.Args, " "), `-parallel "$PARALLEL"`)
			require.Equal(t, int64(par), c.Resources.Requests.Cpu().Value())
		})
	}
}

// What every Job shares: one image, run from the source in /src, the
// claim mounted where STATE points, resources requested and bounded, no
// restart in place (a failed pod keeps its log).
func TestEveryJob(t *testing.T) {
	jobs, claim := objects(t)
	var images []string
	for name, j := range jobs {
		t.Run(name, func(t *testing.T) {
			pod := j.Spec.Template.Spec
			require.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
			c := container(t, j)
			images = append(images, c.Image)
			require.Equal(t, imageWorkdir, c.WorkingDir, "lab sweep runs from the module's source, which the image holds in /src")
			require.Equal(t, []string{"/bin/sh", "-c"}, c.Command)
			require.Len(t, c.Args, 1, "one shell script")

			state := env(t, c)["STATE"]
			require.NotEmpty(t, state, "STATE")
			require.Contains(t, c.Args[0], `"$STATE`)
			var mounted string
			for _, vm := range c.VolumeMounts {
				if vm.MountPath == state {
					mounted = vm.Name
				}
			}
			require.NotEmpty(t, mounted, "the volume is mounted where STATE (%s) points", state)
			var vol *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Name == mounted {
					vol = &pod.Volumes[i]
				}
			}
			require.NotNil(t, vol)
			require.NotNil(t, vol.PersistentVolumeClaim)
			require.Equal(t, claim.Name, vol.PersistentVolumeClaim.ClaimName)

			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, ok := c.Resources.Requests[r]
				require.True(t, ok, "requests.%s", r)
				lim, ok := c.Resources.Limits[r]
				require.True(t, ok, "limits.%s", r)
				require.True(t, req.Cmp(lim) <= 0, "%s: request %s above limit %s", r, req.String(), lim.String())
			}
			// A shard's memory is what a session needs (docs/cluster.md:
			// 516 MB measured for one at a time); the others run none.
			if j.Spec.CompletionMode != nil {
				require.True(t, c.Resources.Limits.Memory().Cmp(resource.MustParse("1Gi")) >= 0)
			}
		})
	}
	if len(images) == 0 {
		t.Skip("skipping: the -run filter left out every Job, so there is no image to compare")
	}
	slices.Sort(images)
	require.Len(t, slices.Compact(images), 1, "one image in every manifest: %v", images)
}

// Each Job's command, run by the shell with a stand-in lab that prints
// its arguments: pod i of a sharded Job asks for shard i+1 of N, the merge
// and the tune's Jobs run what their contract says, and the tell reports
// lab tune -status's answer (exit 0: pending, 3: done) as its last line.
func TestJobCommands(t *testing.T) {
	jobs, _ := objects(t)
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "lab"), []byte(`#!/bin/sh
echo "lab $*"
case "$*" in *-status*) exit "${FAKE_STATUS:-0}" ;; esac
`), 0o755))
	run := func(j *batchv1.Job, extra ...string) []string {
		t.Helper()
		c := container(t, j)
		cmd := exec.Command(c.Command[0], append(c.Command[1:], c.Args...)...)
		cmd.Env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}
		for k, v := range env(t, c) {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Env = append(cmd.Env, extra...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}

	n := int(*jobs[shardsJob].Spec.Completions)
	for i := range n {
		idx := "JOB_COMPLETION_INDEX=" + strconv.Itoa(i)
		require.Equal(t, []string{"lab sweep -grid lab/sweep/default-grid.yaml -shard " + strconv.Itoa(i+1) + "/" + strconv.Itoa(n) + " -parallel 1 -out /state/parts"},
			run(jobs[shardsJob], idx))
		require.Equal(t, []string{"lab sweep -grid /state/tune/pending/grid.yaml -shard " + strconv.Itoa(i+1) + "/" + strconv.Itoa(n) + " -parallel 1 -out /state/tune/pending/parts"},
			run(jobs[tuneGenJob], idx))
	}
	require.Equal(t, []string{"lab sweep-merge -out /state/report /state/parts/*.json"}, run(jobs[mergeJob]),
		"no parts here: the shell leaves the pattern, and sweep-merge says it found no such file")
	require.Equal(t, []string{"lab tune -ask -state /state/tune -generations 8 -seeds 1,2,3 -validation-seeds 4,5,6"}, run(jobs[tuneAskJob]))
	require.Equal(t, []string{"lab tune -tell -state /state/tune", "lab tune -status -state /state/tune", "tune: step pending"}, run(jobs[tuneTellJob]))
	require.Equal(t, []string{"lab tune -tell -state /state/tune", "lab tune -status -state /state/tune", "tune: done"}, run(jobs[tuneTellJob], "FAKE_STATUS=3"))

	// Another status fails the Job, and so does a failed tell.
	c := container(t, jobs[tuneTellJob])
	for _, fake := range []string{"FAKE_STATUS=1", "FAKE_TELL=1"} {
		cmd := exec.Command(c.Command[0], append(c.Command[1:], c.Args...)...)
		failing := filepath.Join(t.TempDir(), "lab")
		require.NoError(t, os.WriteFile(failing, []byte(`#!/bin/sh
case "$*" in *-status*) exit "${FAKE_STATUS:-0}" ;; *-tell*) exit "${FAKE_TELL:-0}" ;; esac
`), 0o755))
		cmd.Env = []string{"PATH=" + filepath.Dir(failing) + string(os.PathListSeparator) + os.Getenv("PATH"), "STATE=/state", fake}
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s: %s", fake, out)
		require.NotContains(t, string(out), "tune:", fake)
	}
}
