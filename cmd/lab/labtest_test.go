package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/lab/exact"
	"github.com/nuvirahub/latencylab/lab/filetest"
	"github.com/nuvirahub/latencylab/lab/result"
)

// sharedExact is the package's one runner of exact sessions, built and
// compiled on first use (the compiled guest is cached in the user's cache
// folder, as in use), as lab/exact's tests share theirs: every lab test
// run here reuses it.
var sharedExact = sync.OnceValues(func() (*exact.Runner, error) {
	return exact.Open(context.Background(), exact.Options{Root: filepath.Join("..", "..")})
})

func sharedRunner(context.Context, string, io.Writer) (*exact.Runner, func(), error) {
	r, err := sharedExact()
	return r, func() {}, err
}

// Two small scenarios of a user's: one that meets its expectations, one
// that misses one of its two. 3 s each, on the library's defaults.
const (
	passingScenario = `name: quick-lan
description: A fast link; the picture stays quick.
duration: 3s
network:
  both: {delay: 5ms, rate: 20Mbit/s}
expect:
  - {measure: latency.median, max: 100ms, from: 1s}
  - {measure: fps, min: 40}
`
	failingScenario = `name: hopeful-bound
description: The same link, with a bound no link can meet.
duration: 3s
network:
  both: {delay: 5ms, rate: 20Mbit/s}
expect:
  - {measure: fps, min: 40}
  - {measure: latency.median, max: 1ms, from: 1s}
`
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
}

// runLabTest runs lab test with the shared runner and returns its exit
// status and output.
func runLabTest(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := labTest(t.Context(), args, &stdout, &stderr, sharedRunner)
	return code, stdout.String(), stderr.String()
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	return data
}

// lab test runs a user's files exact: exit 0 when every expectation is
// met, 1 when one is not; the result JSONs, summary.md, the report and the
// JUnit XML are written; a session's result is the same to the byte in
// another run, with another session beside it and another -j.
func TestLabTest(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	writeFiles(t, mine, map[string]string{"pass.yaml": passingScenario, "fail.yaml": failingScenario, "notes.txt": "not a scenario"})

	one := filepath.Join(dir, "one")
	code, stdout, stderr := runLabTest(t, "-out", one, "-j", "1", filepath.Join(mine, "pass.yaml"))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Regexp(t, `(?m)^\[1/1\] pass +quick-lan +seed 1 +[0-9.]+ s wall  latency median [0-9.]+ ms, p95 [0-9.]+ ms, [0-9.]+ fps, \d+ freezes?; checks 2/2$`, stdout)
	require.Contains(t, stdout, "| quick-lan | 1 | pass |")
	require.Contains(t, stdout, "1 session: 1 passed, 0 failed, 0 errors, 0 skipped")
	require.Contains(t, stdout, "in "+one)
	for _, f := range []string{"quick-lan.json", "summary.md", "report.md", "report.html", "latency-cdf.png", "quick-lan-latency.png"} {
		require.FileExists(t, filepath.Join(one, f))
	}

	// Flags after the folder, as people write them; a seed named.
	two := filepath.Join(dir, "two")
	junit := filepath.Join(dir, "ci", "junit.xml")
	code, stdout, stderr = runLabTest(t, mine, "-out", two, "-junit", junit, "-seeds", "1", "-j", "2")
	require.Equal(t, 1, code, "an expectation not met: stdout:\n%s\nstderr:\n%s", stdout, stderr)
	failPath := filepath.Join(mine, "fail.yaml")
	require.Contains(t, stdout, "    "+failPath+":8: latency.median over [1s, 3s) = ", "the progress line names the file and line of the expectation missed")
	require.Contains(t, stdout, "2 sessions: 1 passed, 1 failed, 0 errors, 0 skipped")
	require.Contains(t, string(readFile(t, filepath.Join(two, "summary.md"))), "| hopeful-bound | 1 | FAIL |")
	for _, f := range []string{"quick-lan-seed1.json", "hopeful-bound-seed1.json", "report.md", "report.html"} {
		require.FileExists(t, filepath.Join(two, f))
	}
	require.Contains(t, string(readFile(t, filepath.Join(two, "report.md"))), "## hopeful-bound seed 1")

	// Exact: the same session is the same result to the byte, alone at
	// -j 1 or beside another at -j 2. A result holds no wall time.
	alone := readFile(t, filepath.Join(one, "quick-lan.json"))
	require.Equal(t, string(alone), string(readFile(t, filepath.Join(two, "quick-lan-seed1.json"))))
	require.NotContains(t, string(alone), "wall")
	r, err := result.Read(filepath.Join(two, "hopeful-bound-seed1.json"))
	require.NoError(t, err)
	require.False(t, r.Passed())
	require.Equal(t, 8, r.Checks[1].Line, "the line in the user's file")

	// The JUnit XML: a suite per session, a case for the session and one
	// per expectation, a failure where one was missed.
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			File  string `xml:"file,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Line    int    `xml:"line,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(readFile(t, junit), &doc))
	require.Equal(t, 6, doc.Tests)
	require.Equal(t, 1, doc.Failures)
	var suites []string
	for _, s := range doc.Suites {
		suites = append(suites, s.Name)
	}
	require.Equal(t, []string{"hopeful-bound seed 1", "quick-lan seed 1"}, suites)
	failing := doc.Suites[0]
	require.Equal(t, failPath, failing.File)
	require.Len(t, failing.Cases, 3)
	require.Equal(t, "session", failing.Cases[0].Name)
	require.Equal(t, "fps [0s, 3s) >= 40", failing.Cases[1].Name)
	require.Nil(t, failing.Cases[1].Failure)
	require.Equal(t, "latency.median [1s, 3s) <= 1 ms", failing.Cases[2].Name)
	require.Equal(t, 8, failing.Cases[2].Line)
	require.Regexp(t, `^`+regexp.QuoteMeta(failPath)+`:8: latency\.median over \[1s, 3s\) = [0-9.]+ ms, want <= 1 ms$`, failing.Cases[2].Failure.Message)
	for _, c := range doc.Suites[1].Cases {
		require.Nil(t, c.Failure, c.Name)
	}
}

