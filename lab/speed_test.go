package lab

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The speed measurements are tests behind a flag rather than benchmarks: a
// session runs in virtual time only inside a synctest bubble, and
// synctest.Test takes a *testing.T, never a *testing.B (TestRealSpeed is
// the same pattern). Each measurement is one run; -count repeats it:
//
//	go test ./lab -run '^TestSessionSpeed$' -sessionspeed -count 3 -v
//	go test ./lab -run '^TestLibrarySpeed$' -sessionspeed -count 3 -v
var sessionSpeed = flag.Bool("sessionspeed", false, "measure how fast sessions and the scenario library run in virtual time (TestSessionSpeed, TestLibrarySpeed)")

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSessionSpeed is what a session costs: 20 s of the full-screen
// animation on the LAN at a fixed bitrate, for 4, 16, 64 and 256 Mbit/s,
// in CPU microseconds per packet the links carried (both directions) and
// in how much faster than real time it runs. The figures are the
// machine's, so it runs only when asked.
func TestSessionSpeed(t *testing.T) {
	if !*sessionSpeed {
		t.Skip("run with -sessionspeed")
	}
	for _, mbps := range []int64{4, 16, 64, 256} {
		t.Run(fmt.Sprintf("%dMbps", mbps), func(t *testing.T) {
			s := Session{Seed: 1, Duration: 20 * time.Second, Uplink: lan(), Downlink: lan()}
			s.Agent.Controller = agent.Fixed{Bps: mbps * 1_000_000}
			cryptotest.SetGlobalRandom(t, s.Seed)
			var res *Result
			cpu0, start := cpuTime(t), time.Now()
			synctest.Test(t, func(t *testing.T) {
				var err error
				res, err = RunSession(s)
				if err != nil {
					t.Fatal(err)
				}
			})
			wall, cpu := time.Since(start), cpuTime(t)-cpu0
			packets := res.Uplink.Delivered.Packets + res.Downlink.Delivered.Packets
			if packets == 0 {
				t.Fatal("the links carried no packet")
			}
			t.Logf("%d Mbit/s, GOMAXPROCS %d: %v of session in %v wall, %.1fx real time; %v CPU for %d packets (%d down, %d up): %.2f us CPU per packet, %.2f per packet down",
				mbps, runtime.GOMAXPROCS(0), s.Duration, wall.Round(time.Millisecond), s.Duration.Seconds()/wall.Seconds(),
				cpu.Round(time.Millisecond), packets, res.Downlink.Delivered.Packets, res.Uplink.Delivered.Packets,
				float64(cpu.Microseconds())/float64(packets), float64(cpu.Microseconds())/float64(res.Downlink.Delivered.Packets))
			benchLine(t, wall, "us-cpu/packet", float64(cpu.Microseconds())/float64(packets), "x-real-time", s.Duration.Seconds()/wall.Seconds())
		})
	}
}

// TestLibrarySpeed runs every scenario of the library, in parallel in
// their own bubbles as the suite does, and reports the wall time, the
// sessions' total seconds and how much faster than real time they ran
// together. It runs the scenarios itself rather than through the suite's
// runLibraryScenario, which runs each scenario once per test binary and so
// would time nothing on the second -count.
func TestLibrarySpeed(t *testing.T) {
	if !*sessionSpeed {
		t.Skip("run with -sessionspeed")
	}
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatalf("the scenario library does not load:\n%v", err)
	}
	var total time.Duration
	var skipped atomic.Int32
	cpu0, start := cpuTime(t), time.Now()
	t.Run("all", func(t *testing.T) {
		for _, sc := range estimate.Native.Longest(lib) {
			total += sc.Duration
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					_, err := Run(t.Context(), sc)
					if errors.Is(err, ErrSharedAbsent) {
						skipped.Add(1)
						return
					}
					if err != nil {
						t.Errorf("%s: %v", sc.Name, err)
					}
				})
			})
		}
	})
	wall, cpu := time.Since(start), cpuTime(t)-cpu0
	t.Logf("library: %d scenarios (%d without the shared folder), %.0f s of sessions in %v wall, %.0fx real time; %v CPU",
		len(lib), skipped.Load(), total.Seconds(), wall.Round(time.Millisecond), total.Seconds()/wall.Seconds(), cpu.Round(time.Millisecond))
	benchLine(t, wall, "x-real-time", total.Seconds()/wall.Seconds(), "session-s", total.Seconds())
}

// benchLine prints the figures as a line of go test -bench output (one
// iteration, the wall time as ns/op, then metric value pairs; the name
// ends in -GOMAXPROCS as a benchmark's does, so that -cpu 1,2 runs stay
// apart), so that benchstat can compare runs before and after a change:
//
//	go test ./lab -run Speed -sessionspeed -count 10 | benchstat -
func benchLine(t *testing.T, wall time.Duration, metrics ...any) {
	line := fmt.Sprintf("Benchmark%s-%d\t1\t%d ns/op", strings.TrimPrefix(t.Name(), "Test"), runtime.GOMAXPROCS(0), wall.Nanoseconds())
	for i := 0; i+1 < len(metrics); i += 2 {
		line += fmt.Sprintf("\t%.4g %s", metrics[i+1], metrics[i])
	}
	fmt.Println(line)
}
