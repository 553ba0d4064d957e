package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeKubectl is a kubectl that logs its calls, one a line, and acts a
// cluster where every Job completes (FAKE_FAIL names one that fails
// instead; FAKE_RUNNING counts the looks at a Job before it is done) and
// the tell's log says "tune: done" at step FAKE_STEPS ("tune: step
// pending" before; FAKE_SAY replaces both).
const fakeKubectl = `#!/bin/sh
echo "$*" >> "$FAKE_LOG"
case "$*" in
*" get job "*)
	n=$(cat "$FAKE_DIR/looks" 2>/dev/null || echo 0)
	if [ "$n" -lt "${FAKE_RUNNING:-0}" ]; then echo $((n + 1)) > "$FAKE_DIR/looks"; exit 0; fi
	rm -f "$FAKE_DIR/looks"
	case "$*" in *" $FAKE_FAIL "*) echo "FailureTarget Failed" ;; *) echo "SuccessCriteriaMet Complete" ;; esac
	;;
*" logs "*)
	n=$(($(cat "$FAKE_DIR/steps" 2>/dev/null || echo 0) + 1))
	echo $n > "$FAKE_DIR/steps"
	if [ -n "${FAKE_SAY:-}" ]; then echo "$FAKE_SAY"
	elif [ "$n" -ge "$FAKE_STEPS" ]; then echo "tune: done"
	else echo "tune: step pending"; fi
	;;
esac
`

// runLoop runs tune-loop.sh against the fake kubectl with the given
// environment and arguments: its output, its kubectl calls and its
// exit code.
func runLoop(t *testing.T, env []string, args ...string) (string, []string, int) {
	t.Helper()
	_, err := exec.LookPath("sh")
	require.NoError(t, err, "tune-loop.sh is a shell script")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubectl"), []byte(fakeKubectl), 0o755))
	log := filepath.Join(dir, "calls")
	cmd := exec.Command("./tune-loop.sh", args...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_LOG="+log, "FAKE_DIR="+dir, "POLL=0", "KUBECTL=kubectl -n lab")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		require.True(t, ok, "%v: %s", err, out)
		code = exit.ExitCode()
	}
	calls, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return string(out), nil, code
	}
	require.NoError(t, err)
	return string(out), strings.Split(strings.TrimSpace(string(calls)), "\n"), code
}

// runJob is the calls that create a Job afresh and see it complete.
func runJob(name, file string) []string {
	return []string{
		"-n lab delete job " + name + " --ignore-not-found --wait=true",
		"-n lab create -f ./k8s/" + file,
		"-n lab get job " + name + ` -o jsonpath={.status.conditions[?(@.status=="True")].type}`,
	}
}

// The loop asks once, then per step runs the generation and the tell, and
// stops when the tell says done; each Job it creates is the manifest of
// the name it deletes and watches.
func TestTuneLoop(t *testing.T) {
	out, calls, code := runLoop(t, []string{"FAKE_STEPS=3"})
	require.Equal(t, 0, code, out)
	want := runJob(tuneAskJob, "tune-ask.yaml")
	for range 3 {
		want = append(want, runJob(tuneGenJob, "tune-generation.yaml")...)
		want = append(want, runJob(tuneTellJob, "tune-tell.yaml")...)
		want = append(want, "-n lab logs job/"+tuneTellJob+" --tail=1")
	}
	require.Equal(t, want, calls)
	require.Contains(t, out, "tune-loop: done after 3 step(s)")

	ms, err := Manifests()
	require.NoError(t, err)
	names := map[string]string{}
	for _, m := range ms {
		names[filepath.Base(m.File)] = m.Objects[0].Name()
	}
	for i, c := range calls {
		if file, ok := strings.CutPrefix(c, "-n lab create -f ./k8s/"); ok {
			require.Contains(t, calls[i-1], " job "+names[file]+" ", "%s holds the Job the loop deleted", file)
			require.Contains(t, calls[i+1], " job "+names[file]+" ", "%s holds the Job the loop watches", file)
		}
	}

	// -resume continues without the ask; a Job still running is looked
	// at again.
	out, calls, code = runLoop(t, []string{"FAKE_STEPS=1", "FAKE_RUNNING=2"}, "-resume")
	require.Equal(t, 0, code, out)
	require.NotContains(t, strings.Join(calls, "\n"), tuneAskJob)
	require.Equal(t, runJob(tuneGenJob, "tune-generation.yaml")[2], calls[2])
	require.Equal(t, calls[2], calls[3])
	require.Equal(t, calls[2], calls[4])
	require.Contains(t, out, "tune-loop: done after 1 step(s)")
}

// The loop stops, failing, on a failed Job, on a tell that says neither
// pending nor done, after MAX_STEPS, and on a wrong argument.
func TestTuneLoopFails(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"a failed generation", []string{"FAKE_STEPS=3", "FAKE_FAIL=" + tuneGenJob}, nil, 1, "tune-loop: job lab-tune-generation failed"},
		{"a failed ask", []string{"FAKE_STEPS=3", "FAKE_FAIL=" + tuneAskJob}, nil, 1, "tune-loop: job lab-tune-ask failed"},
		{"an unexpected tell", []string{"FAKE_STEPS=3", "FAKE_SAY=panic: boom"}, nil, 1, `the tell's last line is "panic: boom"`},
		{"too many steps", []string{"FAKE_STEPS=5", "MAX_STEPS=2"}, nil, 1, "tune-loop: not done after 2 steps (MAX_STEPS)"},
		{"a Job that never ends", []string{"FAKE_STEPS=1", "FAKE_RUNNING=1000", "POLL=60", "TIMEOUT=59s"}, nil, 1, "tune-loop: job lab-tune-ask not done after 59s"},
		{"a wrong argument", nil, []string{"-again"}, 2, "usage:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, _, code := runLoop(t, c.env, c.args...)
			require.Equal(t, c.code, code, out)
			require.Contains(t, out, c.want)
		})
	}
}
