package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
)

const runUsage = `usage: lab run -scenario NAME|FILE [flags]

Runs a scenario in real time: the agent and the viewer on loopback, talking
QUIC through the real-time impairment proxy, which applies the scenario's
network. QUIC connects during a lead of %v before the scenario's time zero
(as in a go test run); the scenario then lasts its duration, or -duration,
of wall-clock time. Its Prometheus metrics are served on http://ADDR/metrics
while it runs, and a status line every second shows the frames displayed,
the median latency of the last second, the bitrate the controller asks
for and the packets the links dropped. At the end it prints the summary and
the scenario's checks and writes the result (NAME.json, which lab report
reads) to -out; with -capture, also a pcapng of the viewer's links, the TLS
key log that decrypts it in Wireshark, and a qlog of each end for qvis.
Ctrl-C ends the run early and still writes what was measured.

The scenario's traffic runs beside the session, each flow through the same
links. -engine kernel runs the session across the kernel mode instead: the
agent in one network namespace and the viewer in another, their kernel's
UDP crossing the scenario's links, and the scenario's tcp-bulk flows as the
kernel's own TCP with their congestion controllers (the other kinds are
refused there). It needs Linux and root, and records no packets (-capture).

flags:
`

// runFlags are lab run's settings.
type runFlags struct {
	scenario, metrics, out, capture, engine string
	duration                                time.Duration
}

// The engines lab run offers (-engine).
const (
	engineProxy  = "proxy"
	engineKernel = "kernel"
)

func parseRun(args []string, out io.Writer) (runFlags, error) {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprintf(out, runUsage, lab.HandshakeLead); fs.PrintDefaults() }
	fs.StringVar(&f.scenario, "scenario", "", "a scenario of the library by name, or a scenario file")
	fs.DurationVar(&f.duration, "duration", 0, "how long the scenario runs after its lead (0: the scenario's duration)")
	fs.StringVar(&f.metrics, "metrics", "127.0.0.1:9464", "where /metrics is served (empty: not served)")
	fs.StringVar(&f.out, "out", "out/run", "the folder the result NAME.json goes to")
	fs.StringVar(&f.capture, "capture", "", "a folder for NAME.pcapng, NAME.keylog and the qlogs (empty: no capture)")
	fs.StringVar(&f.engine, "engine", engineProxy, "proxy (loopback sockets through the real-time proxy) or kernel (two network namespaces and the kernel's own UDP and TCP; root only)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	switch {
	case fs.NArg() > 0:
		return f, fmt.Errorf("run: unexpected argument %q", fs.Arg(0))
	case f.scenario == "":
		return f, errors.New("run: -scenario is required: a library name like lan-animation, or a .yaml file")
	case f.duration < 0:
		return f, fmt.Errorf("run: -duration %v: must not be negative", f.duration)
	case f.out == "":
		return f, errors.New("run: -out must name a folder")
	case f.engine != engineProxy && f.engine != engineKernel:
		return f, fmt.Errorf("run: -engine %q: expected proxy or kernel", f.engine)
	case f.engine == engineKernel && f.capture != "":
		return f, errors.New("run: -capture with -engine kernel: the kernel mode records no packets (capture its TUN devices with tcpdump inside the namespaces instead)")
	}
	return f, nil
}

