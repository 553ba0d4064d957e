package exact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/sessionproc"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// shared is the package's one Runner, built and compiled on first use
// (the compiled guest is cached in the user's cache folder, as in use).
var shared = sync.OnceValues(func() (*Runner, error) {
	var log strings.Builder
	r, err := Open(context.Background(), Options{Root: filepath.Join("..", ".."), Log: &log})
	if err == nil {
		fmt.Print(log.String())
	}
	return r, err
})

func open(t *testing.T) *Runner {
	t.Helper()
	r, err := shared()
	require.NoError(t, err)
	return r
}

func library(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, sc := range lib {
		if sc.Name == name {
			c := *sc
			c.Expect = nil // they belong to the full length
			return &c
		}
	}
	t.Fatalf("no scenario %s in the library", name)
	return nil
}

// The property the package is for: the same lossy session, run in several
// instances side by side, gives the same result to the byte; another seed
// gives another. (Natively, this session has two outcomes: see the
// package comment.)
func TestSameSeedSameResult(t *testing.T) {
	r := open(t)
	sc := library(t, "abr-lossy")
	sc.Duration = 10 * time.Second
	sc.Seed = 2
	other := *sc
	other.Seed = 3
	// Three instances of seed 2 and one of seed 3, all side by side: the
	// other seed's session waits for no core the others leave free.
	scs := []*scenarios.Scenario{sc, sc, sc, &other}
	var results [][]byte
	for _, res := range runSideBySide(t, []*Runner{r, r, r, r}, scs) {
		results = append(results, marshal(t, res))
	}
	require.Greater(t, len(results[0]), 10000, "a 10 s session has frames")
	require.Len(t, r.Guest(), 16)
	for i := 1; i < 3; i++ {
		require.Equal(t, string(results[0]), string(results[i]), "instance %d", i)
	}
	require.NotEqual(t, string(results[0]), string(results[3]), "another seed, another session")
}

// The guest reads the host's files where the host has them: a shared
// trace through the read-only mount, relative to the module's root. A
// session that fails inside the instance comes back as the result's error,
// and a guest that cannot be built says why.
func TestFilesAndErrors(t *testing.T) {
	r := open(t)
	sc := library(t, "cellular-verizon-lte")
	sc.Duration = 3 * time.Second
	sc.Expect = nil
	res, err := r.Run(context.Background(), sc)
	require.NoError(t, err)
	if res.Skipped {
		t.Logf("the trace part is skipped: %s", res.Err)
	} else {
		require.Empty(t, res.Err)
		require.Positive(t, res.Result.Summary.Displayed)
	}

	// A shared trace the folder does not hold: where the folder is there,
	// a mistake the guest's loader refuses; where it is not, a run
	// skipped for the folder.
	sc.Network.Down[0].Trace = &scenarios.Trace{File: "shared:no-such-trace.down"}
	res, err = r.Run(context.Background(), sc)
	require.NoError(t, err)
	if _, absent := scenarios.TracePath("", "shared:Verizon-LTE-short.down"); errors.Is(absent, scenarios.ErrSharedAbsent) {
		require.Contains(t, res.Err, "does not exist (the shared folder sits beside the repository)")
		require.True(t, res.Skipped)
	} else {
		require.Contains(t, res.Err, `network.down[0].trace: no shared trace "no-such-trace.down" in `)
		require.False(t, res.Skipped, "a misspelled name fails: it is not a reason to skip")
	}

	_, err = Build(context.Background(), t.TempDir())
	require.ErrorContains(t, err, "building the guest")
}

