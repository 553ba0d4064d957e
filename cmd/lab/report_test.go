package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/plots/plotstest"
)

func writeResult(t *testing.T, path string, r *result.Run) {
	t.Helper()
	data, err := json.MarshalIndent(r, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// A folder (as make suite writes it) and a file render as one report: a
// summary row per result, the CDF, and each result's two plots, as files
// beside report.md and inside report.html.
func TestReportRendersResults(t *testing.T) {
	in := t.TempDir()
	folder := filepath.Join(in, "results")
	writeResult(t, filepath.Join(folder, "wired.json"), plotstest.Result("wired", 0))
	require.NoError(t, os.WriteFile(filepath.Join(folder, "summary.md"), []byte("not a result"), 0o644))
	wifi := filepath.Join(in, "wifi.json")
	writeResult(t, wifi, plotstest.Result("wifi", 40*time.Millisecond))

	dir := filepath.Join(t.TempDir(), "report")
	var out bytes.Buffer
	require.NoError(t, report([]string{"-out", dir, folder, wifi}, &out))
	require.Contains(t, out.String(), filepath.Join(dir, "report.html"))
	require.Contains(t, out.String(), "2 results")

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	// The synthetic result: 34 ms of latency most of the time, 28 fps
	// (drops and a freeze), one freeze of 433 ms, a passing and a failing
	// check.
	require.Contains(t, string(md), "| scenario | median latency (ms) | p95 latency (ms) | fps | freezes | freeze.longest (ms) | checks |")
	require.Regexp(t, `\| wired \| 34\.0 \| \d+\.\d \| 28\.\d \| 1 \| 433\.3 \| \*\*1/2 FAIL\*\* \|`, string(md))
	require.Regexp(t, `\| wifi \| 74\.0 \| `, string(md))
	require.Contains(t, string(md), "2 results: 0 passed every check, 2 failed at least one.")
	require.Contains(t, string(md), "## wired\n")
	require.Contains(t, string(md), "Downlink: from 0s: rate 8 Mbit/s, delay 10ms; from 4s: rate 2 Mbit/s, delay 10ms.")
	require.Contains(t, string(md), "| latency.median \\[0s, 10s) = 34 ms, want <= 100 ms | pass |")
	require.Contains(t, string(md), "| fps \\[0s, 10s) = 28.2, want >= 35 | **FAIL**: below the required minimum |")
	figures := []string{"latency-cdf.png", "wired-latency.png", "wired-stages.png", "wired-stages-time.png",
		"wifi-latency.png", "wifi-stages.png", "wifi-stages-time.png"}
	for _, name := range figures {
		require.Contains(t, string(md), "]("+name+")")
		f, err := os.Open(filepath.Join(dir, name))
		require.NoError(t, err)
		_, err = png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	require.Equal(t, len(figures), strings.Count(string(page), `src="data:image/png;base64,`))
}

func TestReportRefusesWhatIsNotAResult(t *testing.T) {
	in := t.TempDir()
	newer := plotstest.Result("x", 0)
	newer.Schema = "latencylab.result/v2"
	writeResult(t, filepath.Join(in, "newer.json"), newer)
	require.NoError(t, os.WriteFile(filepath.Join(in, "codecs.json"), []byte(`{"iters": 200}`), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(in, "empty"), 0o755))

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{filepath.Join(in, "newer.json")}, []string{filepath.Join(in, "newer.json"), `"latencylab.result/v2"`, `"latencylab.result/v1"`}},
		{[]string{filepath.Join(in, "codecs.json")}, []string{filepath.Join(in, "codecs.json"), `schema ""`, `"latencylab.result/v1"`}},
		{[]string{filepath.Join(in, "empty")}, []string{"no .json result in this folder"}},
		{[]string{filepath.Join(in, "missing.json")}, []string{"missing.json"}},
		{nil, []string{"name result files or folders"}},
	} {
		err := report(append([]string{"-out", filepath.Join(t.TempDir(), "r")}, c.args...), &bytes.Buffer{})
		require.Error(t, err, "%v", c.args)
		for _, w := range c.want {
			require.ErrorContains(t, err, w, "%v", c.args)
		}
	}
}

// Runs of one scenario from several files (seeds, variants) keep apart.
func TestReportLabelsRunsOfOneScenario(t *testing.T) {
	entries := []reportEntry{
		{file: "a/x.json", result: &result.Run{Scenario: "lan"}},
		{file: "b/y.json", result: &result.Run{Scenario: "lan"}},
		{file: "b/lan-y.json", result: &result.Run{Scenario: "lan y"}},
		{file: "c/odd name.json", result: &result.Run{}},
		{file: "d/1.json", result: &result.Run{Scenario: "wan", Encoder: "x11vnc-zrle"}},
		{file: "d/2.json", result: &result.Run{Scenario: "wan", Encoder: "xvnc-zrle"}},
		{file: "d/3.json", result: &result.Run{Scenario: "wan", Encoder: "xvnc-zrle"}},
	}
	label(entries)
	var got [][2]string
	for _, e := range entries {
		got = append(got, [2]string{e.label, e.slug})
	}
	require.Equal(t, [][2]string{
		{"lan (x.json)", "lan-x.json"},
		{"lan (y.json)", "lan-y.json"},
		{"lan y", "lan-y"},
		{"odd name", "odd-name"},
		{"wan (x11vnc-zrle)", "wan-x11vnc-zrle"},
		{"wan (2.json)", "wan-2.json"},
		{"wan (3.json)", "wan-3.json"},
	}, got)
}

// A report of home-download, run as the library has it, shows its flows:
// a row for the session and one for the download with its share of the
// downlink (77-81% over the download's last 15 s at the library's seeds,
// a little less over its whole 20 s, which start with slow start), and
// the figure of the flows over time.
func TestReportShowsFlows(t *testing.T) {
	sc, err := loadScenario("home-download")
	require.NoError(t, err)
	in := filepath.Join(t.TempDir(), "home-download.json")
	cryptotest.SetGlobalRandom(t, sc.Seed)
	synctest.Test(t, func(t *testing.T) {
		r, err := lab.Run(context.Background(), sc)
		require.NoError(t, err)
		writeResult(t, in, r)
	})
	dir := filepath.Join(t.TempDir(), "report")
	require.NoError(t, report([]string{"-out", dir, in}, &bytes.Buffer{}))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	text := string(md)
	require.Contains(t, text, "| flow | kind | direction | start | stop | throughput (Mbit/s) | share | median latency (ms) | p95 latency (ms) |")
	require.Regexp(t, `\| `+"`main`"+` \| the session \| down \| 0s \| 30s \| \d+\.\d\d \| \d+\.\d% \| \d+\.\d \| \d+\.\d \|`, text)
	m := regexp.MustCompile(`\| ` + "`download`" + ` \| tcp-bulk, TCP-like CUBIC \| down \| 10s \| 30s \| (\d+\.\d\d) \| (\d+\.\d)% \| - \| - \|`).FindStringSubmatch(text)
	require.NotNil(t, m, "the download's row:\n%s", text)
	share, err := strconv.ParseFloat(m[2], 64)
	require.NoError(t, err)
	require.Greater(t, share, 60.0, "the download takes most of the downlink")
	require.Contains(t, text, "](home-download-flows.png)")
	require.NotContains(t, text, "fairness index", "one media session: no fairness")
	f, err := os.Open(filepath.Join(dir, "home-download-flows.png"))
	require.NoError(t, err)
	defer f.Close()
	_, err = png.Decode(f)
	require.NoError(t, err)
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	require.Contains(t, string(page), "tcp-bulk, TCP-like CUBIC")
}

// The flows' table leaves out what a flow does not have (a share over an
// uncapped link, a latency of a flow without frames), and a run with a
// second session gives Jain's index.
func TestReportFlowsTable(t *testing.T) {
	r := plotstest.WithTraffic(plotstest.Result("home", 0))
	fair := 0.9
	r.Summary.Fairness = &fair
	in := filepath.Join(t.TempDir(), "home.json")
	writeResult(t, in, r)
	dir := filepath.Join(t.TempDir(), "report")
	require.NoError(t, report([]string{"-out", dir, in}, &bytes.Buffer{}))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	text := string(md)
	require.Contains(t, text, "| `main` | the session | down | 0s | 10s | 2.00 | - | 34.0 | ")
	require.Contains(t, text, "| `download` | tcp-bulk, TCP-like CUBIC | down | 2s | 8s | 2.00 | 50.0% | - | - |")
	require.Contains(t, text, "| `voice` | cbr, 64 kbit/s in 160-byte datagrams | up | 0s | 10s | 0.06 | - | - | - |")
	require.Contains(t, text, "Jain's fairness index over the media sessions on the downlink (`fairness.jain`, the whole run): 0.900")
	require.Contains(t, text, "](home-flows.png)")
}