// Bad input is exit status 2, every mistake of every file printed at once
// with its file and line, and nothing runs or is written.
func TestLabTestBadInput(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken")
	writeFiles(t, broken, map[string]string{
		"a.yaml": "name: a\ndescription: d\nduration: 3\n",
		"b.yaml": "name: b\ndescription: d\nduration: 3s\nnetwork:\n  both: {delay: 5ms, los: 1%}\nexpect:\n  - {measure: latency.mediam, max: 1ms}\n",
	})
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runLabTest(t, "-out", out, broken)
	require.Equal(t, 2, code)
	require.Empty(t, stdout)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 4, stderr)
	require.Equal(t, filepath.Join(broken, "a.yaml")+":3: duration: 3 is missing a unit: expected a duration like 25ms, 1.5s or 500us", lines[0])
	require.True(t, strings.HasPrefix(lines[1], filepath.Join(broken, "b.yaml")+`:5: network.both.los: unknown key "los": did you mean loss?`), lines[1])
	require.True(t, strings.HasPrefix(lines[2], filepath.Join(broken, "b.yaml")+`:7: expect[0].measure: unknown measurement "latency.mediam": did you mean latency.median?`), lines[2])
	require.Equal(t, "lab test: 3 mistakes in the scenario files: nothing ran", lines[3])
	require.NoDirExists(t, out)

	for _, args := range [][]string{
		{},
		{"-seeds", "1,x", broken},
		{"-j", "-1", broken},
		{"-exact", "maybe", broken},
		{"-nope", broken},
		{filepath.Join(dir, "nowhere.yaml")},
	} {
		code, _, stderr := runLabTest(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
		require.NotEmpty(t, stderr, "%v says why", args)
	}
	_, _, stderr = runLabTest(t, "-seeds", "1,x", broken)
	require.Equal(t, "lab test: -seeds: seeds \"1,x\": \"x\" is not a seed (a whole number from 0)\n", stderr)

	code, _, stderr = runLabTest(t, "-h")
	require.Equal(t, 0, code, "help is asked for, not a failure")
	require.Contains(t, stderr, "usage: lab test [flags] FILE|DIR...")
	require.Contains(t, stderr, "-junit")
}

