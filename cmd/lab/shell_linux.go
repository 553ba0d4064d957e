//go:build linux

package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/netem/kernel"
	"github.com/nuvirahub/latencylab/netem/pcap"
	"github.com/nuvirahub/latencylab/scenarios"
)

// shellAvailable says why the shell cannot run here; a variable so that a
// test run as root can see what a user without root is told.
var shellAvailable = kernel.Available

// shellIO is a shell's streams: CMD's three, which it inherits as they are
// (a terminal stays a terminal), and where the shell's own lines go.
type shellIO struct {
	stdin, stdout, stderr *os.File
	log                   io.Writer
}

// shellStarted is what a running shell tells its caller before CMD starts
// (for tests): the pair and its gateway, the capture's path ("" without
// -capture) and where /metrics is served ("" when it is not).
type shellStarted struct {
	pair    *kernel.Pair
	gateway netip.Addr
	capture string
	metrics string
}

// shellMain is lab shell from the command line. It returns the code to exit
// with: CMD's, or for CMD killed by SIGINT, SIGTERM or SIGHUP it ends the
// process by the same signal, so that whatever started the shell sees what
// it would have seen of CMD.
func shellMain(args []string) int {
	ex, err := shellRun(context.Background(), args, shellIO{os.Stdin, os.Stdout, os.Stderr, os.Stderr}, nil)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
	}
	if ex == nil {
		var ee *exec.Error
		switch {
		case errors.As(err, &ee) && (errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist)):
			return shellNotFound
		case errors.As(err, &ee):
			return shellNotFound - 1 // found, not executable: 126, as shells say
		case errors.As(err, new(usageError)):
			return 2
		}
		return shellFailed
	}
	switch ex.signal {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
		// Nothing is caught any more: the runtime's default for these
		// ends the process by the signal.
		signal.Reset(ex.signal)
		_ = syscall.Kill(os.Getpid(), ex.signal)
		time.Sleep(time.Second) // the signal arrives meanwhile; the code below is a fallback
	}
	return ex.code
}

