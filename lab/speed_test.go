package lab

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/lab/estimate"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/netem"
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
//
// Each session checks that it carried the bitrate it is named after
// (speedCarries), and 64 Mbit/s at least 8 times the packets of 4: a
// figure per packet or per second of a session that carried less would
// time another workload under this one's name. The encoder is the H.264
// model with the budget's frame sizes (the scenario library's default,
// frame_sizes: budget): every frame spends its share of the target,
// whatever the content. A Session built in Go otherwise gets OpenH264's
// calibrated sizes, which send the painted animation at about 2 Mbit/s
// whatever the target: before the sessions here took the budget's sizes,
// each carried about 12 400 packets at every bitrate.
func TestSessionSpeed(t *testing.T) {
	if !*sessionSpeed {
		t.Skip("run with -sessionspeed")
	}
	packets := map[int64]uint64{}
	for _, mbps := range []int64{4, 16, 64, 256} {
		t.Run(fmt.Sprintf("%dMbps", mbps), func(t *testing.T) {
			s, video := speedSession(mbps * 1_000_000)
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
			packets[mbps] = res.Uplink.Delivered.Packets + res.Downlink.Delivered.Packets
			speedCarries(t, s, res, video)
			t.Logf("%d Mbit/s, GOMAXPROCS %d: %v of session in %v wall, %.1fx real time; %v CPU for %d packets (%d down, %d up): %.2f us CPU per packet, %.2f per packet down",
				mbps, runtime.GOMAXPROCS(0), s.Duration, wall.Round(time.Millisecond), s.Duration.Seconds()/wall.Seconds(),
				cpu.Round(time.Millisecond), packets[mbps], res.Downlink.Delivered.Packets, res.Uplink.Delivered.Packets,
				float64(cpu.Microseconds())/float64(packets[mbps]), float64(cpu.Microseconds())/float64(res.Downlink.Delivered.Packets))
			benchLine(t, wall, "us-cpu/packet", float64(cpu.Microseconds())/float64(packets[mbps]), "x-real-time", s.Duration.Seconds()/wall.Seconds())
		})
	}
	// Sixteen times the bitrate is about fifteen times the video's packets
	// (each frame's last packet is partial); with the acknowledgements, which
	// grow more slowly, at least 8 times in all.
	if lo, hi := packets[4], packets[64]; lo > 0 && hi > 0 && hi < 8*lo {
		t.Errorf("64 Mbit/s carried %d packets, %.1f times the %d of 4 Mbit/s: want at least 8 times", hi, float64(hi)/float64(lo), lo)
	}
}

// The QUIC packets of a session on the in-memory network. quic-go sends
// packets of its initial size, 1280 bytes of UDP payload: the in-memory
// PacketConn cannot set the DF bit, so path MTU discovery never grows them
// (see engines_test.go). Of those bytes a packet carrying one stream's
// data spends on the rest up to speedQUICOverhead: the short header (a
// byte, quic-go's 4-byte connection ID, up to 4 bytes of packet number),
// the AEAD's 16-byte tag and the STREAM frame's type, stream ID, offset
// and length (1 + 2 + up to 4 + up to 2 bytes at these sizes).
const (
	speedQUICPacket   = 1280
	speedQUICOverhead = 1 + 4 + 4 + 16 + 1 + 2 + 4 + 2
	// speedVideoPacket is the smallest packet counted as the video's: the
	// downlink's other packets (acknowledgements, control messages) are
	// under 100 bytes, and a frame's last packet at the speed sessions'
	// bitrates is about 880 bytes.
	speedVideoPacket = 256
)