// A user's own scenario, in a folder of its own, replaying a segment of a
// trace beside it (a relative path, an offset): exact, in a worker's code
// (sessionproc, as a worker process serves it) and natively, from another
// working directory, the links carry the trace from the offset. The trace
// is slow for 5 s, then ten times faster: from the offset, the video gets
// through at a rate the slow half could not carry.
func TestOwnScenarioReplaysATraceSegment(t *testing.T) {
	r := open(t)
	dir := t.TempDir()
	var b strings.Builder
	for ms := 0; ms < 5000; ms += 10 { // 1.2 Mbit/s
		fmt.Fprintln(&b, ms)
	}
	for ms := 5000; ms < 10000; ms++ { // 12 Mbit/s
		fmt.Fprintln(&b, ms)
	}
	fmt.Fprintln(&b, 10000)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "traces"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "traces", "segment.down"), []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "own.yaml"), []byte(`name: own-segment
description: A user's scenario replaying the fast half of a trace beside it.
duration: 3s
seed: 1
network:
  up: {delay: 20ms}
  down: {delay: 20ms, trace: {file: traces/segment.down, offset: 5s}}
controller: {bitrate: 4Mbit/s}
agent: {frame_sizes: budget}   # a video at its 4 Mbit/s, whatever the content
`), 0o644))
	t.Chdir(dir)
	sc, err := scenarios.LoadFile("own.yaml")
	require.NoError(t, err)
	t.Chdir(t.TempDir()) // the runs need no working directory of the scenario's

	trace := filepath.Join(dir, "traces", "segment.down")
	check := func(how string, res *result.Run) {
		t.Helper()
		require.Equal(t, []result.PhaseInfo{{Description: "trace " + trace + " from 5s, delay 20ms", Trace: trace}}, res.Network.Down, how)
		require.NotEmpty(t, res.Series, how)
		for _, pt := range res.Series {
			// One opportunity a millisecond from the offset on: 12.032
			// Mbit/s, ten times what the trace offers from its start.
			require.InEpsilon(t, 1000*netem.TraceMTU*8, pt.Down.CapacityBps, 1e-9, "%s: %v-%v", how, pt.From, pt.To)
		}
		got := float64(res.Links.Down.DeliveredBytes*8) / res.Duration.Seconds()
		require.Greater(t, got, 2*1.2032e6, "%s: the link carried the fast segment", how)
		t.Logf("%s: downlink delivered %.2f Mbit/s, latency median %v", how, got/1e6, res.Summary.Latency.Median)
	}

	res, err := r.Run(context.Background(), sc)
	require.NoError(t, err)
	require.Empty(t, res.Err)
	check("exact", res.Result)

	item, err := sessionproc.NewItem(sc)
	require.NoError(t, err)
	line, err := json.Marshal(item)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, sessionproc.Serve(t, bytes.NewReader(append(line, '\n')), &out, "result "))
	res, err = sessionproc.FindResult(out.Bytes(), "result ")
	require.NoError(t, err)
	require.Empty(t, res.Err)
	check("worker", res.Result)

	var native *result.Run
	synctest.Test(t, func(t *testing.T) {
		native, err = lab.Run(t.Context(), sc)
	})
	require.NoError(t, err)
	check("native", native)
}

// A session with competing traffic is as exact as any: the flows' random
// choices come from the seed, and in an instance nothing else decides. The
// library's home download, cut to 12 s with the download from 4 s, gives
// the same result to the byte twice, traffic and all.
func TestTrafficSameSeedSameResult(t *testing.T) {
	r := open(t)
	sc := library(t, "home-download")
	sc.Duration = 12 * time.Second
	sc.Traffic = slices.Clone(sc.Traffic)
	sc.Traffic[0].Start = 4 * time.Second
	// The two instances side by side, as TestSameSeedSameResult's: one
	// core each, and nothing shared that could decide.
	var got [2][]byte
	for i, res := range runSideBySide(t, []*Runner{r, r}, []*scenarios.Scenario{sc, sc}) {
		require.Len(t, res.Result.Traffic, 1)
		require.Positive(t, res.Result.Traffic[0].DeliveredBytes)
		got[i] = marshal(t, res)
	}
	require.Equal(t, string(got[0]), string(got[1]))
}

