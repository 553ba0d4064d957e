//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/setup"
)

// The tests of lab shell's set-up that need no root: the plan, the steps
// that make nothing of the kernel's, and what the shell answers when its
// set-up stops.

// planSteps is the steps of s's plan with the names given, in the plan's
// order.
func planSteps(t *testing.T, s *shellSession, names ...string) []setup.Step {
	t.Helper()
	var steps []setup.Step
	for _, st := range s.plan() {
		if slices.Contains(names, st.Name) {
			steps = append(steps, st)
		}
	}
	require.Len(t, steps, len(names), "steps %v in the plan", names)
	return steps
}

// openFile tells whether this process holds path open.
func openFile(t *testing.T, path string) bool {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

// The plan checks and loads what can fail without making anything first,
// and has the capture and /metrics steps only when asked; the capture
// opens before the pair, so that its taps are on the links the pair makes
// and its clean-up runs after the pair's.
func TestShellPlan(t *testing.T) {
	names := func(f shellFlags) []string {
		var out []string
		for _, st := range (&shellSession{f: f}).plan() {
			out = append(out, st.Name)
		}
		return out
	}
	checks := []string{"check the kernel mode", "load the scenario", "find CMD", "catch signals", "sweep what killed runs left"}
	run := []string{"create the pair", "announce", "start CMD", "start the traffic"}
	plan := func(optional ...string) []string { return slices.Concat(checks, optional, run) }
	require.Equal(t, plan(), names(shellFlags{scenario: "x"}))
	require.Equal(t, plan("open the capture"), names(shellFlags{scenario: "x", capture: "out"}))
	require.Equal(t, plan("serve /metrics"), names(shellFlags{scenario: "x", metrics: "127.0.0.1:0"}))
	require.Equal(t, plan("open the capture", "serve /metrics"), names(shellFlags{scenario: "x", capture: "out", metrics: "127.0.0.1:0"}))
}

// Loading the scenario gives the pair's links and the traffic beside CMD,
// and refuses what the kernel mode cannot run; it makes nothing to undo.
func TestShellLoadScenarioStep(t *testing.T) {
	sc := shellScenario(t, "shell-steps", "  down: {delay: 10ms}\n")
	addShellTraffic(t, sc, "  - {name: download, kind: tcp-bulk, start: 1s}\n")
	s := &shellSession{f: shellFlags{scenario: sc}}
	u, err := setup.Run(context.Background(), planSteps(t, s, "load the scenario"))
	require.NoError(t, err)
	require.Equal(t, "shell-steps", s.sc.Name)
	require.Equal(t, "up", s.up.Name)
	require.Equal(t, "down", s.down.Name)
	require.Equal(t, uint64(1), s.down.Seed)
	require.Len(t, s.traffic, 1)
	require.Equal(t, "download", s.traffic[0].Name)
	require.NoError(t, u.Run())

	voice := shellScenario(t, "shell-voice", "")
	addShellTraffic(t, voice, "  - {name: voice, kind: cbr, rate: 64kbit/s}\n")
	s = &shellSession{f: shellFlags{scenario: voice}}
	_, err = setup.Run(context.Background(), planSteps(t, s, "load the scenario"))
	require.ErrorContains(t, err, "shell: scenario \"shell-voice\": lab: not supported yet: traffic[0] (voice): a cbr flow in the kernel mode")

	s = &shellSession{f: shellFlags{scenario: filepath.Join(t.TempDir(), "missing.yaml")}}
	_, err = setup.Run(context.Background(), planSteps(t, s, "load the scenario"))
	require.ErrorContains(t, err, "shell: ")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// The capture's file is made and tapped into both links; undone before
// any pair was made, it is closed without the links' counters.
func TestShellCaptureStep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "captures")
	s := &shellSession{f: shellFlags{scenario: shellScenario(t, "shell-capture", ""), capture: dir}}
	u, err := setup.Run(context.Background(), planSteps(t, s, "load the scenario", "open the capture"))
	require.NoError(t, err)
	path := filepath.Join(dir, "shell-capture.pcapng")
	require.Equal(t, path, s.capt.path)
	require.True(t, openFile(t, path))
	require.NotNil(t, s.up.Tap)
	require.NotNil(t, s.down.Tap)
	require.NoError(t, u.Run())
	require.False(t, openFile(t, path), "closed by its clean-up")
	require.False(t, s.capt.complete, "no pair, no counters: not the capture of a run")
	require.FileExists(t, path)
}