// speedSession is the session TestSessionSpeed runs at bps, and the stage
// that counts the packets its downlink carries.
func speedSession(bps int64) (Session, *videoCounter) {
	video := &videoCounter{}
	s := Session{Seed: 1, Duration: 20 * time.Second, Uplink: lan(), Downlink: append(lan(), video)}
	s.Agent.Controller = agent.Fixed{Bps: bps}
	// Two limits of the defaults held the 256 Mbit/s session to 192 Mbit/s
	// (it carried 590 thousand packets, not the 770 thousand of 256), and
	// neither is what it measures. The animation needs
	// encoder.DefaultFullScreenBits times its area and detail a frame, which
	// fills a frame's budget only up to about 190 Mbit/s at 60 Hz: a frame
	// whose need is twice its budget spends the budget. The send cap (N8)
	// holds a frame back while 256 KB are unacknowledged, half a frame at
	// 256 Mbit/s: four frames' bytes let every frame go. Below 190 Mbit/s
	// neither changes the session.
	frameBits := float64(bps) / agent.DefaultRefresh
	s.Agent.Software = budgetPreset()
	s.Agent.Software.FullScreenBits = max(encoder.DefaultFullScreenBits, 2*frameBits)
	s.Agent.SendCap = max(agent.DefaultSendCap, int(4*frameBits/8))
	return s, video
}

// videoCounter is a gate-stage impairment that lets every packet through
// at once and counts those of at least speedVideoPacket bytes, the
// video's, and the largest.
type videoCounter struct {
	packets, largest int
}

func (*videoCounter) Kind() string       { return "count" }
func (*videoCounter) Stage() netem.Stage { return netem.StageGate }
func (c *videoCounter) Apply(p *netem.Packet, at time.Time, _ *netem.Env) netem.Verdict {
	if n := p.Size(); n >= speedVideoPacket {
		c.packets++
		c.largest = max(c.largest, n)
	}
	return netem.Verdict{At: at}
}

// speedCarries fails the test unless the session carried what its bitrate
// needs, within 10%: on the downlink, the bitrate's bytes over the session
// (with a frame header each and a packet's overhead for each packet), and
// the video's packets, each frame's bytes in packets of speedQUICPacket.
func speedCarries(t *testing.T, s Session, res *Result, video *videoCounter) {
	t.Helper()
	bps := s.Agent.Controller.(agent.Fixed).Bps
	frames := int(s.Duration.Seconds() * agent.DefaultRefresh)
	frameBytes := float64(bps)/8/agent.DefaultRefresh + wire.FrameHeaderSize
	data := float64(speedQUICPacket - speedQUICOverhead)
	full := math.Floor(frameBytes / data)
	perFrame := full
	if tail := frameBytes - full*data; tail > 0 && tail+speedQUICOverhead >= speedVideoPacket {
		perFrame++ // the frame's last, partial packet
	}
	wantPackets := float64(frames) * perFrame
	wantBytes := float64(frames) * (frameBytes + perFrame*speedQUICOverhead)
	if video.largest != speedQUICPacket {
		t.Errorf("the largest packet down was %d bytes, want quic-go's %d: the expected packets below assume it", video.largest, speedQUICPacket)
	}
	if got := float64(video.packets); math.Abs(got/wantPackets-1) > 0.1 {
		t.Errorf("%d Mbit/s: the downlink carried %d packets of video, want %.0f within 10%% (%d frames of %.0f bytes in %.0f packets each)",
			bps/1_000_000, video.packets, wantPackets, frames, frameBytes, perFrame)
	}
	if got := float64(res.Downlink.Delivered.Bytes); math.Abs(got/wantBytes-1) > 0.1 {
		t.Errorf("%d Mbit/s: the downlink carried %.2f Mbit/s, want %.2f within 10%% (the bitrate, a frame header a frame, a packet's overhead a packet)",
			bps/1_000_000, got*8/s.Duration.Seconds()/1e6, wantBytes*8/s.Duration.Seconds()/1e6)
	}
}

