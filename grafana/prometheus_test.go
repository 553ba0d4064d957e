package grafana

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/scenarios"
)

// live is the real-time run Prometheus scrapes: a link narrower than the
// ABR's start, with a bounded queue and some loss, so that the ABR
// decides, a queue stands and packets are lost, while enough frames (about
// 25 a second) get through for every latency window to hold some; and a
// voice call going up, so that the flows' panels have traffic to show.
const live = `name: grafana-live
description: A short real-time ABR run over a narrow, lossy link, scraped by Prometheus for the dashboards' test.
duration: 6s
network:
  both:
    - {at: 0s, delay: 10ms, loss: 1%, rate: 3Mbit/s, queue: {packets: 60}}
controller: {kind: abr, bitrate: 4Mbit/s}
traffic:
  - {name: voice, kind: cbr, direction: up, rate: 128kbit/s, size: 200B}
`

// The values the live test gives Grafana's variables. $__rate_interval is
// what Grafana would make of the provisioned 1 s scrape interval (at
// least four scrapes) plus one scrape of slack, so that a late scrape on
// a loaded machine still leaves rate() two samples; $__range is the run's
// length, the time range of a dashboard zoomed onto it.
const (
	rateInterval = "5s"
	interval     = "1s"
	scrapeEvery  = time.Second
)

// Every query of every dashboard returns data from Prometheus scraping a
// real-time session: the dashboards ask for the names, labels and types
// the session exports, and their PromQL is valid (Prometheus, not a
// hand-written parser, judges it). Each query is evaluated at the end of
// the run, under both values of $scenario a user can pick (All, and the
// run's scenario), and must return at least one series with a finite
// value: an empty result or only NaN (a quantile of no frames, a division
// by zero) is an empty panel.
func TestDashboardQueriesReturnData(t *testing.T) {
	bin := need(t, "prometheus", "it scrapes a real-time run to check the dashboards' queries")
	began := time.Now()
	ds := loadDashboards(t)
	for _, d := range ds {
		require.NotEmpty(t, d.queries(), "%s has no queries", d.file)
	}

	sc, err := scenarios.Parse("grafana-live.yaml", []byte(live), nil)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, prometheus.Labels{"scenario": sc.Name})
	require.NoError(t, err)
	srv := httptest.NewServer(metrics.Handler(reg))
	t.Cleanup(srv.Close)

	prom := startPrometheus(t, bin, srv.Listener.Addr().String())
	// The first scrape precedes the run, so every counter's rate starts
	// from a sample of its zero. It comes about 5 s after the start:
	// Prometheus hands its targets to the scrapers at most every 5 s, a
	// pause no flag shortens.
	prom.waitFor(t, "the first scrape of the session's metrics", 10*time.Second, func() (bool, error) {
		r, err := prom.query(`up{job="lab"}`, time.Time{})
		return len(r) == 1 && r[0].value == 1, err
	})
	t.Logf("prometheus up and scraping after %v", time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := lab.RunWithMetrics(ctx, sc, m)
	require.NoError(t, err)
	end := time.Now()
	displayed := 0
	for _, f := range res.Frames {
		if f.WasDisplayed() {
			displayed++
		}
	}
	require.NotZero(t, displayed, "the run displayed no frame")
	t.Logf("run of %v (handshake %v) displayed %d frames, %d decisions", res.Ran, res.Handshake.Round(time.Millisecond), displayed, len(res.Decisions))

	// A scrape after the run's end makes sure Prometheus holds everything
	// up to the evaluation instant.
	sel := fmt.Sprintf(`lab_frames_sent_total{scenario=%q}`, sc.Name)
	prom.waitFor(t, "a scrape after the run", 5*time.Second, func() (bool, error) {
		r, err := prom.query("timestamp("+sel+")", time.Time{})
		return len(r) == 1 && r[0].value*1000 >= float64(end.UnixMilli()), err
	})
	runRange := promDuration(res.Ran)
	r, err := prom.query(fmt.Sprintf("count_over_time(%s[%s])", sel, runRange), end)
	require.NoError(t, err)
	require.Len(t, r, 1)
	require.GreaterOrEqual(t, r[0].value, 4.0, "scrapes during the %v run: every %v, fewer means Prometheus could not keep up", res.Ran, scrapeEvery)

	for _, choice := range []struct{ name, value string }{{"all", ".*"}, {"scenario", sc.Name}} {
		values := map[string]string{"__rate_interval": rateInterval, "__interval": interval, "__range": runRange}
		for _, b := range builtins {
			require.Contains(t, values, b, "a value for each of Grafana's variables")
		}
		for _, d := range ds {
			for _, v := range d.Templating.List {
				values[v.Name] = choice.value
			}
			for _, q := range d.queries() {
				t.Run(choice.name+"/"+q.name, func(t *testing.T) {
					expr, err := expand(q.expr, values)
					require.NoError(t, err)
					r, err := prom.query(expr, end)
					require.NoError(t, err, "%s", expr)
					require.NotEmpty(t, r, "no series: %s", expr)
					// The largest finite value, for the log: a zero of an
					// unused drop reason says less than the busy one.
					top := -1
					for i, s := range r {
						if !math.IsNaN(s.value) && !math.IsInf(s.value, 0) && (top < 0 || s.value > r[top].value) {
							top = i
						}
					}
					require.GreaterOrEqual(t, top, 0, "no finite value among %d series: %s", len(r), expr)
					t.Logf("%d series, largest %v = %g", len(r), r[top].labels, r[top].value)
				})
			}
		}
	}

	// The Scenario selector lists the run's scenario.
	for _, d := range ds {
		for _, v := range d.Templating.List {
			metric, label, err := variableQuery(v)
			require.NoError(t, err)
			got, err := prom.labelValues(label, metric, end.Add(-res.Ran), end)
			require.NoError(t, err)
			require.Contains(t, got, sc.Name, "%s: variable %s offers %v", d.file, v.Name, got)
		}
	}
	t.Logf("wall time %v", time.Since(began).Round(time.Millisecond))
}

// promDuration writes d as a Prometheus range in whole milliseconds.
func promDuration(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// promProcess is a Prometheus server the test started.
type promProcess struct {
	url    string
	log    *lockedBuffer
	exited chan struct{} // closed when the process has exited
	client *http.Client
}

// startPrometheus starts Prometheus scraping target every scrapeEvery,
// with its storage in a temporary folder; the test's cleanup kills it and
// waits for it, before the folder is removed.
//
// Prometheus takes a fixed listen address, so a free port is found by
// listening on port 0 and closing: another process may take the port in
// between, in which case Prometheus exits at once and a new port is tried.
func startPrometheus(t *testing.T, bin, target string) *promProcess {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `global:
  scrape_interval: %[1]v
  scrape_timeout: %[1]v
scrape_configs:
  - job_name: lab
    static_configs:
      - targets: [%[2]q]
`, scrapeEvery, target), 0o644))
	var errs []error
	for attempt := range 3 {
		p, err := tryPrometheus(t, bin, cfg, filepath.Join(dir, fmt.Sprintf("data-%d", attempt)))
		if err == nil {
			return p
		}
		errs = append(errs, err)
	}
	t.Fatalf("prometheus did not start: %v", errors.Join(errs...))
	return nil
}

func tryPrometheus(t *testing.T, bin, cfg, data string) (*promProcess, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, err
	}
	p := &promProcess{url: "http://" + addr, log: &lockedBuffer{}, exited: make(chan struct{}), client: &http.Client{Timeout: 5 * time.Second}}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+data, "--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = cmd.Wait() // killed at the end: its status says nothing
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})

	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := p.client.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-tick.C:
		case <-p.exited:
			return nil, fmt.Errorf("prometheus on %s exited at start:\n%s", addr, p.log)
		case <-deadline.C:
			return nil, fmt.Errorf("prometheus on %s not ready after 15s:\n%s", addr, p.log)
		}
	}
}

// waitFor polls cond until it holds, failing the test after timeout or if
// Prometheus exits, with its log.
func (p *promProcess) waitFor(t *testing.T, what string, timeout time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok && err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-p.exited:
			t.Fatalf("prometheus exited while waiting for %s:\n%s", what, p.log)
		case <-deadline.C:
			t.Fatalf("no %s after %v (last error: %v); prometheus log:\n%s", what, timeout, err, p.log)
		}
	}
}

// sample is one series of an instant query's result.
type sample struct {
	labels map[string]string
	value  float64
}

// query evaluates expr at the instant at (the server's now when zero)
// through the HTTP API, as Grafana does for an instant query.
func (p *promProcess) query(expr string, at time.Time) ([]sample, error) {
	v := url.Values{"query": {expr}}
	if !at.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	}
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := p.get("/api/v1/query?"+v.Encode(), &data); err != nil {
		return nil, err
	}
	switch data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(data.Result, &vec); err != nil {
			return nil, err
		}
		out := make([]sample, 0, len(vec))
		for _, s := range vec {
			f, err := sampleValue(s.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, sample{labels: s.Metric, value: f})
		}
		return out, nil
	case "scalar":
		var s [2]any
		if err := json.Unmarshal(data.Result, &s); err != nil {
			return nil, err
		}
		f, err := sampleValue(s)
		return []sample{{value: f}}, err
	}
	return nil, fmt.Errorf("query %q: result type %q, want an instant vector or scalar", expr, data.ResultType)
}

// sampleValue reads a [timestamp, "value"] pair; the value is a string so
// that NaN and the infinities survive JSON.
func sampleValue(v [2]any) (float64, error) {
	s, ok := v[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v[1])
	}
	return strconv.ParseFloat(s, 64)
}

// labelValues lists the values of label on the series of metric between
// from and to, as Grafana's label_values(metric, label) does.
func (p *promProcess) labelValues(label, metric string, from, to time.Time) ([]string, error) {
	v := url.Values{
		"match[]": {metric},
		"start":   {strconv.FormatInt(from.Unix(), 10)},
		"end":     {strconv.FormatInt(to.Unix()+1, 10)},
	}
	var out []string
	err := p.get("/api/v1/label/"+url.PathEscape(label)+"/values?"+v.Encode(), &out)
	return out, err
}

// get calls the HTTP API and decodes its data into data.
func (p *promProcess) get(path string, data any) error {
	resp, err := p.client.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("%s: HTTP %s: %w", path, resp.Status, err)
	}
	if body.Status != "success" {
		return fmt.Errorf("%s: %s: %s", path, body.ErrorType, body.Error)
	}
	return json.Unmarshal(body.Data, data)
}

// lockedBuffer collects the process's output, written by exec's copying
// goroutines while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
