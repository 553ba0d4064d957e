// Command lab is the latency lab's command line: real-time runs (demo, a
// QUIC bulk transfer through the impairment proxy; proxy, the proxy for any
// program's traffic with a scenario's network), the codec benchmark, and the
// report jobs (nightly, accept, compare, sweep, sweep-merge, tune, report),
// lab record, which records real desktop applications for the screen models,
// and lab test, which runs a user's own scenario files as tests. The scenario
// suite runs inside go test (make suite); so do the jobs that run sessions
// natively in virtual time, which this command starts with go test.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/nuvirahub/latencylab/lab/jobs/entry"
	"os"
)

const usage = `usage: lab <command> [flags]

commands:
  run     a scenario in real time: agent and viewer on loopback through the impairment proxy, live /metrics and status
  demo    QUIC bulk transfer through the real-time impairment proxy on loopback
  proxy   the real-time impairment proxy for any program's UDP traffic, with a scenario's network and an HTTP API
  codecs  the codec benchmark: tile XOR+zstd vs Hextile vs ZRLE (E1-E13)
  report  render result JSONs (make suite) as report.md and report.html with plots
  sweep   an ABR parameter sweep over scenarios, or one shard of it (-shard i/n)
  sweep-merge  merge a sharded sweep's part files into its table, Pareto plots and report
  tune    search the ABR's parameters with CMA-ES on a scenario set, validated on held-out seeds; -ask/-tell for a cluster
  nightly the library (or your scenario files) with several seeds against its baselines; fails on a regression
  accept  run the nightly and write its runs as the new baselines (testdata/baselines, or baselines beside your files)
  compare one scenario, a group, the library or your scenario files under two configurations: report, plots, verdict
  ccgrid  congestion controllers (bbr, cubic, reno) x loss and delay through kernel-mode netem, as root: tables, plots, N11
  shell   run any program (or a shell) in a namespace behind a scenario's network, TCP and UDP, as root (like mahimahi)
  vnc     a real remote desktop (x11vnc, Xvnc, xrdp) measured through a scenario's network, as root: update latency per screen change
          with the lab's RFB client, or glass to glass through a real viewer (-viewer vncviewer, xfreerdp, novnc); "lab desktop" too
  record  real desktop applications (xterm, Chromium, mpv, ...) under Xvfb, recorded losslessly with their X damage
  grafana the lab's Grafana set-up (dashboards, provisioning, Prometheus, compose file) written into a folder
  openmetrics  a result as OpenMetrics with timestamps, for promtool tsdb create-blocks-from openmetrics
  test    your own scenario files in virtual time, exact: progress, summary, results, report, JUnit XML
  suite   the scenario library built into lab, once each, as make suite runs it: progress, summary table, results

Run "lab <command> -h" or "lab help <command>" for a command's flags.
`

func main() {
	if entry.Requested() {
		entry.Main() // a job or a job's worker: a copy of lab started by jobRun
	}
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if len(os.Args) == 3 && os.Args[1] == "help" {
		os.Args = []string{os.Args[0], os.Args[2], "-h"} // lab help CMD is lab CMD -h
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runMain(os.Args[2:], os.Stdout)
	case "demo":
		err = demo(os.Args[2:], os.Stdout)
	case "proxy":
		err = proxyMain(os.Args[2:], os.Stdout)
	case "codecs":
		err = codecs(os.Args[2:], os.Stdout)
	case "report":
		err = report(os.Args[2:], os.Stdout)
	case "sweep":
		err = sweepCmd(os.Args[2:], os.Stdout, os.Stderr)
	case "sweep-merge":
		err = sweepMerge(os.Args[2:], os.Stdout)
	case "tune":
		err = tuneCmd(os.Args[2:], os.Stdout, os.Stderr)
		if errors.Is(err, errTuneDone) {
			os.Exit(exitTuneDone) // lab tune -status: done, not a failure
		}
	case "nightly", "accept":
		err = nightlyCmd(os.Args[1], os.Args[2:], os.Stdout, os.Stderr)
	case "compare":
		err = compareCmd(os.Args[2:], os.Stdout, os.Stderr)
	case "ccgrid":
		err = ccgridCmd(os.Args[2:], os.Stdout, os.Stderr)
	case "openmetrics":
		err = openmetricsCmd(os.Args[2:], os.Stdout)
	case "grafana":
		err = grafanaCmd(os.Args[2:], os.Stdout, os.Stderr)
	case "test":
		os.Exit(testMain(os.Args[2:], os.Stdout, os.Stderr)) // 0, 1 or 2: its own statuses
	case "suite":
		err = suiteCmd(os.Args[2:], os.Stdout, os.Stderr)
	case "shell":
		os.Exit(shellMain(os.Args[2:])) // CMD's status
	case "vnc", "desktop":
		err = vncMain(os.Args[2:], os.Stdout, os.Stderr)
	case "record":
		err = recordMain(os.Args[2:], os.Stdout, os.Stderr)
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "lab: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return // the command printed its usage: asked for, not a failure
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lab:", err)
		os.Exit(1)
	}
}

// usageError is a mistake in a command's arguments, which exits 2 as the
// flag package's do (lab test and lab shell).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// usagef is a usageError with a message.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }
