package lab

import (
	"flag"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// realScenarios are the real-encoder twins of library scenarios, in
// lab/testdata/real: OpenH264 encodes painted pictures and decodes them on
// the viewer. They live outside the library because they need the library
// OpenH264 (cgo and Debian's libopenh264-dev), which the library's other
// runs (the nightly, the exact mode) do not.
func realScenario(t *testing.T, name string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.LoadFile(filepath.Join("testdata", "real", name+".yaml"))
	require.NoError(t, err)
	return sc
}

func runReal(t *testing.T, sc *scenarios.Scenario) *result.Run {
	t.Helper()
	var r *result.Run
	synctest.Test(t, func(t *testing.T) {
		var err error
		r, err = Run(t.Context(), sc)
		require.NoError(t, err)
	})
	return r
}

// TestReal runs the real-encoder scenarios and checks their expectations.
//
//	go test ./lab -run Real -v
func TestReal(t *testing.T) {
	openh264test.Require(t)
	files, err := filepath.Glob(filepath.Join("testdata", "real", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 5, "the twins of lan-animation, abr-lossy, abr-capacity-drop, mobile-spikes and still-refine")
	// Side by side, each in its own bubble: a session encodes on one
	// thread (one OpenH264 thread, the same bytes at every run), so two
	// take the two cores. real-abr-capacity-drop, the longest (24 s of
	// session, about half of the five's time), comes first in the glob's
	// order and runs while the others take turns beside it.
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc := realScenario(t, name)
			require.Equal(t, []string{"real"}, sc.Groups)
			r := runRealOnce(t, sc) // TestModelMatchesRealTwins's seed-1 run too
			for _, c := range r.Checks {
				if !c.Pass {
					t.Errorf("%s:%d: expectation not met: %s", sc.File, c.Line, c)
				}
			}
			var judged int
			for _, f := range r.Frames {
				if f.PSNR > 0 {
					judged++
				}
			}
			require.Positive(t, judged, "the viewer judged the pictures it showed")
			s := r.Summary
			med, err := measure.Of(r, "quality.psnr.median", 0, 0)
			require.NoError(t, err)
			low, err := measure.Of(r, "quality.psnr.min", 0, 0)
			require.NoError(t, err)
			ssim, err := measure.Of(r, "quality.ssim.median", 0, 0)
			require.NoError(t, err)
			t.Logf("%s: %d frames, %d judged; latency median %v p95 %v, %.1f fps; PSNR median %.2f dB, min %.2f dB; SSIM median %.3f",
				name, len(r.Frames), judged, s.Latency.Median, s.Latency.P95, s.FPS, med, low, ssim)
			for _, c := range r.Checks {
				t.Logf("  %s:%d: %s", sc.File, c.Line, c)
			}
			skips := map[string]int{}
			for _, e := range r.Events {
				skips[e.Kind+" "+e.Reason]++
			}
			t.Logf("  skips and drops: %v", skips)
		})
	}
}

// Time stays virtual: the real encoder decides the bytes, the frame types,
// the skips and the quality, the model the durations, so two runs of a
// real-encoder scenario encode the same pictures at the same instants into
// the same frames, which the viewer decodes into the same pictures (the
// same PSNR). The network's instants are not compared: in a native
// process they move by nanoseconds between runs whatever the encoder, the
// model's too (what is left of the Go runtime's wall-clock decisions,
// docs/determinism.md); crypto/rand is seeded so that QUIC's own choices
// are the same.
func TestRealDeterministic(t *testing.T) {
	openh264test.Require(t)
	sc := realScenario(t, "real-lan-animation")
	sc.Duration = 2 * time.Second
	run := func() *result.Run {
		var r *result.Run
		t.Run("run", func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, sc.Seed)
			r = runReal(t, sc)
		})
		return r
	}
	a, b := run(), run()
	if a == nil || b == nil {
		if t.Failed() {
			return // a run failed, and its subtest said why
		}
		t.Skip("skipping: the -run filter left out a run, and the test compares two")
	}
	require.NotEmpty(t, a.Frames)
	type decided struct {
		Seq                 uint64
		Bytes               int
		Keyframe            bool
		PSNR                float64
		Captured, EncodeEnd time.Duration
	}
	of := func(r *result.Run) []decided {
		var out []decided
		for _, f := range r.Frames {
			out = append(out, decided{f.Seq, f.Bytes, f.Keyframe, f.PSNR, f.Captured, f.EncodeEnd})
		}
		return out
	}
	require.Equal(t, of(a), of(b), "what the encoder and decoder decided")
	require.Equal(t, a.Events, b.Events, "skips and drops")
}