// The guest's collector runs only where the guest asks (before the
// session, then at whole seconds of its virtual time), so a GOGC given to
// the guest cannot move a result: pipeline-capture-lock-old, which the
// guest's GOGC moved while the collector kept its own pace (a median of
// 141 ms at GOGC=50, 112 ms at 400), gives the same bytes with GOGC at 50
// and at 400.
func TestGuestGOGCDoesNotMoveAResult(t *testing.T) {
	r := open(t)
	sc := library(t, "pipeline-capture-lock-old")
	var rs []*Runner
	for _, gogc := range []string{"GOGC=50", "GOGC=400"} {
		g, err := r.WithEnv(gogc)
		require.NoError(t, err)
		rs = append(rs, g)
	}
	var runs [2][]byte
	for i, res := range runSideBySide(t, rs, []*scenarios.Scenario{sc, sc}) {
		runs[i] = marshal(t, res)
	}
	require.Positive(t, len(runs[0]))
	sameBytes(t, runs[0], runs[1], "GOGC=50 and GOGC=400")
}

// sameBytes fails where two results part, with what is around it (a
// whole result is too long to show).
// runSideBySide runs scs[i] on rs[i], all at once, each in an instance of
// its own, and returns their results in order; a run that fails, or whose
// session failed, fails t.
func runSideBySide(t *testing.T, rs []*Runner, scs []*scenarios.Scenario) []sessionproc.Result {
	t.Helper()
	require.Len(t, rs, len(scs))
	results := make([]sessionproc.Result, len(scs))
	errs := make(chan error, len(scs))
	for i := range scs {
		go func() {
			var err error
			results[i], err = rs[i].Run(context.Background(), scs[i])
			errs <- err
		}()
	}
	for range scs {
		require.NoError(t, <-errs)
	}
	for i, res := range results {
		require.Empty(t, res.Err, "session %d", i)
	}
	return results
}

// marshal is a result's JSON, the bytes the tests compare.
func marshal(t *testing.T, res sessionproc.Result) []byte {
	t.Helper()
	b, err := json.Marshal(res.Result)
	require.NoError(t, err)
	return b
}

func sameBytes(t *testing.T, a, b []byte, what string) {
	t.Helper()
	if bytes.Equal(a, b) {
		return
	}
	i := 0
	for i < min(len(a), len(b)) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	t.Fatalf("%s: the results part at byte %d of %d and %d:\n%s\n---\n%s", what, i, len(a), len(b),
		a[from:min(len(a), i+100)], b[from:min(len(b), i+100)])
}

// A scenario with the real encoder is refused before any instance starts,
// saying why and where it runs instead.
func TestRealEncoderRunsNativelyOnly(t *testing.T) {
	sc := &scenarios.Scenario{Name: "real", Agent: scenarios.Agent{Encoder: "openh264-real"}}
	err := Supports(sc)
	require.ErrorIs(t, err, ErrNative)
	require.ErrorContains(t, err, "WebAssembly, which cannot run cgo: run it natively")
	require.NoError(t, Supports(&scenarios.Scenario{Name: "model", Agent: scenarios.Agent{Encoder: "openh264-asm"}}))
}