// /metrics is served from its step until its clean-up; an address in use
// fails the step, saying so.
func TestShellMetricsStep(t *testing.T) {
	s := &shellSession{f: shellFlags{scenario: shellScenario(t, "shell-metrics", ""), metrics: "127.0.0.1:0"}}
	u, err := setup.Run(context.Background(), planSteps(t, s, "load the scenario", "serve /metrics"))
	require.NoError(t, err)
	require.NotNil(t, s.m)
	resp, err := http.Get("http://" + s.metricsAddr + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, u.Run())
	_, err = http.Get("http://" + s.metricsAddr + "/metrics")
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "no longer served")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	s = &shellSession{f: shellFlags{scenario: shellScenario(t, "shell-metrics", ""), metrics: busy.Addr().String()}}
	_, err = setup.Run(context.Background(), planSteps(t, s, "load the scenario", "serve /metrics"))
	require.ErrorContains(t, err, fmt.Sprintf("shell: -metrics %s: ", busy.Addr()))
	require.ErrorContains(t, err, "another run may be serving there")
}

// From the signals' step on, a signal reaches the shell's channel rather
// than ending the process.
func TestShellCatchSignalsStep(t *testing.T) {
	s := &shellSession{}
	u, err := setup.Run(context.Background(), planSteps(t, s, "catch signals"))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	select {
	case sig := <-s.sigs:
		require.Equal(t, syscall.SIGHUP, sig)
	case <-time.After(5 * time.Second):
		t.Fatal("SIGHUP not caught")
	}
	require.NoError(t, u.Run())
}

// A set-up that fails part-way undoes what it made: here the capture,
// made before /metrics failed, is closed, and nothing after it was made.
func TestShellSetupFailurePartWayUndoes(t *testing.T) {
	defer func(was func() error) { shellAvailable = was }(shellAvailable)
	shellAvailable = func() error { return nil } // the steps that fail here need no root
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	dir := t.TempDir()
	sc := shellScenario(t, "shell-partway", "")
	var log bytes.Buffer
	ready := func(shellStarted) { t.Fatal("the set-up went past its failure") }
	ex, err := shellRun(context.Background(), []string{"-scenario", sc, "-capture", dir, "-metrics", busy.Addr().String(), "--", "true"},
		shellIO{os.Stdin, os.Stdout, os.Stderr, &log}, ready)
	require.Nil(t, ex, "CMD never started")
	require.ErrorContains(t, err, "shell: -metrics "+busy.Addr().String())
	var stopped *setup.Error
	require.ErrorAs(t, err, &stopped)
	require.Equal(t, "serve /metrics", stopped.Step)
	path := filepath.Join(dir, "shell-partway.pcapng")
	require.FileExists(t, path, "the capture was opened")
	require.False(t, openFile(t, path), "and closed when the set-up was undone")
	require.NotContains(t, log.String(), "gateway", "no pair announced")
}

// A context ended before the set-up starts acts as a SIGTERM sent to the
// shell then: CMD never starts, and the shell ends as if it had been
// killed by it; nothing is done, not even the scenario read.
func TestShellCancelledBeforeItStarts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var log bytes.Buffer
	ex, err := shellRun(ctx, []string{"-scenario", "no-such-scenario", "--", "true"}, shellIO{os.Stdin, os.Stdout, os.Stderr, &log}, nil)
	require.NoError(t, err)
	require.Equal(t, &cmdExit{code: 128 + int(syscall.SIGTERM), signal: syscall.SIGTERM}, ex)
	require.Empty(t, log.String())
}

// What shellRun answers for a set-up that stopped: a signal during it, or
// the context's end, is CMD's end by that signal (CMD never started), with
// any failure to undo the set-up; anything else is the shell's failure.
func TestShellSetupStopped(t *testing.T) {
	live := context.Background()
	hup := &cmdExit{code: 128 + int(syscall.SIGHUP), signal: syscall.SIGHUP}
	ex, err := setupStopped(live, &setup.Error{Step: "start CMD", Err: shellSignalled{syscall.SIGHUP}})
	require.NoError(t, err)
	require.Equal(t, hup, ex)

	busy := errors.New("device busy")
	ex, err = setupStopped(live, &setup.Error{Step: "start CMD", Err: shellSignalled{syscall.SIGHUP}, Cleanup: setup.Errors{fmt.Errorf("remove the pair: %w", busy)}})
	require.Equal(t, hup, ex)
	require.EqualError(t, err, "shell: remove the pair: device busy")
	require.ErrorIs(t, err, busy)

	ended, cancel := context.WithCancel(live)
	cancel()
	ex, err = setupStopped(ended, &setup.Error{Step: "create the pair", Err: fmt.Errorf("set-up ended before create the pair: %w", context.Canceled)})
	require.NoError(t, err)
	require.Equal(t, &cmdExit{code: 128 + int(syscall.SIGTERM), signal: syscall.SIGTERM}, ex)

	for _, cause := range []error{
		errors.New("shell: no such scenario"),
		fmt.Errorf("a step's own: %w", context.Canceled), // the shell's context is live
	} {
		stopped := &setup.Error{Step: "load the scenario", Err: cause}
		ex, err = setupStopped(live, stopped)
		require.Nil(t, ex, "%v", cause)
		require.Equal(t, stopped, err, "the error as it is")
	}
}