// A scenario that replays a trace of ../shared that is not there: where
// the shared folder is absent altogether, it is skipped, and fails with
// LAB_REQUIRE_SHARED=1, as in the suite; where the folder is there (as in
// CI), the name is the file's mistake, exit status 2 with its line.
func TestLabTestSharedTraceAbsent(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lte.yaml")
	writeFiles(t, dir, map[string]string{"lte.yaml": `name: shared-lte
description: Replays a recording the shared folder does not have.
duration: 3s
network:
  down: {delay: 20ms, trace: "shared:no-such-recording.down"}
`})
	junit := filepath.Join(dir, "junit.xml")
	t.Setenv(needs.Shared, "")
	code, stdout, stderr := runLabTest(t, "-out", filepath.Join(dir, "out"), "-junit", junit, file)
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "traces", "mahimahi")); err == nil {
		require.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.Contains(t, stderr, file+`:5: network.down.trace: no shared trace "no-such-recording.down" in `)
		require.Contains(t, stderr, "nothing ran")
		require.NoFileExists(t, junit)
		return
	}
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stdout, "skipped shared-lte")
	require.Contains(t, stdout, "mahimahi does not exist")
	require.Contains(t, stdout, "1 session: 0 passed, 0 failed, 0 errors, 1 skipped")
	require.Contains(t, string(readFile(t, junit)), `<skipped message="`)
	require.Contains(t, string(readFile(t, filepath.Join(dir, "out", "report.md"))), "Sessions without a result")

	t.Setenv(needs.Shared, "1")
	code, stdout, _ = runLabTest(t, "-out", filepath.Join(dir, "out"), file)
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "LAB_REQUIRE_SHARED=1 requires it")
}