// runCmd runs lab run; ready, when set, gets the address /metrics is
// served on (empty when it is not) once it listens, before the session
// starts (for tests). The live status line goes to status.
func runCmd(ctx context.Context, args []string, out, status io.Writer, ready func(metricsAddr string)) error {
	f, err := parseRun(args, out)
	if err != nil {
		return err
	}
	if f.engine == engineKernel {
		if err := transport.KernelAvailable(); err != nil {
			return fmt.Errorf("run: -engine kernel: %w", err)
		}
	}
	sc, err := loadScenario(f.scenario)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if f.duration > 0 {
		// A copy (the library's scenarios are shared) whose expectations
		// keep their windows: those a shorter run does not cover are
		// reported as not judged.
		c, err := sc.WithDuration(f.duration)
		if err != nil {
			return fmt.Errorf("run: -duration %v: %w", f.duration, err)
		}
		sc = c
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	resultPath := filepath.Join(f.out, sc.Name+".json")

	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, prometheus.Labels{"scenario": sc.Name})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	metricsAddr := ""
	if f.metrics != "" {
		addr, stop, err := serveMetrics(f.metrics, reg)
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		defer stop()
		metricsAddr = addr
	}

	cfg := lab.RealTimeConfig{Metrics: m}
	where := "in real time on loopback"
	if f.engine == engineKernel {
		cfg.Kernel = &transport.Kernel{}
		where = "in the kernel mode (two network namespaces)"
	}
	var files []*os.File
	defer func() {
		for _, fl := range files {
			fl.Close() // on the error paths only: the normal path closes them below
		}
	}()
	if f.capture != "" {
		if err := os.MkdirAll(f.capture, 0o755); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		pf, err := os.Create(filepath.Join(f.capture, sc.Name+".pcapng"))
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		files = append(files, pf)
		kf, err := os.Create(filepath.Join(f.capture, sc.Name+".keylog"))
		if err != nil {
			return fmt.Errorf("run: %w", err)
		}
		files = append(files, kf)
		cfg.Capture = lab.Capture{Pcap: pf, KeyLog: kf, QlogDir: f.capture}
	}

	fmt.Fprintf(out, "run: scenario %s %s: %v after a %v lead\n", sc.Name, where, sc.Duration, lab.HandshakeLead)
	for _, fl := range sc.Traffic {
		dir := cmp.Or(fl.Direction, "down")
		if fl.Kind == traffic.KindReverseMedia {
			dir = "up"
		}
		fmt.Fprintf(out, "run: traffic %s (%s, %s) from %v\n", fl.Name, fl.Kind, dir, fl.Start)
	}
	if metricsAddr != "" {
		fmt.Fprintf(out, "run: metrics on http://%s/metrics\n", metricsAddr)
	}
	if ready != nil {
		ready(metricsAddr)
	}

	begun := time.Now()
	stopStatus := make(chan struct{})
	statusDone := make(chan struct{})
	go func() {
		defer close(statusDone)
		runStatus(status, reg, begun, sc.Duration, stopStatus)
	}()
	res, runErr := lab.RunRealTime(ctx, sc, cfg)
	close(stopStatus)
	<-statusDone
	var closeErr error
	for _, fl := range files {
		closeErr = errors.Join(closeErr, fl.Close())
	}
	files = nil
	if res == nil {
		return fmt.Errorf("run: %w", errors.Join(runErr, closeErr))
	}
	if err := result.Write(resultPath, res); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	printRunSummary(out, res)
	fmt.Fprintf(out, "run: result in %s (lab report %s renders it)\n", resultPath, f.out)
	if f.capture != "" {
		pcapPath := filepath.Join(f.capture, sc.Name+".pcapng")
		keyPath := filepath.Join(f.capture, sc.Name+".keylog")
		fmt.Fprintf(out, "run: capture in %s: wireshark -o tls.keylog_file:%s %s; qlogs agent.sqlog, viewer.sqlog for qvis\n",
			f.capture, keyPath, pcapPath)
	}
	if ctx.Err() != nil {
		// The user's Ctrl-C: what was measured is written, and that is
		// what they asked for, not a failure.
		runErr = nil
	}
	if err := errors.Join(runErr, closeErr); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// printRunSummary prints a result's headline figures and its checks.
func printRunSummary(out io.Writer, r *result.Run) {
	s := r.Summary
	if r.Interrupted != "" {
		fmt.Fprintf(out, "\nrun: interrupted after %v of %v (%s)\n", r.Ran.Round(time.Millisecond), r.Duration, r.Interrupted)
	} else {
		fmt.Fprintf(out, "\nrun: done: %v\n", r.Duration)
	}
	fmt.Fprintf(out, "summary: %d frames displayed of %d sent, %.1f fps; latency median %v, p95 %v; %d freezes (longest %v); handshake %v\n",
		s.Displayed, s.Frames, s.FPS, s.Latency.Median.Round(10*time.Microsecond), s.Latency.P95.Round(10*time.Microsecond),
		len(s.Freezes), s.FreezeLongest.Round(time.Millisecond), r.Handshake.Round(time.Microsecond))
	failed, unjudged := 0, 0
	for _, c := range r.Checks {
		switch {
		case c.NotJudged != "":
			unjudged++
		case !c.Pass:
			failed++
		}
	}
	for _, fs := range s.Flows {
		line := fmt.Sprintf("flow %s: %.2f Mbit/s", fs.Name, fs.ThroughputBps/1e6)
		if fs.Share != nil {
			line += fmt.Sprintf(", share %.0f%%", 100**fs.Share)
		}
		if fs.Latency != nil {
			line += fmt.Sprintf(", latency median %v", fs.Latency.Median.Round(10*time.Microsecond))
		}
		fmt.Fprintln(out, line)
	}
	if s.Fairness != nil {
		fmt.Fprintf(out, "fairness (Jain) %.3f\n", *s.Fairness)
	}
	if unjudged > 0 {
		fmt.Fprintf(out, "checks: %d passed, %d failed, %d not judged (the run is shorter than their window)\n", len(r.Checks)-failed-unjudged, failed, unjudged)
	} else {
		fmt.Fprintf(out, "checks: %d passed, %d failed\n", len(r.Checks)-failed, failed)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(out, "  %v\n", c)
	}
}

// runStatus prints a live line every second from the run's own metrics,
// the figures a dashboard scraping /metrics sees. On a terminal it
// rewrites one line; elsewhere it prints one line a second.
func runStatus(w io.Writer, g prometheus.Gatherer, begun time.Time, duration time.Duration, stop <-chan struct{}) {
	tty := isTerminal(w)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var prev liveFigures
	for {
		select {
		case <-stop:
			if tty {
				fmt.Fprintln(w)
			}
			return
		case <-tick.C:
		}
		cur, err := readLive(g)
		if err != nil {
			continue // a gathering hiccup costs one line, not the run
		}
		// Time zero is the lead after the start, as RunRealTime says.
		var line string
		if elapsed := time.Since(begun) - lab.HandshakeLead; elapsed < 0 {
			line = fmt.Sprintf("connecting, time zero in %v", (-elapsed).Round(time.Second))
		} else {
			median := "-"
			if d, ok := cur.latency.medianSince(prev.latency); ok {
				median = "≈" + d.Round(100*time.Microsecond).String()
			}
			line = fmt.Sprintf("%5.0fs / %v  displayed %6.0f  latency median (last 1s) %8s  target %6.2f Mbit/s  link drops %.0f",
				elapsed.Seconds(), duration, cur.displayed, median, cur.targetBytes*8/1e6, cur.drops)
		}
		prev = cur
		if tty {
			fmt.Fprintf(w, "\r%s   ", line)
		} else {
			fmt.Fprintln(w, line)
		}
	}
}

// isTerminal tells whether w is a terminal, where a status line can be
// rewritten in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// liveFigures are the status line's figures, read from the registry.
type liveFigures struct {
	displayed, targetBytes, drops float64
	latency                       histogram
}

// histogram is a Prometheus histogram's cumulative buckets.
type histogram struct {
	count  uint64
	bounds []float64 // upper bounds in seconds, increasing
	cum    []uint64  // observations at or below each bound
}

// readLive gathers the figures from g.
func readLive(g prometheus.Gatherer) (liveFigures, error) {
	mfs, err := g.Gather()
	if err != nil {
		return liveFigures{}, err
	}
	var f liveFigures
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			switch mf.GetName() {
			case metrics.FramesDisplayed:
				f.displayed += mt.GetCounter().GetValue()
			case metrics.ABRTargetRate:
				f.targetBytes += mt.GetGauge().GetValue()
			case metrics.LinkDroppedPackets:
				f.drops += mt.GetCounter().GetValue()
			case metrics.FrameLatency:
				f.latency = histogramOf(mt.GetHistogram())
			}
		}
	}
	return f, nil
}

