//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/timerprobe"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
)

// runKernelScenario is a home link (20 Mbit/s down, 5 up, 15 ms each way,
// 256 KB queues) with the given traffic, for lab run -engine kernel.
func runKernelScenario(t *testing.T, name, traffic string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(`name: `+name+`
description: a home link with other traffic, in the kernel mode
duration: 9s
network:
  down: {delay: 15ms, rate: 20Mbit/s, queue: {bytes: 256KB}}
  up: {delay: 15ms, rate: 5Mbit/s, queue: {bytes: 256KB}}
controller: {kind: abr, bitrate: 4Mbit/s, max: 8Mbit/s}
traffic:
`+traffic), 0o644))
	return path
}

// lab run -engine kernel runs a scenario's tcp-bulk flow as the kernel's
// own TCP beside the session in the namespaces: the download takes its
// share of the downlink and its queue raises the session's latency, and
// the output and the result say so. The bounds are generous, as the
// real-time engine's (a busy machine delays packets and slows flows): on
// the shared 2-core machine this test gave a share of 77% and 33.1 to
// 128.6 ms; it checks a share between 25% and the whole link and a rise
// of more than 5 ms.
func TestRunKernelTraffic(t *testing.T) {
	requireShell(t)
	// Generous, one-sided bounds, as the real-time engine's: 20 ms.
	timerprobe.Require(t, 20*time.Millisecond)
	sc := runKernelScenario(t, "kernel-download", "  - {name: download, kind: tcp-bulk, start: 3s, congestion: cubic}\n")
	dir := t.TempDir()
	var out, status bytes.Buffer
	err := runCmd(context.Background(), []string{"-engine", "kernel", "-scenario", sc, "-metrics", "", "-out", dir}, &out, &status, nil)
	require.NoError(t, err, out.String())
	text := out.String()
	require.Contains(t, text, "run: scenario kernel-download in the kernel mode (two network namespaces)")
	require.Contains(t, text, "run: traffic download (tcp-bulk, down) from 3s")
	require.Contains(t, text, "flow download: ")

	res, err := result.Read(filepath.Join(dir, "kernel-download.json"))
	require.NoError(t, err)
	require.Len(t, res.Traffic, 1)
	require.Equal(t, "kernel TCP cubic", res.Traffic[0].Description)
	require.Empty(t, res.Traffic[0].Error)
	s := time.Second
	share, err := measure.OfWith(res, "flow.share", 5*s, 9*s, measure.Params{Flow: "download"})
	require.NoError(t, err)
	before, err := measure.OfWith(res, "flow.latency.median", 0, 3*s, measure.Params{Flow: "main"})
	require.NoError(t, err)
	during, err := measure.OfWith(res, "flow.latency.median", 5*s, 9*s, measure.Params{Flow: "main"})
	require.NoError(t, err)
	t.Logf("kernel CUBIC download: share %.2f; session latency %.1f ms before, %.1f ms during", share, before*1000, during*1000)
	require.Positive(t, share)
	if !raceEnabled { // the detector slows the links' goroutines: its figures are its own
		require.Greater(t, share, 0.25)
		require.LessOrEqual(t, share, 1.0, "the download crossed the downlink: it cannot carry more")
		require.Greater(t, during-before, 0.005, "the download's queue raises the session's latency")
	}

	// The kinds the kernel mode cannot run are refused before it starts.
	cbr := runKernelScenario(t, "kernel-cbr", "  - {name: voice, kind: cbr, rate: 64kbit/s}\n")
	err = runCmd(context.Background(), []string{"-engine", "kernel", "-scenario", cbr, "-metrics", "", "-out", dir}, &out, &status, nil)
	require.ErrorContains(t, err, "traffic[0] (voice): a cbr flow in the kernel mode (it runs tcp-bulk flows, over the kernel's TCP")
}

// runChildEnv carries lab run's arguments to the test binary run as the
// lab command (TestRunChild), one per line.
const runChildEnv = "LAB_RUN_CHILD_ARGS"

// TestRunChild is lab run as a process of its own, as main runs it.
func TestRunChild(t *testing.T) {
	args := os.Getenv(runChildEnv)
	if args == "" {
		t.Skip("run by TestRunKernelSaysWhyItCannotRun as the lab command")
	}
	if err := runMain(strings.Split(args, "\n"), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Run as a user who is not root, lab run -engine kernel says in one line
// that it needs root, and why, and runs nothing.
func TestRunKernelSaysWhyItCannotRun(t *testing.T) {
	requireShell(t)
	// The test binary, copied where an unprivileged user can run it.
	dir, err := os.MkdirTemp("", "lab-run-nonroot") // t.TempDir's parent is the owner's only
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o777))
	bin := filepath.Join(dir, "lab.test")
	b, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "-test.run=^TestRunChild$")
	cmd.Env = append(os.Environ(), runChildEnv+"="+strings.Join([]string{"-engine", "kernel", "-scenario", "home-download", "-metrics", "", "-out", out}, "\n"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Equal(t, "lab: run: -engine kernel: kernel mode unavailable: needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for namespaces and TUN devices), running as uid 65534\n",
		stderr.String())
	require.Empty(t, stdout.String())
	require.NoDirExists(t, out, "nothing ran")
}