// TestLibrarySpeed runs every scenario of the library, in parallel in
// their own bubbles as the suite does, and reports the wall time, the
// sessions' total seconds and how much faster than real time they ran
// together. It runs the scenarios itself rather than through the suite's
// runLibraryScenario, which runs each scenario once per test binary and so
// would time nothing on the second -count.
//
// It checks what it names (libraryRan): every scenario of the library
// ran, each for its whole duration, and together their links carried
// the packets their bitrates need (lab/estimate's Packets, from each
// scenario's bitrates, phases and durations), within 10%. The seconds it
// divides by are those of the sessions that ran: a scenario whose trace
// is in the absent ../shared folder counts for none.
func TestLibrarySpeed(t *testing.T) {
	if !*sessionSpeed {
		t.Skip("run with -sessionspeed")
	}
	lib, err := scenarios.Library()
	if err != nil {
		t.Fatalf("the scenario library does not load:\n%v", err)
	}
	order := estimate.Native.Longest(lib)
	runs := make([]libraryRun, len(order))
	cpu0, start := cpuTime(t), time.Now()
	t.Run("all", func(t *testing.T) {
		for i, sc := range order {
			runs[i].sc = sc
			t.Run(sc.Name, func(t *testing.T) {
				runs[i].started = true
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					r, err := Run(t.Context(), sc)
					if errors.Is(err, ErrSharedAbsent) {
						runs[i].skipped = true
						return
					}
					if err != nil {
						t.Errorf("%s: %v", sc.Name, err)
					}
					runs[i].r = r
				})
			})
		}
	})
	wall, cpu := time.Since(start), cpuTime(t)-cpu0
	sessions, skipped, seconds, packets, want := libraryRan(t, runs)
	t.Logf("library: %d scenarios, %d run (%d without the shared folder), %.0f s of sessions in %v wall, %.0fx real time; %v CPU for %d packets (%.0f expected)",
		len(lib), sessions, skipped, seconds, wall.Round(time.Millisecond), seconds/wall.Seconds(), cpu.Round(time.Millisecond), packets, want)
	benchLine(t, wall, "x-real-time", seconds/wall.Seconds(), "session-s", seconds)
}

// libraryRun is one scenario of TestLibrarySpeed: whether its subtest ran
// (a -run pattern may filter it out), and its result, or that it was
// skipped for want of the shared folder.
type libraryRun struct {
	sc      *scenarios.Scenario
	started bool
	r       *result.Run
	skipped bool
}

// libraryRan checks that every scenario ran for its whole duration (those
// a -run pattern filtered out aside) and, when the whole library ran, that
// the links carried, in all, the packets lab/estimate expects, within 10%; it
// returns how many ran and were skipped, their seconds, the packets their
// links carried and the packets expected.
func libraryRan(t *testing.T, runs []libraryRun) (sessions, skipped int, seconds float64, packets uint64, want float64) {
	t.Helper()
	filtered := 0
	for _, run := range runs {
		switch {
		case !run.started:
			filtered++
			continue
		case run.skipped:
			skipped++
			continue
		case run.r == nil:
			t.Errorf("%s: no result", run.sc.Name)
			continue
		case run.r.Ran != run.sc.Duration || run.r.Interrupted != "":
			t.Errorf("%s: ran %v of its %v (interrupted: %q)", run.sc.Name, run.r.Ran, run.sc.Duration, run.r.Interrupted)
		}
		sessions++
		seconds += run.r.Ran.Seconds()
		packets += run.r.Links.Up.OfferedPackets + run.r.Links.Down.OfferedPackets
		want += estimate.Packets(run.sc)
	}
	if sessions+skipped+filtered != len(runs) || sessions == 0 {
		t.Errorf("%d of the library's %d scenarios ran, %d skipped", sessions, len(runs), skipped)
	}
	// lab/estimate is within 30% of most single sessions and within a few
	// percent of the library's total: a filtered run is not held to it.
	if filtered == 0 && math.Abs(float64(packets)/want-1) > 0.1 {
		t.Errorf("the library's links carried %d packets, want %.0f within 10%% (lab/estimate's Packets: the scenarios' bitrates over their phases)", packets, want)
	}
	return sessions, skipped, seconds, packets, want
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