func histogramOf(h *dto.Histogram) histogram {
	out := histogram{count: h.GetSampleCount()}
	for _, b := range h.GetBucket() {
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.cum = append(out.cum, b.GetCumulativeCount())
	}
	return out
}

// medianSince estimates the median of the observations made since prev
// from the buckets, interpolating linearly inside the bucket that holds
// it, as Prometheus's histogram_quantile does; a dashboard's panel and the
// status line then agree. False when nothing was observed.
func (h histogram) medianSince(prev histogram) (time.Duration, bool) {
	n := h.count - prev.count
	if n == 0 || len(h.bounds) == 0 {
		return 0, false
	}
	rank := float64(n) / 2
	lower, below := 0.0, uint64(0)
	for i, bound := range h.bounds {
		c := h.cum[i]
		if i < len(prev.cum) {
			c -= prev.cum[i]
		}
		if float64(c) >= rank {
			frac := (rank - float64(below)) / float64(max(c-below, 1))
			return time.Duration((lower + (bound-lower)*frac) * float64(time.Second)), true
		}
		lower, below = bound, c
	}
	// Above the last finite bound: say that bound, as histogram_quantile
	// does, rather than invent a value.
	last := h.bounds[len(h.bounds)-1]
	if math.IsInf(last, 1) && len(h.bounds) > 1 {
		last = h.bounds[len(h.bounds)-2]
	}
	return time.Duration(last * float64(time.Second)), true
}

// runMain is lab run from the command line: Ctrl-C ends the run early and
// a second Ctrl-C kills the command as usual.
func runMain(args []string, out io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, stop)
	return runCmd(ctx, args, out, os.Stderr, nil)
}
