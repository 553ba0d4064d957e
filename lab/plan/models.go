package plan

import (
	"cmp"
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/gcc"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// convertScreen turns the screen timeline into screen sources; the screen
// refreshes at the agent's rate (the capture polls the display it copies).
// A recording's index is read once per process and shared
// (scenarios.OpenRecording), found by the loader's rule from file, the
// scenario's file.
func convertScreen(file string, phases []scenarios.ScreenPhase, refresh float64) (*screen.Config, error) {
	if len(phases) == 0 {
		if refresh == 0 {
			return nil, nil // the documented full-screen animation (N3)
		}
		phases = []scenarios.ScreenPhase{{Source: "animation"}}
	}
	cfg := &screen.Config{Refresh: refresh}
	for i, ph := range phases {
		var region screen.Rect
		if r := ph.Region; r != nil {
			region = screen.Rect{X: r.X, Y: r.Y, W: r.W, H: r.H}
		}
		var src screen.Source
		switch ph.Source {
		case "animation":
			src = screen.Animation{Rate: ph.Rate, Complexity: ph.Complexity}
		case "still":
			src = screen.Still{}
		case "typing":
			src = screen.Typing{Complexity: ph.Complexity}
		case "scrolling":
			src = screen.Scrolling{Rate: ph.Rate, Region: region, Complexity: ph.Complexity}
		case "video":
			src = screen.Video{FPS: ph.Rate, Region: region, Complexity: ph.Complexity}
		case "photo":
			src = screen.Photo{Region: region, Complexity: ph.Complexity}
		case screen.SourceRecording:
			rec, err := scenarios.OpenRecording(file, ph.File)
			if err != nil {
				return nil, fmt.Errorf("%w: screen[%d]: recording %q: %w", laberr.ErrScenario, i, ph.File, err)
			}
			src = screen.Recording{Recording: rec, Offset: ph.Offset, Once: ph.NoLoop}
		default:
			return nil, fmt.Errorf("%w: screen[%d]: unknown source %q (animation, still, typing, scrolling, video, photo, recording)", laberr.ErrScenario, i, ph.Source)
		}
		cfg.Timeline = append(cfg.Timeline, screen.Phase{At: ph.At, Source: src})
	}
	return cfg, nil
}

// ScreenTimeline is a scenario's screen section as the screen model's
// timeline, as Convert makes it: the documented full-screen
// animation when the section is empty. lab vnc draws it on a real
// server's display.
func ScreenTimeline(sc *scenarios.Scenario) ([]screen.Phase, error) {
	cfg, err := convertScreen(sc.File, sc.Screen, 0)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return []screen.Phase{{Source: screen.Animation{}}}, nil
	}
	return cfg.Timeline, nil
}

// convertAgent builds the agent's configuration: encoders (with the probe
// list and the N16 switch on every one of them), capture, controller,
// send cap, refinement and the N7 switch.
func convertAgent(sc *scenarios.Scenario) (agent.Config, error) {
	a := sc.Agent
	cfg := agent.Config{
		Refresh:         a.Refresh,
		SendCap:         a.SendCap,
		RefinePasses:    a.RefinePasses,
		RefineEvery:     a.RefineEvery,
		NoRefine:        a.NoRefine,
		OldCaptureFirst: sc.Switches.OldCaptureFirst,
	}
	cfg.Capture.ConvertOnCPU = a.ConvertOnCPU
	cfg.Capture.OldWaitForFrame = sc.Switches.OldWaitForFrame

	var err error
	var initial int64
	if cfg.Controller, initial, err = convertController(sc.Controller, sc.Switches); err != nil {
		return cfg, err
	}

	sw, err := encoder.Preset(cmp.Or(a.Encoder, encoder.PresetOpenH264Asm))
	if err != nil {
		return cfg, fmt.Errorf("%w: agent.encoder: %w", laberr.ErrScenario, err)
	}
	if a.EncodeTime != nil {
		if sw.EncodeTime, err = convertDist("agent.encode_time", a.EncodeTime); err != nil {
			return cfg, err
		}
	}
	if a.FrameSizes == "budget" {
		sw = encoder.Budgeted(sw)
	}
	// Every encoder starts at the controller's first bitrate. The agent
	// sets it itself only on the software fallback: a hardware encoder left
	// at its own default would see a bitrate change at its first frame,
	// which under the N16 switch is a one-second restart nobody asked for.
	sw.Bitrate = int(initial)
	sw.OldRestartOnBitrateChange = sc.Switches.OldRestartOnBitrateChange
	cfg.Software = sw

	known := map[string]bool{}
	for _, h := range a.Hardware {
		hc, err := encoder.Preset(h)
		if err != nil {
			return cfg, fmt.Errorf("%w: agent.hardware: %w", laberr.ErrScenario, err)
		}
		known[h] = true
		hc.Bitrate = int(initial)
		hc.OldRestartOnBitrateChange = sc.Switches.OldRestartOnBitrateChange
		for _, x := range a.Absent {
			if x == h {
				hc.Absent = true
			}
		}
		for _, x := range a.Failing {
			if x == h {
				hc.OpenFailure = "the driver refused the session (scenario: failing)"
			}
		}
		cfg.Hardware = append(cfg.Hardware, hc)
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"absent", a.Absent}, {"failing", a.Failing}} {
		for _, x := range list.names {
			if !known[x] {
				return cfg, fmt.Errorf("%w: agent.%s: %q is not in agent.hardware %v", laberr.ErrScenario, list.field, x, a.Hardware)
			}
		}
	}
	return cfg, nil
}

