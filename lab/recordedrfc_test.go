package lab

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"

	"github.com/nuvirahub/latencylab/agent/encoder/openh264/openh264test"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// rfcRecordings are the recorded desktops RFC 8867's 5.1 is replayed on
// with the real encoder: windows dragged over a desktop with a clock (the
// corpus's busiest desktop that is not a picture) and a 3D scene drawn at
// 60 frames a second (its most changes a second).
var rfcRecordings = []string{"window-moves-720p.labrec", "3d-720p.labrec"}

// recordedRFC51 is the library's RFC 8867 5.1 (variable capacity, 1 to
// 2.5 to 0.6 to 1 Mbit/s over 100 s) with OpenH264 encoding a recorded
// desktop, looped: the real encoder's twin of the case on real content.
func recordedRFC51(t *testing.T, file string, seed uint64) *scenarios.Scenario {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	for _, sc := range lib {
		if sc.Name != "rmcat-5-1-variable-capacity" {
			continue
		}
		r := *sc
		r.Name = "real-rmcat-5-1-" + file
		r.Seed = seed
		r.Agent.Encoder, r.Agent.FrameSizes = "openh264-real", ""
		r.Viewer.Decode = &scenarios.Dist{Mean: 3 * time.Millisecond} // as the real twins have it
		// A library scenario's paths count from the repository's root.
		r.Screen = []scenarios.ScreenPhase{{Source: "recording", File: "testdata/recordings/" + file}}
		r.Expect = nil
		return &r
	}
	t.Fatal("the library has no rmcat-5-1-variable-capacity")
	return nil
}

// recordedRFC turns TestRecordedRFC8867VariableCapacity on: six minutes
// of the real encoder on 2 cores, too long for every run of the tests.
var recordedRFC = flag.Bool("recorded.rfc", false, "TestRecordedRFC8867VariableCapacity: replay RFC 8867 5.1 on recorded desktops with OpenH264 and the model (some 6 minutes)")

// knownRecordedRFCGaps are the figures where the model at its calibrated
// sizes differs from OpenH264 on the recorded desktops beyond the real
// runs' spread, by recording and figure, with what was measured: logged,
// not judged (docs/codecs.md, "Real content"). None now: the 3D scene's
// damaged time (19.6-24.3 s against OpenH264's 46.6-56.4) came right once
// the model weighed a recorded change by the share of its damaged pixels
// that changed (encoder.Config.FillExponent): its P frames had been twice
// OpenH264's, and its repairs a third as many.
var knownRecordedRFCGaps = map[string]string{}

// repairs sums up how a run's picture was kept whole, for the log: its P
// frames' mean size and coefficient of variation, the keyframes the viewer
// asked for, the frames dropped late.
func repairs(r *result.Run) string {
	var sizes []float64
	for _, f := range r.Frames {
		if !f.Keyframe && f.Pass == 0 {
			sizes = append(sizes, float64(f.Bytes))
		}
	}
	asked, late := 0, 0
	for _, e := range r.Events {
		switch {
		case e.Kind == "ask" && e.Reason == "keyframe":
			asked++
		case e.Kind == "drop" && e.Reason == "late":
			late++
		}
	}
	mean, sd := stat.MeanStdDev(sizes, nil)
	return fmt.Sprintf("P frames %.0f B on average (coefficient of variation %.2f), %d keyframes asked, %d frames dropped late", mean, sd/mean, asked, late)
}

// TestRecordedRFC8867VariableCapacity replays RFC 8867's 5.1 on recorded
// desktops with OpenH264 and with the H.264 model at its calibrated sizes
// (the twins' model, modelTwin) at seeds 1-3: on each of frames shown a
// second, latency median and damaged time, every model run lies within
// the real runs' spread widened by the bound rule of docs/testing.md. On
// the painted animation the calibrated sizes collapsed this case (2.3
// frames a second, a 393 ms median); on real content they must come out
// as OpenH264 does.
//
// The figures where they differ are knownRecordedRFCGaps.
//
//	go test ./lab -run TestRecordedRFC8867VariableCapacity -v -recorded.rfc
func TestRecordedRFC8867VariableCapacity(t *testing.T) {
	if !*recordedRFC {
		t.Skip("skipping: -recorded.rfc replays RFC 8867 5.1 on recorded desktops with OpenH264 and the model (go test ./lab -run TestRecordedRFC8867VariableCapacity -v -recorded.rfc)")
	}
	openh264test.Require(t)
	for _, file := range rfcRecordings {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			real, model := map[string][]float64{}, map[string][]float64{}
			for _, seed := range twinSeeds {
				sc := recordedRFC51(t, file, seed)
				var r, m *result.Run
				t.Run(fmt.Sprintf("real/seed%d", seed), func(t *testing.T) { r = runReal(t, sc) })
				t.Run(fmt.Sprintf("model/seed%d", seed), func(t *testing.T) { m = runReal(t, modelTwin(sc)) })
				require.NotNil(t, r)
				require.NotNil(t, m)
				collect(t, real, r)
				collect(t, model, m)
				t.Logf("seed %d: OpenH264 %s; model %s", seed, repairs(r), repairs(m))
			}
			judgeTwin(t, file, "model", real, model, knownRecordedRFCGaps, nil)
		})
	}
}