// An ECN-capable session is refused too: the guest's quic-go has no
// out-of-band conn, so its packets would go unmarked.
func TestECNSessionRunsNativelyOnly(t *testing.T) {
	err := Supports(&scenarios.Scenario{Name: "ecn", ECN: "classic"})
	require.ErrorIs(t, err, ErrNative)
	require.ErrorContains(t, err, "sets ecn")
	err = Supports(&scenarios.Scenario{Name: "ecn", Traffic: []scenarios.Flow{
		{Name: "d", Kind: "tcp-bulk", ECN: "l4s"}, {Name: "q", Kind: "quic-bulk", ECN: "classic"}}})
	require.ErrorIs(t, err, ErrNative)
	require.ErrorContains(t, err, "sets traffic[1].ecn")
	require.NoError(t, Supports(&scenarios.Scenario{Name: "tcp", Traffic: []scenarios.Flow{{Name: "d", Kind: "tcp-bulk", ECN: "l4s"}}}),
		"the TCP-like model's ECN is the network's own: exact")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExactSession is what an exact session costs: abr-lossy (one
// of the sweep's scenarios) with the budget's frame sizes, cut to 1 s and
// to 10 s, seed 2, in a fresh
// instance per iteration, as the sweep and lab test run them. The two
// lengths part what every session pays (an instance, the guest's start,
// the result's way out) from what each session second costs. It reports
// how much faster than real time the session ran (x-real-time), and
// checks that each session was the one it names (abrLossyRan); compare
// builds with benchstat:
//
//	go test ./lab/exact -run '^$' -bench ExactSession -benchtime 3x -count 3
func BenchmarkExactSession(b *testing.B) {
	r, err := shared()
	if err != nil {
		b.Fatal(err)
	}
	lib, err := scenarios.Library()
	if err != nil {
		b.Fatal(err)
	}
	i := slices.IndexFunc(lib, func(sc *scenarios.Scenario) bool { return sc.Name == "abr-lossy" })
	if i < 0 {
		b.Fatal("no abr-lossy in the library")
	}
	for _, d := range []time.Duration{time.Second, 10 * time.Second} {
		b.Run(d.String(), func(b *testing.B) {
			sc := *lib[i]
			sc.Expect, sc.Duration, sc.Seed = nil, d, 2
			// The budget's sizes, the load this benchmark has always timed
			// (a video at the ABR's target): the library's abr-lossy takes
			// OpenH264's, whose repairs make every second a different load.
			sc.Agent.FrameSizes = "budget"
			cpu0 := cpuTime(b)
			for b.Loop() {
				res, err := r.Run(context.Background(), &sc)
				if err == nil && res.Err != "" {
					err = errors.New(res.Err)
				}
				if err != nil {
					b.Fatal(err)
				}
				abrLossyRan(b, &sc, res.Result)
			}
			perSession := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(sc.Duration.Seconds()/perSession.Seconds(), "x-real-time")
			// The process's CPU for one session (one instance at a time:
			// the host's share, its garbage collector's, is in it too),
			// which the machine's other work moves less than the wall.
			cpu := (cpuTime(b) - cpu0) / time.Duration(b.N)
			b.ReportMetric(cpu.Seconds(), "cpu-s/op")
			b.ReportMetric(sc.Duration.Seconds()/cpu.Seconds(), "x-real-time-cpu")
		})
	}
}

// abrLossyRan fails the benchmark unless r is a whole session of sc,
// abr-lossy with the budget's sizes: the adaptive bitrate starts above
// what the link carries, so in the first second the video handed to QUIC
// is at least the bottleneck's capacity (within 10%). A session whose
// encoder sent less would time a lighter load under abr-lossy's name.
func abrLossyRan(b *testing.B, sc *scenarios.Scenario, r *result.Run) {
	b.Helper()
	if r == nil || r.Ran != sc.Duration || r.Interrupted != "" {
		b.Fatalf("%s: the session did not run its %v: %+v", sc.Name, sc.Duration, r)
	}
	var sent, capacity float64
	for _, p := range r.Series {
		if p.To > time.Second {
			break
		}
		sent += p.SendBps * (p.To - p.From).Seconds()
		capacity += p.Down.CapacityBps * (p.To - p.From).Seconds()
	}
	if capacity == 0 || sent < 0.9*capacity {
		b.Errorf("%s: the video handed to QUIC in the first second was %.2f Mbit, want at least the link's %.2f within 10%% (the ABR starts at %.1f Mbit/s)",
			sc.Name, sent/1e6, capacity/1e6, float64(r.Targets[0].Bps)/1e6)
	}
}
