//go:build linux

package main

import (
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

	"golang.org/x/sys/unix"

	"github.com/nuvirahub/latencylab/internal/setup"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/traffic"
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
//
// The set-up is a list of steps (shellSession.plan), each registering the
// clean-up of what it made: a failure part-way undoes exactly what was
// done, and the end of the run undoes the rest the same way.
func shellRun(ctx context.Context, args []string, sio shellIO, ready func(shellStarted)) (*cmdExit, error) {
	f, err := parseShell(args, sio.log)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	s := &shellSession{f: f, sio: sio, ready: ready}
	undo, err := setup.Run(ctx, s.plan())
	if err != nil {
		return setupStopped(ctx, err)
	}
	ex, elapsed := s.wait(ctx)
	return &ex, s.end(undo, ex, elapsed)
}

// shellSignalled is a signal the shell got during its set-up, before CMD
// started: CMD never starts.
type shellSignalled struct{ sig syscall.Signal }

func (e shellSignalled) Error() string {
	return "shell: " + signalName(e.sig) + " during the set-up: CMD not started"
}

// setupStopped is shellRun's answer to a set-up that did not finish. A
// signal before CMD started, or ctx's end (which acts as a SIGTERM), ends
// the run as CMD's end by that signal would, CMD never having started, so
// that whatever started the shell sees the same either way; anything else
// is the shell's own failure.
func setupStopped(ctx context.Context, err error) (*cmdExit, error) {
	var stopped *setup.Error
	if !errors.As(err, &stopped) {
		return nil, err
	}
	var signalled shellSignalled
	switch {
	case errors.As(stopped.Err, &signalled):
	case ctx.Err() != nil && errors.Is(stopped.Err, context.Cause(ctx)):
		signalled.sig = syscall.SIGTERM
	default:
		return nil, err
	}
	ex := &cmdExit{code: 128 + int(signalled.sig), signal: signalled.sig}
	if stopped.Cleanup != nil {
		return ex, fmt.Errorf("shell: %w", stopped.Cleanup)
	}
	return ex, nil
}

// wait runs until CMD ends, following the links meanwhile (shellMonitor).
// It passes on to CMD the signals the shell gets, and ctx's end as a
// SIGTERM, and kills CMD when it still runs shellGrace after one. It
// returns how CMD ended and how long the links ran.
func (s *shellSession) wait(ctx context.Context) (cmdExit, time.Duration) {
	var status io.Writer
	if s.f.status && len(s.f.cmd) > 0 && isTerminal(s.sio.log) {
		status = s.sio.log
	}
	mon := newShellMonitor(s.pair.Stats, s.pair.Epoch(), shellPhases{up: s.sc.Network.Up, down: s.sc.Network.Down},
		s.m, status, func() int { return terminalWidth(s.sio.log) }, time.Now())
	tick := time.NewTicker(shellTick)
	defer tick.Stop()
	var kill <-chan time.Time
	ctxDone := ctx.Done()
	for {
		var sig os.Signal
		select {
		case <-s.done:
			elapsed := time.Since(s.pair.Epoch())
			mon.clear()
			return exitOf(s.cmd.ProcessState), elapsed
		case sig = <-s.sigs:
		case <-ctxDone:
			sig, ctxDone = syscall.SIGTERM, nil
		case <-kill:
			fmt.Fprintf(s.sio.log, "\nlab shell: %s still runs %v after the signal: killing it\n", filepath.Base(s.argv[0]), shellGrace)
			_ = s.cmd.Process.Kill()
			kill = nil
			continue
		case now := <-tick.C:
			mon.tick(now)
			continue
		}
		if s.passOn(sig.(syscall.Signal)) && kill == nil {
			kill = time.After(shellGrace)
		}
	}
}

// passOn passes a signal the shell got on to CMD, and says whether it did.
// A SIGINT or SIGQUIT typed at the terminal reached CMD already, in the
// same process group, and what it does with it is its own business.
func (s *shellSession) passOn(sig syscall.Signal) bool {
	if (sig == syscall.SIGINT || sig == syscall.SIGQUIT) && inForeground(s.sio) {
		return false
	}
	_ = s.cmd.Process.Signal(sig)
	return true
}

// end undoes the set-up once CMD has ended (the flows stop with their
// figures, the pair closes with its counters final, /metrics stops, the
// capture gets those counters) and writes what the run did.
func (s *shellSession) end(undo *setup.Undo, ex cmdExit, elapsed time.Duration) error {
	err := undo.Run()
	up, down := s.pair.Stats()
	fmt.Fprintln(s.sio.log, shellSummary(elapsed, up, down, s.pair.Refused(), ex))
	for _, fr := range s.flowResults {
		fmt.Fprintln(s.sio.log, shellFlowSummary(fr, elapsed))
	}
	if s.capt != nil && s.capt.complete {
		fmt.Fprintf(s.sio.log, "lab shell: capture in %s (interfaces up-in, up-out, down-in, down-out)\n", s.capt.path)
	}
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	return nil
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
		d := plan.DescribePhase(ph)
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
	// done: closed; complete: closed with the links' final counters.
	done, complete bool
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

// close ends the capture: with the links' final counters when the pair
// was made (p, closed by then), as at the end of a run or after a set-up
// that failed past the pair; the file is closed either way. A capture
// closed cleanly with the counters is complete.
func (c *shellCapture) close(p *kernel.Pair) error {
	if c.done {
		return nil
	}
	c.done = true
	if p == nil {
		return errors.Join(c.w.Close(), c.file.Close())
	}
	up, down := p.Stats()
	err := errors.Join(c.w.WriteStats("up", up), c.w.WriteStats("down", down), c.w.Close(), c.file.Close())
	c.complete = err == nil
	return err
}

// shellFlowSummary is the closing line of one of the scenario's flows:
// what its receiver got over the time it ran.
func shellFlowSummary(fr traffic.Result, elapsed time.Duration) string {
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
