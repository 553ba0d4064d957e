//go:build linux

package main

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/timerprobe"
)

// A scenario's tcp-bulk flow runs beside CMD in lab shell: a download from
// the host into CMD's namespace, over the kernel's TCP, across the same
// downlink as CMD's traffic. The closing lines say what it got; at 10
// Mbit/s alone on the link it takes most of it (one-sided: a busy
// machine only slows it).
func TestShellTraffic(t *testing.T) {
	requireShell(t)
	// Half of a 10 Mbit/s link, one-sided: 20 ms.
	timerprobe.Require(t, 20*time.Millisecond)
	sc := shellScenario(t, "shell-download", "  down: {delay: 10ms, rate: 10Mbit/s, queue: {packets: 100}}\n  up: {delay: 10ms}\n")
	addShellTraffic(t, sc, "  - {name: download, kind: tcp-bulk, start: 1s, congestion: cubic}\n")

	r := runShell(t, shellOpts{}, "-scenario", sc, "--", "sleep", "4")
	require.Equal(t, 0, r.exit.code)
	require.Contains(t, r.log, "lab shell: traffic download: kernel TCP cubic, down (from the host to CMD), from 1s\n")
	m := regexp.MustCompile(`lab shell: flow download: ([0-9.]+) MB delivered from 1s to [0-9.]+s \(([0-9.]+) Mbit/s\), (\d+) segments sent`).FindStringSubmatch(r.log)
	require.NotNil(t, m, "the download's closing line:\n%s", r.log)
	mbps, err := strconv.ParseFloat(m[2], 64)
	require.NoError(t, err)
	t.Logf("download beside CMD: %s MB, %.2f Mbit/s, %s segments", m[1], mbps, m[3])
	require.Positive(t, mbps)
	if !raceEnabled { // the detector slows the links' goroutines: its figures are its own
		require.Greater(t, mbps, 5.0, "alone on a 10 Mbit/s downlink from 1 s to CMD's end at 4 s")
	}
	down := regexp.MustCompile(`down (\d+) packets, ([0-9.]+) MB delivered`).FindStringSubmatch(r.log)
	require.NotNil(t, down, r.log)
	linkMB, err := strconv.ParseFloat(down[2], 64)
	require.NoError(t, err)
	flowMB, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, linkMB, flowMB, "the download crossed the shell's downlink")
}

// The kinds the kernel mode cannot run are refused before the shell
// starts anything.
func TestShellRefusesOtherTraffic(t *testing.T) {
	requireShell(t)
	sc := shellScenario(t, "shell-voice", "")
	addShellTraffic(t, sc, "  - {name: voice, kind: cbr, rate: 64kbit/s}\n")
	_, err := shellRun(context.Background(), []string{"-scenario", sc, "--", "true"}, shellIO{os.Stdin, os.Stdout, os.Stderr, os.Stderr}, nil)
	require.ErrorContains(t, err, "shell: scenario \"shell-voice\": lab: not supported yet: traffic[0] (voice): a cbr flow in the kernel mode (it runs tcp-bulk flows")
}
