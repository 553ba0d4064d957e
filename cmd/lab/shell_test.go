package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

func TestParseShell(t *testing.T) {
	f, err := parseShell([]string{"-scenario", "x.yaml", "-capture", "out", "--", "sh", "-c", "exit 3"}, nil)
	require.NoError(t, err)
	require.Equal(t, "x.yaml", f.scenario)
	require.Equal(t, "out", f.capture)
	require.Equal(t, []string{"sh", "-c", "exit 3"}, f.cmd, "CMD's own flags are CMD's")
	require.True(t, f.status)
	require.Empty(t, f.metrics, "no /metrics unless asked")

	_, err = parseShell([]string{"--", "sh"}, nil)
	require.EqualError(t, err, "shell: -scenario is required: a library name like mobile-spikes, or a .yaml file")
}

func TestShellCommandDefaultsToTheUsersShell(t *testing.T) {
	t.Setenv("SHELL", "/bin/sh")
	argv, err := shellCommand(nil)
	require.NoError(t, err)
	require.Equal(t, []string{"/bin/sh"}, argv)
	t.Setenv("SHELL", "")
	argv, err = shellCommand(nil)
	require.NoError(t, err)
	require.Equal(t, []string{"/bin/sh"}, argv)
	argv, err = shellCommand([]string{"sh", "-c", "true"})
	require.NoError(t, err)
	require.Equal(t, "-c", argv[1])
	require.True(t, strings.HasSuffix(argv[0], "/sh"), argv[0])
	_, err = shellCommand([]string{"no-such-command-anywhere"})
	require.ErrorContains(t, err, "shell: no-such-command-anywhere: exec: \"no-such-command-anywhere\": executable file not found in $PATH")
}

func TestShellPhaseAndStatus(t *testing.T) {
	phases := []scenarios.Phase{{At: time.Second, Delay: 25 * time.Millisecond}, {At: 5 * time.Second, Rate: 1_000_000}}
	require.Equal(t, "0/2 perfect", phaseAt(phases, 500*time.Millisecond))
	require.Equal(t, "1/2 delay 25ms", phaseAt(phases, time.Second))
	require.Equal(t, "2/2 rate 1 Mbit/s", phaseAt(phases, 5*time.Second))

	prev := netem.Stats{Delivered: netem.Counter{Bytes: 1_000_000}}
	cur := netem.Stats{Delivered: netem.Counter{Bytes: 1_500_000},
		Dropped: map[netem.DropReason]netem.Counter{netem.DropLoss: {Packets: 4}, netem.DropQueue: {Packets: 1}}}
	line := shellStatus(6*time.Second, time.Second, prev, cur, netem.Stats{}, netem.Stats{}, shellPhases{up: phases})
	require.Equal(t, "lab shell 6s: up 4.00 Mbit/s, 5 dropped; down 0.00 Mbit/s, 0 dropped; phase up 2/2 rate 1 Mbit/s; down perfect", line)
	require.Equal(t, "lab shell 6s: up 4.00 Mbit/s", fitWidth(line, 29), "cut to a terminal's width, less the cursor's column")
	require.Equal(t, line, fitWidth(line, 0))

	sum := shellSummary(2*time.Second, cur, netem.Stats{}, 3, cmdExit{code: 128 + 15, signal: syscall.SIGTERM})
	require.Contains(t, sum, "up 0 packets, 1.50 MB delivered (6.00 Mbit/s), 5 dropped (loss 4, queue 1)")
	require.Contains(t, sum, "3 packets for other addresses refused; CMD killed by SIGTERM")
}
