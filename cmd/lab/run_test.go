package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/result"
)

// lab run as a new user runs it: a library scenario in real time with
// /metrics on loopback. A scrape during the run sees frames displayed; at
// the end the output gives the summary and the result file, which reads
// back as a result of the scenario.
func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	var out, status bytes.Buffer // read only once runCmd has returned
	go func() {
		done <- runCmd(context.Background(),
			[]string{"-scenario", "lan-animation", "-duration", "3s", "-metrics", "127.0.0.1:0", "-out", dir},
			&out, &status, func(a string) { addrs <- a })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("lab run ended before serving metrics: %v\n%s", err, out.String())
	}
	require.NotEmpty(t, addr)

	// Scrape as Prometheus would until the viewer has displayed frames.
	// The deadline bounds a failure; a passing run gets there about when
	// the lead ends.
	displayed := 0.0
	deadline := time.Now().Add(30 * time.Second)
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for displayed == 0 {
		require.True(t, time.Now().Before(deadline), "no frame displayed on /metrics within 30 s")
		select {
		case err := <-done:
			t.Fatalf("lab run ended before /metrics showed a displayed frame: %v\n%s", err, out.String())
		case <-poll.C:
		}
		displayed = scrape(t, "http://"+addr+"/metrics", metrics.FramesDisplayed)
	}
	require.Positive(t, displayed)

	require.NoError(t, <-done)
	text := out.String()
	resultPath := filepath.Join(dir, "lan-animation.json")
	require.Contains(t, text, "metrics on http://"+addr+"/metrics")
	require.Contains(t, text, "summary: ")
	require.Contains(t, text, "latency median ")
	// lan-animation's bands were measured over [1s, 20s): a 3 s run
	// does not judge them, and says so rather than pass or fail.
	require.Contains(t, text, "checks: 0 passed, 0 failed, 2 not judged (the run is shorter than their window)")
	require.Contains(t, text, "estimate.error.max [1s, 20s), want >= 0.086 ms and <= 0.17 ms: not judged (the run lasted 3s, and this window ends at 20s)")
	require.Contains(t, text, "result in "+resultPath)
	require.Contains(t, status.String(), "latency median (last 1s)")

	res, err := result.Read(resultPath)
	require.NoError(t, err)
	require.Equal(t, "lan-animation", res.Scenario)
	require.Equal(t, 3*time.Second, res.Duration)
	require.Empty(t, res.Interrupted)
	require.Positive(t, res.Summary.Displayed)
	require.Positive(t, res.Links.Down.DeliveredPackets, "the proxy's counters reach the result")
	require.NotEmpty(t, res.Checks)
}

// scrape reads one counter from a /metrics page, summed over its series;
// 0 while it has none.
func scrape(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		require.NoError(t, err, line)
		sum += v
	}
	require.NoError(t, sc.Err())
	return sum
}

// Mistakes on lab run's command line are explained, not run.
func TestRunFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-scenario is required"},
		{[]string{"-scenario", "lan-animation", "-duration", "-1s"}, "must not be negative"},
		{[]string{"-scenario", "lan-animation", "extra"}, `unexpected argument "extra"`},
		{[]string{"-scenario", "lan-animation", "-out", ""}, "-out must name a folder"},
		{[]string{"-scenario", "lan-animation", "-engine", "namespaces"}, `-engine "namespaces": expected proxy or kernel`},
		{[]string{"-scenario", "lan-animation", "-engine", "kernel", "-capture", "x"}, "-capture with -engine kernel: the kernel mode records no packets"},
	} {
		_, err := parseRun(c.args, &bytes.Buffer{})
		require.ErrorContains(t, err, c.want, c.args)
	}
	var out bytes.Buffer
	err := runCmd(context.Background(), []string{"-scenario", "no-such-scenario"}, &out, &out, nil)
	require.ErrorContains(t, err, `no scenario "no-such-scenario" in the library`)
}

// The status line's median reads the last second's buckets as
// histogram_quantile would: interpolated inside the bucket holding it.
func TestMedianSince(t *testing.T) {
	prev := histogram{count: 10, bounds: []float64{0.01, 0.02, 0.05}, cum: []uint64{10, 10, 10}}
	// Ten more, all between 10 ms and 20 ms: the median is the bucket's middle.
	cur := histogram{count: 20, bounds: prev.bounds, cum: []uint64{10, 20, 20}}
	d, ok := cur.medianSince(prev)
	require.True(t, ok)
	require.Equal(t, 15*time.Millisecond, d)
	_, ok = cur.medianSince(cur)
	require.False(t, ok, "nothing observed in the last second")
	// Beyond every bound: the highest one, not an invention.
	over := histogram{count: 30, bounds: prev.bounds, cum: []uint64{10, 20, 20}}
	d, ok = over.medianSince(cur)
	require.True(t, ok)
	require.Equal(t, 50*time.Millisecond, d)
}