// -exact=false runs the files natively through the job's entry point in
// worker processes, with the same progress, judging and outputs; a lab
// that is a test binary (as this one, and make dist's) runs the job in a
// copy of itself, with no go command on PATH.
func TestLabTestNatively(t *testing.T) {
	t.Setenv("PATH", "")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pass.yaml": passingScenario, "fail.yaml": failingScenario})
	out := filepath.Join(dir, "out")
	code, stdout, stderr := runLabTest(t, "-exact=false", "-out", out, "-junit", filepath.Join(out, "junit.xml"), dir)
	require.Equal(t, 1, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Regexp(t, `(?m)^\[\d/2\] pass +quick-lan +seed 1 `, stdout)
	require.Regexp(t, `(?m)^\[\d/2\] FAIL +hopeful-bound +seed 1 `, stdout)
	require.Contains(t, stdout, "2 sessions: 1 passed, 1 failed, 0 errors, 0 skipped")
	require.Contains(t, stdout, "ran natively")
	require.NotRegexp(t, `(?m)^(PASS|ok  )`, stdout, "go test's own closing lines are left out")
	r, err := result.Read(filepath.Join(out, "hopeful-bound.json"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "fail.yaml"), r.File, "the path as given, though the job runs in lab/jobs")
	require.Equal(t, 8, r.Checks[1].Line)
	require.FileExists(t, filepath.Join(out, "report.html"))
	require.FileExists(t, filepath.Join(out, "junit.xml"))
}

// An exact run hands what only a native process can run (here an
// ECN-capable session, whose marks the WebAssembly guest's quic-go cannot
// set) to native workers after the exact sessions, and says so, rather
// than failing it.
func TestLabTestNativeOnlyScenarioRunsNatively(t *testing.T) {
	dir := t.TempDir()
	ecn := strings.Replace(passingScenario, "name: quick-lan", "name: ecn-lan\necn: classic", 1)
	writeFiles(t, dir, map[string]string{"pass.yaml": passingScenario, "ecn.yaml": ecn})
	code, stdout, stderr := runLabTest(t, "-out", filepath.Join(dir, "out"), dir)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	require.Contains(t, stderr, "1 scenario only a native process can run (ecn-lan): natively, in worker processes")
	require.Regexp(t, `(?m)^\[1/1\] pass +ecn-lan +seed 1 `, stdout)
	require.Regexp(t, `(?m)^\[1/1\] pass +quick-lan +seed 1 `, stdout)
	require.Contains(t, stdout, "2 sessions: 2 passed, 0 failed, 0 errors, 0 skipped")
	require.Contains(t, stdout, "ran exact, and natively in worker processes what only a native process can run")
}

// lab help test is lab test -h.
func TestParseTestFlagsAnywhere(t *testing.T) {
	o, err := parseTest([]string{"a.yaml", "-seeds", "3", "b", "-j", "4", "--", "-odd.yaml"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"a.yaml", "b", "-odd.yaml"}, o.paths)
	require.Equal(t, []uint64{3}, o.seeds)
	require.Equal(t, 4, o.parallel)
	require.True(t, o.exact, "exact by default")
	require.Equal(t, "out/test", o.out)
}

// A folder of a user's own: its defaults.yaml, a trace beside the files,
// and a scenario that replays a segment of it from an offset. lab test
// runs it exact and writes the report and the JUnit XML; the result
// records the segment (4 Mbit/s of video uses a third of it; it would
// overflow the slow half), and a second run gives the same bytes.
func TestLabTestOwnTraceSegment(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	writeFiles(t, mine, map[string]string{
		"defaults.yaml":    "duration: 3s\nseed: 7\ncontroller: {bitrate: 4Mbit/s}\nagent: {frame_sizes: budget}\nscreen: [{at: 0s, source: animation}]\n",
		"traces/cell.down": twoSpeedTrace(),
		"segment.yaml": `name: fast-segment
description: The fast half of a recording beside the file, from 4 s on.
network:
  up: {delay: 20ms}
  down: {delay: 20ms, trace: {file: traces/cell.down, offset: 4s}}
expect:
  - {measure: latency.median, max: 150ms, from: 1s}
  - {measure: utilisation.sent, min: 20%, max: 60%, from: 1s}
`,
	})

	outs := []string{filepath.Join(dir, "one"), filepath.Join(dir, "two")}
	for _, out := range outs {
		junit := filepath.Join(out, "junit.xml")
		code, stdout, stderr := runLabTest(t, "-out", out, "-junit", junit, mine)
		require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		require.Contains(t, stdout, "1 session: 1 passed, 0 failed, 0 errors, 0 skipped")
		for _, f := range []string{"fast-segment.json", "report.md", "report.html", "junit.xml"} {
			require.FileExists(t, filepath.Join(out, f))
		}
	}
	first := readFile(t, filepath.Join(outs[0], "fast-segment.json"))
	require.Equal(t, string(first), string(readFile(t, filepath.Join(outs[1], "fast-segment.json"))), "exact: the same bytes from a second run")

	r, err := result.Read(filepath.Join(outs[0], "fast-segment.json"))
	require.NoError(t, err)
	require.Equal(t, uint64(7), r.Seed, "the folder's defaults.yaml")
	path := filepath.Join(mine, "traces", "cell.down")
	require.Equal(t, "trace "+path+" from 4s, delay 20ms", r.Network.Down[0].Description, "the trace is found beside the file, from its offset")
	for _, pt := range r.Series {
		require.InEpsilon(t, 12.032e6, pt.Down.CapacityBps, 1e-9, "the fast segment throughout (%v-%v)", pt.From, pt.To)
	}
}

// lab test's estimate counts a session per scenario, or per scenario and
// seed with -seeds, with the model of the way they run.
func TestLabTestEstimate(t *testing.T) {
	scs, err := filetest.Load([]string{filepath.Join("..", "..", "docs", "own-scenarios")}, "")
	require.NoError(t, err)
	require.Len(t, scs, 2)
	o, err := parseTest([]string{"-j", "2", "docs/own-scenarios"}, io.Discard)
	require.NoError(t, err)
	line := testEstimate(o, scs)
	t.Log(line)
	require.Equal(t, estimate.Exact.Line(scs, 2), line)
	require.True(t, strings.HasPrefix(line, "estimate: 2 sessions, 20s of session time,"), line)

	o, err = parseTest([]string{"-j", "1", "-exact=false", "-seeds", "1,2,3", "docs/own-scenarios"}, io.Discard)
	require.NoError(t, err)
	line = testEstimate(o, scs)
	require.True(t, strings.HasPrefix(line, "estimate: 6 sessions, 1m0s of session time,"), line)
	require.Contains(t, line, " native on 1 core ")
}