// convertController builds the bitrate controller and says its first
// bitrate.
func convertController(c scenarios.Controller, sw scenarios.Switches) (agent.Controller, int64, error) {
	initial := c.Bitrate
	if initial == 0 {
		initial = agent.DefaultBitrate
	}
	if initial < 0 {
		return nil, 0, fmt.Errorf("%w: controller.bitrate %d is negative", laberr.ErrScenario, c.Bitrate)
	}
	switch c.Kind {
	case "", "fixed":
		if len(c.Steps) > 0 {
			return nil, 0, fmt.Errorf("%w: controller: steps need kind \"steps\"", laberr.ErrScenario)
		}
		return agent.Fixed{Bps: initial}, initial, nil
	case "steps":
		st := &agent.Steps{Initial: initial}
		for i, s := range c.Steps {
			if s.Bitrate <= 0 || (i > 0 && s.At <= c.Steps[i-1].At) {
				return nil, 0, fmt.Errorf("%w: controller.steps[%d]: need a positive bitrate at increasing instants", laberr.ErrScenario, i)
			}
			st.At = append(st.At, s.At)
			st.Bps = append(st.Bps, s.Bitrate)
		}
		if len(c.Steps) > 0 && c.Steps[0].At == 0 {
			return st, c.Steps[0].Bitrate, nil // in force from the start
		}
		return st, initial, nil
	case "abr":
		a, err := abr.New(abr.Config{
			Initial: c.Bitrate, Min: c.Min, Max: c.Max,
			Window: c.Window, Baseline: c.Baseline, Threshold: c.Threshold, Sustain: c.Sustain,
			Close: c.Close, Hold: c.Hold, Decrease: c.Decrease, Increase: c.Increase, Guard: c.Guard,
			OldTotalLatency:       sw.OldABRTotalLatency,
			OldIgnoresUtilisation: sw.OldABRIgnoresUtilisation,
			OldSinglePeaks:        sw.OldABRSinglePeaks,
		})
		if err != nil {
			return nil, 0, fmt.Errorf("%w: controller: %w", laberr.ErrScenario, err)
		}
		return a, a.Config().Initial, nil
	case "gcc":
		g, err := gcc.New(gcc.Config{Initial: c.Bitrate, Min: c.Min, Max: c.Max})
		if err != nil {
			return nil, 0, fmt.Errorf("%w: controller: %w", laberr.ErrScenario, err)
		}
		return g, g.Config().Initial, nil
	}
	return nil, 0, fmt.Errorf("%w: controller kind %q", laberr.ErrUnsupported, c.Kind)
}

// Decisions reads an adaptive controller's decisions as records counted
// from start; nil for a controller that makes none.
func Decisions(c agent.Controller) func(start time.Time) []result.DecisionRecord {
	switch c := c.(type) {
	case *abr.ABR:
		return func(start time.Time) []result.DecisionRecord {
			var out []result.DecisionRecord
			for _, d := range c.Decisions() {
				out = append(out, result.DecisionRecord{At: d.At.Sub(start), Old: d.Old, New: d.New, Rule: d.Rule,
					Median: d.Median, Baseline: d.Baseline, Utilisation: d.Utilisation})
			}
			return out
		}
	case *gcc.GCC:
		return func(start time.Time) []result.DecisionRecord {
			var out []result.DecisionRecord
			for _, d := range c.Decisions() {
				out = append(out, result.DecisionRecord{At: d.At.Sub(start), Old: d.Old, New: d.New, Rule: d.Rule,
					Signal: d.Signal, Trend: d.Trend, Threshold: d.Threshold, Received: d.Received, Loss: d.Loss})
			}
			return out
		}
	}
	return nil
}

// convertDist turns a scenario's distribution into the models' one; nil
// is unset, so the model keeps its default.
func convertDist(field string, d *scenarios.Dist) (dist.Duration, error) {
	if d == nil {
		return dist.Duration{}, nil
	}
	var out dist.Duration
	switch {
	case d.List != nil:
		out = dist.List(d.List...)
	case d.SD > 0:
		out = dist.Normal(d.Mean, d.SD)
		out.Min, out.Max = d.Min, d.Max
	case d.Min != 0 || d.Max != 0:
		out = dist.Uniform(d.Min, d.Max)
	default:
		out = dist.Constant(d.Mean)
	}
	if err := out.Validate(); err != nil {
		return dist.Duration{}, fmt.Errorf("%w: %s: %w", laberr.ErrScenario, field, err)
	}
	return out, nil
}
