package metrics_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
	"github.com/nuvirahub/latencylab/viewer"
)

// squeezed is a short ABR run over a link too narrow for its start: the
// ABR must decide, the small queue overflows and the loss drops packets,
// so every family has something to count.
const squeezed = `name: metrics-squeezed
description: A short ABR run over a narrow, lossy link, for the metrics tests.
duration: 6s
network:
  both:
    - {at: 0s, delay: 10ms, loss: 1%, rate: 1500kbit/s, queue: {packets: 40}}
controller: {kind: abr, bitrate: 4Mbit/s}
`

// run is one run of squeezed with metrics, gathered inside the bubble
// that made them.
type run struct {
	result     *result.Run
	families   map[string]*dto.MetricFamily
	exposition []byte // text format 0.0.4, as /metrics serves it by default
	problems   []promlint.Problem
}

func runSqueezed(t *testing.T) run {
	t.Helper()
	sc, err := scenarios.Parse("metrics-squeezed.yaml", []byte(squeezed), nil)
	require.NoError(t, err)
	cryptotest.SetGlobalRandom(t, sc.Seed)
	var out run
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg, prometheus.Labels{"scenario": sc.Name})
		require.NoError(t, err)
		out.result, err = lab.RunWithMetrics(context.Background(), sc, m)
		require.NoError(t, err)
		fams, err := reg.Gather()
		require.NoError(t, err)
		out.families = map[string]*dto.MetricFamily{}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, f := range fams {
			out.families[f.GetName()] = f
			require.NoError(t, enc.Encode(f))
		}
		out.exposition = buf.Bytes()
		out.problems, err = testutil.GatherAndLint(reg)
		require.NoError(t, err)
	})
	return out
}

// value is the counter's or gauge's value of the series with the labels
// (name, value pairs); the histogram's count for a histogram.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "family %s missing", name)
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	require.Failf(t, "series missing", "%s%v", name, labels)
	return 0
}

func TestSessionMetrics(t *testing.T) {
	r := runSqueezed(t)
	res, fams := r.result, r.families
	require.Empty(t, r.problems, "promlint")

	var displayed, arrived int
	var sent, latency float64
	for _, f := range res.Frames {
		if f.WasDisplayed() {
			displayed++
			latency += f.Latency.Seconds()
		}
		if f.Arrived > 0 {
			arrived++
		}
		if f.Sent > 0 {
			sent += float64(f.Bytes)
		}
	}
	require.NotZero(t, displayed)
	require.Equal(t, float64(displayed), value(t, fams, metrics.FrameLatency), "latency histogram count = frames displayed")
	require.Equal(t, float64(displayed), value(t, fams, metrics.FramesDisplayed))
	require.InDelta(t, latency, fams[metrics.FrameLatency].Metric[0].GetHistogram().GetSampleSum(), 1e-6)
	require.Equal(t, float64(arrived), value(t, fams, metrics.FrameNetworkLatency))
	require.Equal(t, sent, value(t, fams, metrics.VideoSentBytes))
	require.Equal(t, "metrics-squeezed", fams[metrics.FramesDisplayed].Metric[0].GetLabel()[0].GetValue(), "constant label")

	skips, drops, asks := map[string]int{}, map[string]int{}, map[string]int{}
	for _, e := range res.Events {
		switch e.Kind {
		case result.EventSkip:
			skips[e.Reason]++
		case result.EventDrop:
			drops[e.Reason]++
		case result.EventAsk:
			asks[e.Reason]++
		}
	}
	for _, kind := range []string{viewer.AskKeyframe, viewer.AskRefresh} {
		require.Equal(t, float64(asks[kind]), value(t, fams, metrics.RepairsAsked, "kind", kind), "repairs asked %s", kind)
	}
	var damaged int
	for _, f := range res.Frames {
		if f.WasDisplayed() && f.Damaged {
			damaged++
		}
	}
	require.Equal(t, float64(damaged), value(t, fams, metrics.FramesDamaged))
	for reason, n := range skips {
		require.Equal(t, float64(n), value(t, fams, metrics.FramesSkipped, "reason", reason), "skipped %s", reason)
	}
	for reason, n := range drops {
		require.Equal(t, float64(n), value(t, fams, metrics.FramesDropped, "reason", reason), "dropped %s", reason)
	}

	rules := map[string]int{}
	for _, d := range res.Decisions {
		rules[d.Rule]++
	}
	require.NotEmpty(t, rules, "the ABR must decide on a link that narrow")
	for rule, n := range rules {
		require.Equal(t, float64(n), value(t, fams, metrics.ABRDecisions, "rule", rule), "decisions %s", rule)
	}
	require.Equal(t, float64(res.Targets[len(res.Targets)-1].Bps)/8, value(t, fams, metrics.ABRTargetRate))

	for dir, total := range map[string]result.LinkTotal{metrics.Up: res.Links.Up, metrics.Down: res.Links.Down} {
		require.Equal(t, float64(total.DeliveredBytes), value(t, fams, metrics.LinkDeliveredBytes, "direction", dir), dir)
		for reason, n := range total.Dropped {
			require.Equal(t, float64(n), value(t, fams, metrics.LinkDroppedPackets, "direction", dir, "reason", reason), "%s %s", dir, reason)
		}
	}
	require.NotZero(t, res.Links.Down.Dropped[string(netem.DropQueue)]+res.Links.Down.Dropped[string(netem.DropLoss)], "the run must drop")
	last := res.Series[len(res.Series)-1]
	require.Equal(t, float64(last.Down.QueueBytes), value(t, fams, metrics.LinkQueueBytes, "direction", metrics.Down))
	require.Equal(t, last.Down.QueueDelay.Seconds(), value(t, fams, metrics.LinkQueueDelay, "direction", metrics.Down))

	// The export of the same run ends where the live figures did.
	var om bytes.Buffer
	require.NoError(t, lab.WriteOpenMetrics(&om, res, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	wantDisplayed := 0
	for _, f := range res.Frames {
		if f.WasDisplayed() && f.Displayed < last.To {
			wantDisplayed++
		}
	}
	endAt := float64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(last.To).UnixMilli()) / 1000
	v, at := lastSample(t, om.String(), metrics.FramesDisplayed+`{scenario="metrics-squeezed"}`)
	require.Equal(t, float64(wantDisplayed), v)
	require.Equal(t, endAt, at)
	v, at = lastSample(t, om.String(), metrics.LinkDeliveredBytes+`{direction="down",scenario="metrics-squeezed"}`)
	require.Equal(t, float64(res.Links.Down.DeliveredBytes), v)
	require.Equal(t, endAt, at)
	require.True(t, strings.HasSuffix(om.String(), "\n# EOF\n"))

	t.Run("promtool", func(t *testing.T) {
		promtool := needPromtool(t)
		dir := t.TempDir()
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(r.exposition)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool check metrics:\n%s", out)
		require.Empty(t, strings.TrimSpace(string(out)), "promtool check metrics has remarks")

		file := filepath.Join(dir, "run.om")
		require.NoError(t, os.WriteFile(file, om.Bytes(), 0o644))
		out, err = exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data")).CombinedOutput()
		require.NoError(t, err, "promtool tsdb create-blocks-from openmetrics:\n%s", out)
		blocks, err := filepath.Glob(filepath.Join(dir, "data", "*", "meta.json"))
		require.NoError(t, err)
		require.NotEmpty(t, blocks, "no block written:\n%s", out)
	})
}

// needPromtool finds promtool, skipping when it is absent unless
// LAB_REQUIRE_PROMETHEUS=1 (CI), which makes its absence a failure.
func needPromtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	msg := "promtool not found in PATH (Debian: apt-get install prometheus); it checks the exposition and the OpenMetrics export"
	if os.Getenv("LAB_REQUIRE_PROMETHEUS") == "1" {
		t.Fatal(msg + ", and LAB_REQUIRE_PROMETHEUS=1 requires it")
	}
	t.Skip(msg + "; set LAB_REQUIRE_PROMETHEUS=1 to make this a failure")
	return ""
}

func TestNewRegistersAllOrNothing(t *testing.T) {
	_, err := metrics.New(nil, nil)
	require.Error(t, err)

	reg := prometheus.NewRegistry()
	// A clash on the last family must leave none of the others behind.
	require.NoError(t, reg.Register(prometheus.NewCounterVec(prometheus.CounterOpts{Name: metrics.LinkDroppedPackets, Help: "x"}, []string{"direction", "reason"})))
	_, err = metrics.New(reg, nil)
	require.Error(t, err)
	fams, err := reg.Gather()
	require.NoError(t, err)
	require.Empty(t, fams, "only the clashing family, which has no series")

	two := prometheus.NewRegistry()
	_, err = metrics.New(two, prometheus.Labels{"run": "a"})
	require.NoError(t, err)
	_, err = metrics.New(two, prometheus.Labels{"run": "b"})
	require.NoError(t, err, "runs with distinct labels share a registry")
	_, err = metrics.New(two, prometheus.Labels{"run": "a"})
	require.Error(t, err)
}

func TestNilMetricsDoNothing(t *testing.T) {
	var m *metrics.Metrics
	m.FrameSent(1)
	m.FrameArrived(time.Millisecond)
	m.FrameDisplayed(time.Millisecond)
	m.FrameSkipped("x")
	m.FrameDropped("x")
	m.Target(1)
	m.Decision("x")
	m.Link(metrics.Up, metrics.LinkSample{})
}

func TestLinkSampleOf(t *testing.T) {
	prev := netem.Stats{
		Delivered: netem.Counter{Packets: 10, Bytes: 10_000},
		Queued:    netem.QueueStats{Packets: 10, Total: 100 * time.Millisecond},
		Dropped:   map[netem.DropReason]netem.Counter{netem.DropQueue: {Packets: 2, Bytes: 2400}},
	}
	cur := netem.Stats{
		Delivered: netem.Counter{Packets: 14, Bytes: 15_000},
		Queued:    netem.QueueStats{Packets: 14, Total: 180 * time.Millisecond},
		Dropped:   map[netem.DropReason]netem.Counter{netem.DropQueue: {Packets: 2, Bytes: 2400}, netem.DropLoss: {Packets: 1, Bytes: 1200}},
		Backlog:   netem.Counter{Packets: 3, Bytes: 3600},
	}
	require.Equal(t, metrics.LinkSample{
		QueueBytes:     3600,
		QueueDelay:     20 * time.Millisecond,
		DeliveredBytes: 5000,
		Dropped:        map[string]uint64{"loss": 1},
	}, metrics.LinkSampleOf(prev, cur))
	require.Equal(t, metrics.LinkSample{QueueBytes: 3600}, metrics.LinkSampleOf(cur, cur))
}

func TestHandlerServesOpenMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, nil)
	require.NoError(t, err)
	m.FrameDisplayed(40 * time.Millisecond)
	rec := httptestRecorder(t, metrics.Handler(reg), "application/openmetrics-text")
	require.Contains(t, rec, "# TYPE lab_frames_displayed counter\nlab_frames_displayed_total 1")
	require.True(t, strings.HasSuffix(rec, "# EOF\n"))
}

// httptestRecorder serves one GET of h accepting accept and returns the body.
func httptestRecorder(t *testing.T, h http.Handler, accept string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

// lastSample is the value and timestamp of series' last line in an
// OpenMetrics text.
func lastSample(t *testing.T, text, series string) (value, at float64) {
	t.Helper()
	var line string
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, series+" ") {
			line = l
		}
	}
	require.NotEmpty(t, line, "no sample of %s", series)
	fields := strings.Fields(strings.TrimPrefix(line, series))
	require.Len(t, fields, 2, "value and timestamp: %q", line)
	value, err := strconv.ParseFloat(fields[0], 64)
	require.NoError(t, err)
	at, err = strconv.ParseFloat(fields[1], 64)
	require.NoError(t, err)
	return value, at
}