// shellRun runs lab shell. It returns how CMD ended, nil when it never
// started; an error with it is a failure to clean up or to write the
// capture. A cancelled ctx acts as a SIGTERM sent to the shell.
func shellRun(ctx context.Context, args []string, sio shellIO, ready func(shellStarted)) (_ *cmdExit, err error) {
	f, err := parseShell(args, sio.log)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if err := shellAvailable(); err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	sc, err := loadScenario(f.scenario)
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	up, down, traffic, err := lab.ShellLinks(sc)
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	argv, err := shellCommand(f.cmd)
	if err != nil {
		return nil, err
	}

	// Caught from here on, so that a signal during set-up still cleans up.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	// New would sweep silently; the user should hear what a killed shell
	// left and this one removed.
	if removed, err := kernel.Sweep(); err != nil {
		fmt.Fprintf(sio.log, "lab shell: removing what killed runs left: %v\n", err)
	} else if len(removed) > 0 {
		fmt.Fprintf(sio.log, "lab shell: removed %s, left by a run that was killed\n", strings.Join(removed, ", "))
	}

	var capt *shellCapture
	if f.capture != "" {
		if capt, err = newShellCapture(f.capture, sc.Name); err != nil {
			return nil, fmt.Errorf("shell: %w", err)
		}
		defer capt.abort()
		up.Tap, down.Tap = capt.up, capt.down
	}

	var m *metrics.Metrics
	metricsAddr := ""
	if f.metrics != "" {
		reg := prometheus.NewRegistry()
		if m, err = metrics.NewLinks(reg, prometheus.Labels{"scenario": sc.Name}); err != nil {
			return nil, fmt.Errorf("shell: %w", err)
		}
		addr, stop, err := serveMetrics(f.metrics, reg)
		if err != nil {
			return nil, fmt.Errorf("shell: %w", err)
		}
		defer stop()
		metricsAddr = addr
	}

	pair, err := kernel.New(kernel.Config{AtoB: up, BtoA: down, HostB: true, OwnSignals: true})
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	pairClosed := false
	defer func() {
		if !pairClosed {
			pair.Close()
		}
	}()
	gw := pair.AddrB()
	fmt.Fprintf(sio.log, "lab shell: scenario %s (seed %d): gateway %v on %s (LAB_GATEWAY); %s runs in namespace %s at %v\n",
		sc.Name, sc.Seed, gw, pair.DeviceB(), filepath.Base(argv[0]), pair.NamespaceA(), pair.AddrA())
	fmt.Fprintf(sio.log, "lab shell: up: %s; down: %s\n", timelineText(sc.Network.Up), timelineText(sc.Network.Down))
	for _, fl := range traffic {
		dir := "down (from the host to CMD)"
		if fl.Up {
			dir = "up (from CMD's namespace to the host)"
		}
		fmt.Fprintf(sio.log, "lab shell: traffic %s: kernel TCP %s, %s, from %v\n", fl.Name, cmp.Or(fl.Congestion, lab.DefaultKernelController), dir, fl.Start)
	}
	if metricsAddr != "" {
		fmt.Fprintf(sio.log, "lab shell: metrics on http://%s/metrics\n", metricsAddr)
	}
	if ready != nil {
		st := shellStarted{pair: pair, gateway: gw, metrics: metricsAddr}
		if capt != nil {
			st.capture = capt.path
		}
		ready(st)
	}

	cmd, err := pair.CommandA(argv[0], argv[1:]...)
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sio.stdin, sio.stdout, sio.stderr
	cmd.Env = append(os.Environ(), "LAB_GATEWAY="+gw.String(), "LAB_SCENARIO="+sc.Name)
	// CMD dies with the shell even when the shell is killed outright: its
	// network dies then anyway.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	select {
	case sig := <-sigs: // during set-up: CMD never starts
		s := sig.(syscall.Signal)
		return &cmdExit{code: 128 + int(s), signal: s}, errors.Join(pair.Close(), capt.finish(pair))
	default:
	}
	done, err := kernel.StartPinned(cmd)
	if err != nil {
		return nil, fmt.Errorf("shell: %w", err)
	}
	// The scenario's flows, beside CMD from their instants on the links'
	// clock; they end before the pair that carries them.
	flowsRun := lab.StartShellTraffic(ctx, pair, traffic, sc.Seed, pair.Epoch())
	defer flowsRun.Finish()

	ph := shellPhases{up: sc.Network.Up, down: sc.Network.Down}
	statusOn := f.status && len(f.cmd) > 0 && isTerminal(sio.log)
	shown := false
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	ticks := 0
	prevUp, prevDown := pair.Stats()
	statusUp, statusDown, statusAt := prevUp, prevDown, time.Now()
	var kill <-chan time.Time
	ctxDone := ctx.Done()
	var ex cmdExit
wait:
	for {
		var sig os.Signal
		select {
		case <-done:
			ex = exitOf(cmd.ProcessState)
			break wait
		case sig = <-sigs:
		case <-ctxDone:
			sig, ctxDone = syscall.SIGTERM, nil
		case <-kill:
			fmt.Fprintf(sio.log, "\nlab shell: %s still runs %v after the signal: killing it\n", filepath.Base(argv[0]), shellGrace)
			_ = cmd.Process.Kill()
			kill = nil
			continue
		case now := <-tick.C:
			ticks++
			curUp, curDown := pair.Stats()
			if m != nil {
				m.Link(metrics.Up, metrics.LinkSampleOf(prevUp, curUp))
				m.Link(metrics.Down, metrics.LinkSampleOf(prevDown, curDown))
			}
			prevUp, prevDown = curUp, curDown
			if statusOn && ticks%4 == 0 {
				line := shellStatus(now.Sub(pair.Epoch()), now.Sub(statusAt), statusUp, curUp, statusDown, curDown, ph)
				fmt.Fprintf(sio.log, "\r\033[K%s", fitWidth(line, terminalWidth(sio.log)))
				statusUp, statusDown, statusAt, shown = curUp, curDown, now, true
			}
			continue
		}
		s := sig.(syscall.Signal)
		if (s == syscall.SIGINT || s == syscall.SIGQUIT) && inForeground(sio) {
			// Typed at the terminal: CMD, in the same process group, got
			// it too, and what it does with it is its own business.
			continue
		}
		_ = cmd.Process.Signal(s)
		if kill == nil {
			kill = time.After(shellGrace)
		}
	}
	elapsed := time.Since(pair.Epoch())

	if shown {
		fmt.Fprint(sio.log, "\r\033[K")
	}
	flowResults := flowsRun.Finish()
	closeErr := pair.Close()
	pairClosed = true
	upStats, downStats := pair.Stats()
	fmt.Fprintln(sio.log, shellSummary(elapsed, upStats, downStats, pair.Refused(), ex))
	for _, fr := range flowResults {
		fmt.Fprintln(sio.log, shellFlowSummary(fr, elapsed))
	}
	if capt != nil {
		if err := capt.finish(pair); err != nil {
			closeErr = errors.Join(closeErr, err)
		} else {
			fmt.Fprintf(sio.log, "lab shell: capture in %s (interfaces up-in, up-out, down-in, down-out)\n", capt.path)
		}
	}
	if closeErr != nil {
		closeErr = fmt.Errorf("shell: %w", closeErr)
	}
	return &ex, closeErr
}

