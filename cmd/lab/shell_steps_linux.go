//go:build linux

package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nuvirahub/latencylab/internal/setup"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/kernel"
	"github.com/nuvirahub/latencylab/scenarios"
)

// shellSession is one run of lab shell: its flags and streams, and what
// its set-up steps make, for the steps after them, CMD's run and the end.
type shellSession struct {
	f     shellFlags
	sio   shellIO
	ready func(shellStarted)

	sc          *scenarios.Scenario
	up, down    netem.LinkConfig
	traffic     []traffic.Flow
	argv        []string
	sigs        chan os.Signal
	capt        *shellCapture    // nil without -capture
	m           *metrics.Metrics // nil without -metrics
	metricsAddr string
	pair        *kernel.Pair
	cmd         *exec.Cmd
	done        <-chan struct{} // closed when CMD has ended
	flows       *transport.ShellTraffic
	flowResults []traffic.Result // what the flows measured, once stopped
}

// plan lists the set-up for the flags, in order: first what can fail
// without making anything (so that a mistyped scenario or CMD changes
// nothing on the machine), then what must be undone, each step
// registering its own clean-up.
func (s *shellSession) plan() []setup.Step {
	steps := []setup.Step{
		{Name: "check the kernel mode", Do: s.checkAvailable},
		{Name: "load the scenario", Do: s.loadScenario},
		{Name: "find CMD", Do: s.findCommand},
		{Name: "catch signals", Do: s.catchSignals},
		{Name: "sweep what killed runs left", Do: s.sweep},
	}
	if s.f.capture != "" {
		steps = append(steps, setup.Step{Name: "open the capture", Do: s.openCapture})
	}
	if s.f.metrics != "" {
		steps = append(steps, setup.Step{Name: "serve /metrics", Do: s.serveMetrics})
	}
	return append(steps,
		setup.Step{Name: "create the pair", Do: s.createPair},
		setup.Step{Name: "announce", Do: s.announce},
		setup.Step{Name: "start CMD", Do: s.startCommand},
		setup.Step{Name: "start the traffic", Do: s.startTraffic})
}

func (s *shellSession) checkAvailable(context.Context, *setup.Undo) error {
	if err := shellAvailable(); err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	return nil
}

// loadScenario reads the scenario and the links and traffic it makes; the
// kinds of traffic the kernel mode cannot run are refused here.
func (s *shellSession) loadScenario(context.Context, *setup.Undo) error {
	sc, err := loadScenario(s.f.scenario)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	up, down, flows, err := plan.ShellLinks(sc)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	s.sc, s.up, s.down, s.traffic = sc, up, down, flows
	return nil
}

func (s *shellSession) findCommand(context.Context, *setup.Undo) error {
	argv, err := shellCommand(s.f.cmd)
	s.argv = argv
	return err
}