// NewLinks exposes the links' families and nothing of frames or
// controllers, which a program's traffic does not have.
func TestNewLinksRegistersOnlyTheLinks(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.NewLinks(reg, prometheus.Labels{"scenario": "x"})
	require.NoError(t, err)
	m.Link(metrics.Up, metrics.LinkSample{DeliveredBytes: 1500, Dropped: map[string]uint64{"loss": 2}})
	m.FrameDisplayed(40 * time.Millisecond)
	fams, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
	}
	require.ElementsMatch(t, []string{metrics.LinkQueueBytes, metrics.LinkQueueDelay, metrics.LinkDeliveredBytes, metrics.LinkDroppedPackets}, names)
	up := 0.0
	for _, mt := range fams[indexOf(names, metrics.LinkDeliveredBytes)].GetMetric() {
		for _, l := range mt.GetLabel() {
			if l.GetName() == "direction" && l.GetValue() == metrics.Up {
				up = mt.GetCounter().GetValue()
			}
		}
	}
	require.Equal(t, 1500.0, up)
	_, err = metrics.NewLinks(reg, prometheus.Labels{"scenario": "x"})
	require.Error(t, err, "the same labels twice")
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

// shared is a short session on a home link beside a download from 2 s and
// a voice call going up, for the flows' metrics.
const shared = `name: metrics-shared
description: A short session beside a download and an upward voice call, for the flows' metrics.
duration: 6s
network:
  down: {delay: 15ms, rate: 20Mbit/s, queue: {bytes: 256KB}}
  up: {delay: 15ms, rate: 5Mbit/s, queue: {bytes: 256KB}}
controller: {kind: abr, bitrate: 4Mbit/s}
traffic:
  - {name: download, kind: tcp-bulk, start: 2s}
  - {name: voice, kind: cbr, direction: up, rate: 64kbit/s, size: 160B}
`

// A session with traffic exports each flow's payload by flow and
// direction, the session's own video as main, and each flow's share of
// its link over the last period: the live figures end where the result's
// do, and the export of the same run ends at the same values.
func TestFlowMetrics(t *testing.T) {
	sc, err := scenarios.Parse("metrics-shared.yaml", []byte(shared), nil)
	require.NoError(t, err)
	cryptotest.SetGlobalRandom(t, sc.Seed)
	var res *result.Run
	var fams map[string]*dto.MetricFamily
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg, prometheus.Labels{"scenario": sc.Name})
		require.NoError(t, err)
		res, err = lab.RunWithMetrics(context.Background(), sc, m)
		require.NoError(t, err)
		gathered, err := reg.Gather()
		require.NoError(t, err)
		fams = map[string]*dto.MetricFamily{}
		for _, f := range gathered {
			fams[f.GetName()] = f
		}
		problems, err := testutil.GatherAndLint(reg)
		require.NoError(t, err)
		require.Empty(t, problems, "promlint")
	})
	last := res.Series[len(res.Series)-1]
	var mainBytes int64
	for _, f := range res.Frames {
		if f.Arrived > 0 && f.Arrived < last.To {
			mainBytes += int64(f.Bytes)
		}
	}
	require.Equal(t, float64(mainBytes), value(t, fams, metrics.FlowDeliveredBytes, "flow", "main", "direction", "down"))
	for _, f := range res.Traffic {
		var sum int64
		for _, b := range f.Delivered {
			sum += b
		}
		require.Positive(t, sum, f.Name)
		require.Equal(t, float64(sum), value(t, fams, metrics.FlowDeliveredBytes, "flow", f.Name, "direction", f.Direction), f.Name)
		share, err := measure.OfWith(res, "flow.share", last.From, last.To, measure.Params{Flow: f.Name})
		require.NoError(t, err)
		require.InDelta(t, share, value(t, fams, metrics.FlowShare, "flow", f.Name, "direction", f.Direction), 1e-9, f.Name)
	}
	download := value(t, fams, metrics.FlowShare, "flow", "download", "direction", "down")
	require.Greater(t, download, 0.3, "the download takes a good part of the downlink")

	var om bytes.Buffer
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, lab.WriteOpenMetrics(&om, res, start))
	v, _ := lastSample(t, om.String(), metrics.FlowDeliveredBytes+`{direction="down",flow="download",scenario="metrics-shared"}`)
	require.Equal(t, value(t, fams, metrics.FlowDeliveredBytes, "flow", "download", "direction", "down"), v)
	v, _ = lastSample(t, om.String(), metrics.FlowShare+`{direction="down",flow="download",scenario="metrics-shared"}`)
	require.InDelta(t, download, v, 1e-9)

	// Without traffic, no flow series: the session's video is the frames'.
	r := runSqueezed(t)
	require.Empty(t, r.families[metrics.FlowDeliveredBytes].GetMetric())
}