// inForeground tells whether the shell's process group holds its terminal:
// then a SIGINT or SIGQUIT it gets was typed there and reached CMD as well.
func inForeground(sio shellIO) bool {
	for _, f := range []*os.File{sio.stdin, sio.stderr} {
		if f == nil {
			continue
		}
		if pg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP); err == nil {
			return pg == syscall.Getpgrp()
		}
	}
	return false
}

// terminalWidth is the width of the terminal w is, 0 when unknown.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}

// timelineText describes a direction's timeline: "delay 25ms, then at 5s
// rate 1 Mbit/s".
func timelineText(phases []scenarios.Phase) string {
	if len(phases) == 0 {
		return "perfect"
	}
	var parts []string
	for i, ph := range phases {
		d := lab.DescribePhase(ph)
		if i > 0 || ph.At > 0 {
			d = fmt.Sprintf("at %v %s", ph.At, d)
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, ", then ")
}

// shellCapture is -capture's pcapng of both links.
type shellCapture struct {
	path     string
	file     *os.File
	w        *pcap.Writer
	up, down *pcap.Tap
	done     bool
}

func newShellCapture(dir, name string) (*shellCapture, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &shellCapture{path: filepath.Join(dir, name+".pcapng")}
	var err error
	if c.file, err = os.Create(c.path); err != nil {
		return nil, err
	}
	c.w = pcap.NewWriter(c.file)
	if c.up, err = c.w.TapIP("up"); err == nil {
		c.down, err = c.w.TapIP("down")
	}
	if err != nil {
		c.file.Close()
		return nil, err
	}
	return c, nil
}

// finish writes the links' final counters and closes the file, once the
// pair is closed. A nil capture has nothing to finish.
func (c *shellCapture) finish(p *kernel.Pair) error {
	if c == nil || c.done {
		return nil
	}
	c.done = true
	up, down := p.Stats()
	return errors.Join(c.w.WriteStats("up", up), c.w.WriteStats("down", down), c.w.Close(), c.file.Close())
}

// abort closes the file on a path that did not finish the capture.
func (c *shellCapture) abort() {
	if !c.done {
		c.done = true
		c.w.Close()
		c.file.Close()
	}
}

// shellFlowSummary is the closing line of one of the scenario's flows:
// what its receiver got over the time it ran.
func shellFlowSummary(fr lab.FlowResult, elapsed time.Duration) string {
	f := fr.Flow
	stop := elapsed
	if f.Stop > 0 {
		stop = min(stop, f.Stop)
	}
	line := fmt.Sprintf("lab shell: flow %s: ", f.Name)
	switch {
	case fr.Err != nil:
		return line + "failed: " + fr.Err.Error()
	case stop <= f.Start:
		return line + fmt.Sprintf("never started (from %v; CMD ended at %v)", f.Start, elapsed.Round(100*time.Millisecond))
	}
	ran := stop - f.Start
	return line + fmt.Sprintf("%.2f MB delivered from %v to %v (%.2f Mbit/s), %d segments sent, %d retransmitted",
		float64(fr.Stats.Delivered)/1e6, f.Start, stop.Round(100*time.Millisecond), float64(fr.Stats.Delivered)*8/ran.Seconds()/1e6, fr.Stats.Packets, fr.Stats.Lost)
}