// catchSignals catches, from here on, the signals the shell passes on to
// CMD, so that one during the set-up still undoes it (startCommand looks).
func (s *shellSession) catchSignals(_ context.Context, u *setup.Undo) error {
	s.sigs = make(chan os.Signal, 8)
	signal.Notify(s.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	u.Add("stop catching signals", func() error {
		signal.Stop(s.sigs)
		return nil
	})
	return nil
}

// sweep removes what killed runs left. kernel.New would sweep silently;
// the user should hear what a killed shell left and this one removed. What
// cannot be removed is only said: it does not stop this run.
func (s *shellSession) sweep(context.Context, *setup.Undo) error {
	if removed, err := kernel.Sweep(); err != nil {
		fmt.Fprintf(s.sio.log, "lab shell: removing what killed runs left: %v\n", err)
	} else if len(removed) > 0 {
		fmt.Fprintf(s.sio.log, "lab shell: removed %s, left by a run that was killed\n", strings.Join(removed, ", "))
	}
	return nil
}

// openCapture opens -capture's file and taps both links into it. Its
// clean-up runs after the pair's, so that the links' final counters are
// in the file.
func (s *shellSession) openCapture(_ context.Context, u *setup.Undo) error {
	c, err := newShellCapture(s.f.capture, s.sc.Name)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	s.capt = c
	u.Add("close the capture", func() error { return c.close(s.pair) })
	s.up.Tap, s.down.Tap = c.up, c.down
	return nil
}

// serveMetrics serves the links' counters on -metrics' address.
func (s *shellSession) serveMetrics(_ context.Context, u *setup.Undo) error {
	reg := prometheus.NewRegistry()
	m, err := metrics.NewLinks(reg, prometheus.Labels{"scenario": s.sc.Name})
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	addr, stop, err := serveMetrics(s.f.metrics, reg)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	u.Add("stop serving /metrics", func() error {
		stop()
		return nil
	})
	s.m, s.metricsAddr = m, addr
	return nil
}

// createPair makes CMD's namespace and the host's end, joined by the
// scenario's links.
func (s *shellSession) createPair(_ context.Context, u *setup.Undo) error {
	pair, err := kernel.New(kernel.Config{AtoB: s.up, BtoA: s.down, HostB: true, OwnSignals: true})
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	s.pair = pair
	u.Add("remove the pair", pair.Close)
	return nil
}

// announce tells the user where CMD runs and what its network does, and
// the caller (a test) what it needs before CMD starts.
func (s *shellSession) announce(context.Context, *setup.Undo) error {
	gw, log := s.pair.AddrB(), s.sio.log
	fmt.Fprintf(log, "lab shell: scenario %s (seed %d): gateway %v on %s (LAB_GATEWAY); %s runs in namespace %s at %v\n",
		s.sc.Name, s.sc.Seed, gw, s.pair.DeviceB(), filepath.Base(s.argv[0]), s.pair.NamespaceA(), s.pair.AddrA())
	fmt.Fprintf(log, "lab shell: up: %s; down: %s\n", timelineText(s.sc.Network.Up), timelineText(s.sc.Network.Down))
	for _, fl := range s.traffic {
		dir := "down (from the host to CMD)"
		if fl.Up {
			dir = "up (from CMD's namespace to the host)"
		}
		fmt.Fprintf(log, "lab shell: traffic %s: kernel TCP %s, %s, from %v\n", fl.Name, cmp.Or(fl.Congestion, transport.DefaultKernelController), dir, fl.Start)
	}
	if s.metricsAddr != "" {
		fmt.Fprintf(log, "lab shell: metrics on http://%s/metrics\n", s.metricsAddr)
	}
	if s.ready != nil {
		st := shellStarted{pair: s.pair, gateway: gw, metrics: s.metricsAddr}
		if s.capt != nil {
			st.capture = s.capt.path
		}
		s.ready(st)
	}
	return nil
}

// startCommand starts CMD in the pair's namespace with the shell's
// streams, unless a signal came during the set-up: then it never starts
// (shellSignalled).
func (s *shellSession) startCommand(_ context.Context, u *setup.Undo) error {
	cmd, err := s.pair.CommandA(s.argv[0], s.argv[1:]...)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.sio.stdin, s.sio.stdout, s.sio.stderr
	cmd.Env = append(os.Environ(), "LAB_GATEWAY="+s.pair.AddrB().String(), "LAB_SCENARIO="+s.sc.Name)
	// CMD dies with the shell even when the shell is killed outright: its
	// network dies then anyway.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	select {
	case sig := <-s.sigs:
		return shellSignalled{sig.(syscall.Signal)}
	default:
	}
	done, err := kernel.StartPinned(cmd)
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	s.cmd, s.done = cmd, done
	// At the end of a run CMD has ended already; a set-up that fails
	// after this step must not leave it running.
	u.Add("stop CMD", func() error {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
		return nil
	})
	return nil
}

// startTraffic starts the scenario's flows beside CMD, from their instants
// on the links' clock. They stop before the pair that carries them,
// keeping what they measured for the summary.
func (s *shellSession) startTraffic(ctx context.Context, u *setup.Undo) error {
	s.flows = transport.StartShellTraffic(ctx, s.pair, s.traffic, s.sc.Seed, s.pair.Epoch())
	u.Add("stop the traffic", func() error {
		s.flowResults = s.flows.Finish()
		return nil
	})
	return nil
}
