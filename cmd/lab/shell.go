package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

const shellUsage = `usage: lab shell -scenario NAME|FILE [flags] [-- CMD ARGS...]

Runs CMD (without one, $SHELL or /bin/sh) in a network namespace whose
traffic, TCP as well as UDP and any program's, crosses the scenario's
network to this machine: the up link from the namespace to the host, the
down link back, with the scenario's timelines counted from the start and
its seed. The host's end is an address on a TUN device (labgwN) that
reaches this machine's servers listening on 0.0.0.0 or on that address; it
is printed and given to CMD as LAB_GATEWAY. Nothing goes further: the
namespace has no route beyond that address's /30, the host's forwarding,
NAT and firewall are not touched, and packets for any other address are
refused. The scenario's tcp-bulk traffic runs beside CMD, the kernel's TCP
between the host and the namespace across the same links (a download into
the namespace, or an upload); its other kinds are refused.

It needs root (network namespaces and TUN devices). CMD's standard streams
are the shell's, and the shell exits with CMD's status: killed by a signal,
it ends by the same signal after cleaning up. A signal sent to the shell
is passed on to CMD, which gets %v to end before it is killed; Ctrl-C at
the terminal reaches CMD directly. The namespace and the devices are
removed when CMD ends, and what a killed shell left is removed by the next
one's start. While CMD runs, a status line on a terminal's stderr shows
what crossed each way and the phase in force; a summary line follows at
the end.

flags:
`

// shellGrace is how long CMD has to end after a signal the shell passed on,
// before it is killed: a program that shuts down cleanly may still need
// the network for that.
const shellGrace = 5 * time.Second

// Exit codes of the shell's own failures, as env(1) and timeout(1) have
// them, so that they do not pass for CMD's: 125 the shell failed, 127 CMD
// was not found.
const (
	shellFailed   = 125
	shellNotFound = 127
)

// shellFlags are lab shell's settings.
type shellFlags struct {
	scenario, capture, metrics string
	// status refreshes the status line (on a terminal, with a CMD).
	status bool
	// cmd is CMD and its arguments; empty: the user's shell.
	cmd []string
}

func parseShell(args []string, out io.Writer) (shellFlags, error) {
	var f shellFlags
	fs := flag.NewFlagSet("shell", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprintf(out, shellUsage, shellGrace); fs.PrintDefaults() }
	fs.StringVar(&f.scenario, "scenario", "", "a scenario of the library by name, or a scenario file")
	fs.StringVar(&f.capture, "capture", "", "a folder for NAME.pcapng: every IP packet offered to and delivered by each link (empty: no capture)")
	fs.StringVar(&f.metrics, "metrics", "", "where /metrics (the links' counters, OpenMetrics on request) is served, like 127.0.0.1:9465 (empty: not served)")
	fs.BoolVar(&f.status, "status", true, "refresh a status line every second on stderr when it is a terminal and CMD is given (the interactive shell gets none: it would write over the prompt)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	f.cmd = fs.Args()
	if f.scenario == "" {
		return f, errors.New("shell: -scenario is required: a library name like mobile-spikes, or a .yaml file")
	}
	return f, nil
}

// shellCommand is what the shell runs: CMD found on PATH, or the user's
// shell. Looking it up here rather than in the namespace lets a mistyped
// name fail before anything is made.
func shellCommand(cmd []string) ([]string, error) {
	if len(cmd) == 0 {
		sh := os.Getenv("SHELL")
		if sh == "" {
			sh = "/bin/sh"
		}
		cmd = []string{sh}
	}
	path, err := exec.LookPath(cmd[0])
	if err != nil {
		return nil, fmt.Errorf("shell: %s: %w", cmd[0], err)
	}
	return append([]string{path}, cmd[1:]...), nil
}

// cmdExit is how CMD ended: its exit code, or the signal that killed it.
type cmdExit struct {
	code   int
	signal syscall.Signal // 0 when it exited
}

// exitOf reads a finished command's state.
func exitOf(ps *os.ProcessState) cmdExit {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return cmdExit{code: 128 + int(ws.Signal()), signal: ws.Signal()}
	}
	return cmdExit{code: ps.ExitCode()}
}

func (e cmdExit) String() string {
	if e.signal != 0 {
		return "killed by " + signalName(e.signal)
	}
	return fmt.Sprintf("exited %d", e.code)
}

// signalName is a signal as a shell user knows it: SIGTERM.
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV", syscall.SIGTERM: "SIGTERM", syscall.SIGABRT: "SIGABRT",
		syscall.SIGPIPE: "SIGPIPE"}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d (%v)", int(s), s)
}

// shellPhases are the scenario's timelines, to name the phase in force.
type shellPhases struct {
	up, down []scenarios.Phase
}

// at names the phase of phases in force at elapsed: "2/3 rate 1 Mbit/s".
// Before the first phase's instant the link is perfect.
func phaseAt(phases []scenarios.Phase, elapsed time.Duration) string {
	if len(phases) == 0 {
		return "perfect"
	}
	i := -1
	for j, ph := range phases {
		if ph.At <= elapsed {
			i = j
		}
	}
	if i < 0 {
		return fmt.Sprintf("0/%d perfect", len(phases))
	}
	return fmt.Sprintf("%d/%d %s", i+1, len(phases), plan.DescribePhase(phases[i]))
}

// mbits is bytes over d in Mbit/s.
func mbits(bytes uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / d.Seconds() / 1e6
}

// shellStatus is the live line: the rates of the last period each way, the
// drops since the start, the phases in force.
func shellStatus(elapsed, period time.Duration, prevUp, up, prevDown, down netem.Stats, ph shellPhases) string {
	return fmt.Sprintf("lab shell %.0fs: up %.2f Mbit/s, %d dropped; down %.2f Mbit/s, %d dropped; phase up %s; down %s",
		elapsed.Seconds(), mbits(up.Delivered.Bytes-prevUp.Delivered.Bytes, period), up.DroppedTotal().Packets,
		mbits(down.Delivered.Bytes-prevDown.Delivered.Bytes, period), down.DroppedTotal().Packets,
		phaseAt(ph.up, elapsed), phaseAt(ph.down, elapsed))
}

// fitWidth cuts a status line to a terminal's width (0: unknown, uncut):
// a line that wrapped could not be rewritten in place.
func fitWidth(line string, width int) string {
	if r := []rune(line); width > 1 && len(r) >= width {
		return string(r[:width-1])
	}
	return line
}

// shellSummary is the line at the end: what crossed each way over the
// whole run, and what was refused.
func shellSummary(elapsed time.Duration, up, down netem.Stats, refused uint64, ex cmdExit) string {
	dir := func(s netem.Stats) string {
		return fmt.Sprintf("%d packets, %.2f MB delivered (%.2f Mbit/s), %d dropped%s", s.Delivered.Packets,
			float64(s.Delivered.Bytes)/1e6, mbits(s.Delivered.Bytes, elapsed), s.DroppedTotal().Packets, dropReasons(s))
	}
	return fmt.Sprintf("lab shell: %.1fs: up %s; down %s; %d packets for other addresses refused; CMD %v",
		elapsed.Seconds(), dir(up), dir(down), refused, ex)
}

// dropReasons lists a link's drops by reason: " (loss 12, queue 3)".
func dropReasons(s netem.Stats) string {
	var parts []string
	for _, r := range []netem.DropReason{netem.DropLoss, netem.DropQueue, netem.DropCoDel, netem.DropPIE, netem.DropDualPI2, netem.DropOutage,
		netem.DropBlocked, netem.DropClosed} {
		if n := s.Dropped[r].Packets; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