// Where OpenH264 cannot run (a build without cgo, a machine without the
// library), a scenario naming the real encoder fails to load, saying what
// is missing; where it can, it loads.
//
//	CGO_ENABLED=0 go test ./lab -run TestRealScenarioLoads
func TestRealScenarioLoads(t *testing.T) {
	file := filepath.Join("testdata", "real", "real-lan-animation.yaml")
	_, err := scenarios.LoadFile(file)
	if why := openh264.Available(); why != nil {
		require.ErrorContains(t, err, "agent.encoder: openh264-real cannot run in this build: "+why.Error())
		return
	}
	require.NoError(t, err)
}

var realSpeed = flag.Bool("realspeed", false, "measure how much faster than real time the real encoder's sessions run (TestRealSpeed)")

// TestRealSpeed is how much faster than real time a session with the real
// encoder runs: 4 s of the full-screen animation on the LAN, painted,
// encoded and decoded, at 720p and at 1080p (the goal: at least 2x at
// 720p on one core), in wall time and in CPU time (what one core would
// take on a quiet machine). Each session checks that it was what it names
// (realSpeedRan): the real encoder, for the whole 4 s, each frame shown
// decoded. A test rather than a benchmark, since a session's
// virtual time needs a synctest bubble, which only a test has; it runs
// only when asked, since its figure is the machine's:
//
//	GOMAXPROCS=1 go test ./lab -run TestRealSpeed -realspeed -v
func TestRealSpeed(t *testing.T) {
	if !*realSpeed {
		t.Skip("run with -realspeed")
	}
	openh264test.Require(t)
	for _, preset := range []string{"openh264-real", "openh264-real-1080p"} {
		sc := realScenario(t, "real-lan-animation")
		sc.Agent.Encoder, sc.Duration, sc.Expect = preset, 4*time.Second, nil
		start, cpu0 := time.Now(), cpuTime(t)
		r := runReal(t, sc)
		wall, cpu := time.Since(start), cpuTime(t)-cpu0
		realSpeedRan(t, sc, r)
		// The CPU time is what one core would take with nothing else
		// running: on a busy machine the wall time also counts the
		// waits for a core, the CPU time does not.
		t.Logf("%s: %v of session in %v of wall time, %.2fx real time on GOMAXPROCS=%d; %v of CPU, %.2fx real time per core (%d frames)",
			preset, sc.Duration, wall.Round(time.Millisecond), sc.Duration.Seconds()/wall.Seconds(), runtime.GOMAXPROCS(0),
			cpu.Round(time.Millisecond), sc.Duration.Seconds()/cpu.Seconds(), len(r.Frames))
	}
}

// realSpeedRan fails the test unless r is a session of sc's real encoder
// that ran its whole length, displayed frames through it at least once a
// second, and decoded each it displayed (a PSNR is only a real decoder's):
// a probe that fell back to the H.264 model, or a session cut short, would
// time something cheaper under the real encoder's name.
func realSpeedRan(t *testing.T, sc *scenarios.Scenario, r *result.Run) {
	t.Helper()
	if r.Encoder != sc.Agent.Encoder {
		t.Errorf("%s: the session's encoder was %q", sc.Agent.Encoder, r.Encoder)
	}
	if r.Ran != sc.Duration || r.Interrupted != "" {
		t.Errorf("%s: ran %v of its %v (interrupted: %q)", sc.Agent.Encoder, r.Ran, sc.Duration, r.Interrupted)
	}
	displayed := 0
	for _, f := range r.Frames {
		if !f.WasDisplayed() {
			continue
		}
		displayed++
		if f.PSNR <= 0 {
			t.Errorf("%s: frame %d was displayed without a PSNR: not decoded by the real decoder", sc.Agent.Encoder, f.Seq)
			return
		}
	}
	if displayed < int(sc.Duration.Seconds()) {
		t.Errorf("%s: %d frames displayed in %v, want at least one a second", sc.Agent.Encoder, displayed, sc.Duration)
	}
}
