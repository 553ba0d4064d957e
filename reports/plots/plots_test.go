package plots

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/reports/plots/plotstest"
)

// requirePlot decodes a figure and checks it is a drawing, not a blank or
// a flat image: antialiased lines and text give many colours.
func requirePlot(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	b := img.Bounds()
	require.GreaterOrEqual(t, b.Dx(), 600, "16 cm at 110 dpi is about 690 px")
	require.GreaterOrEqual(t, b.Dy(), 250)
	colours := map[color.RGBA]bool{}
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			colours[c] = true
			if c.R < 0xf0 || c.G < 0xf0 || c.B < 0xf0 {
				inked++
			}
		}
	}
	require.Greater(t, len(colours), 40, "distinct colours")
	require.Greater(t, float64(inked)/float64(b.Dx()*b.Dy()), 0.01, "share of pixels not white")
	return img
}

// countNear counts pixels within tol of c in every channel.
func countNear(img image.Image, c color.RGBA, tol int) int {
	n := 0
	b := img.Bounds()
	near := func(a, b uint8) bool { return int(a)-int(b) <= tol && int(b)-int(a) <= tol }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			p := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if near(p.R, c.R) && near(p.G, c.G) && near(p.B, c.B) {
				n++
			}
		}
	}
	return n
}

func latencies(r *result.Run) []float64 {
	var v []float64
	for _, f := range r.Frames {
		if f.WasDisplayed() {
			v = append(v, f.Latency.Seconds())
		}
	}
	return v
}

// Every figure draws from lab results, and the same input gives the same
// bytes: reports can be diffed and cached.
func TestFiguresDrawAndAreDeterministic(t *testing.T) {
	a, b := plotstest.Result("wired", 0), plotstest.Result("wifi", 40*time.Millisecond)
	pts := []Point{{10, 5, "a"}, {20, 8, "b"}, {15, 4, "c"}, {30, 9, "d"}, {25, 9.5, "e"}}
	figures := map[string]func() ([]byte, error){
		"latency one": func() ([]byte, error) {
			return LatencyOverTime("drop", map[string]*result.Run{"wired": a})
		},
		"latency compare": func() ([]byte, error) {
			return LatencyOverTime("wired vs wifi", map[string]*result.Run{"wired": a, "wifi": b})
		},
		"cdf": func() ([]byte, error) {
			return LatencyCDF("latency", []Series{{"wired", latencies(a)}, {"wifi", latencies(b)}})
		},
		"stages": func() ([]byte, error) {
			return StageBreakdown("stages", map[string]*result.Run{"wired": a, "wifi": b})
		},
		"stages over time": func() ([]byte, error) {
			return StagesOverTime("stages over time", b)
		},
		"flows over time": func() ([]byte, error) {
			return FlowsOverTime("flows", plotstest.WithTraffic(plotstest.Result("home", 0)))
		},
		"pareto": func() ([]byte, error) {
			return Pareto("sweep", "median latency (ms)", "bitrate (Mbit/s)", pts, ParetoFront(pts, true, false))
		},
	}
	for name, draw := range figures {
		t.Run(name, func(t *testing.T) {
			first, err := draw()
			require.NoError(t, err)
			img := requirePlot(t, first)
			// The first series' colour is there: data was drawn, not
			// only axes.
			require.Greater(t, countNear(img, palette[0], 8)+countNear(img, stageColours[0].(color.RGBA), 8), 100)
			again, err := draw()
			require.NoError(t, err)
			require.True(t, bytes.Equal(first, again), "same input, same PNG bytes")
		})
	}
}

// The flows figure draws every flow where its data went: the session
// (the first colour) and the download (the second) on the downlink's
// panel, the voice (the third) on the uplink's, which only a flow going up
// brings; without traffic there is nothing to draw.
func TestFlowsOverTime(t *testing.T) {
	r := plotstest.WithTraffic(plotstest.Result("home", 0))
	both, err := FlowsOverTime("flows", r)
	require.NoError(t, err)
	img := requirePlot(t, both)
	for i := range 3 {
		require.Greater(t, countNear(img, palette[i], 8), 50, "flow %d's colour", i)
	}
	r.Traffic = r.Traffic[:1]
	downOnly, err := FlowsOverTime("flows", r)
	require.NoError(t, err)
	img2 := requirePlot(t, downOnly)
	require.Less(t, img2.Bounds().Dy(), img.Bounds().Dy(), "one panel without an upward flow")
	require.Zero(t, countNear(img2, palette[2], 8), "no voice")

	_, err = FlowsOverTime("flows", plotstest.Result("alone", 0))
	require.ErrorIs(t, err, ErrNoData)
	require.Equal(t, time.Second, FlowPeriod(r))
	short := *r
	short.Ran = 5 * time.Second
	require.Equal(t, result.DefaultSampleEvery, FlowPeriod(&short))
}

// The compare figure gives each label its own colour in sorted order,
// so "wifi" is the first colour and "wired" the second whatever the map
// order.
func TestLatencyOverTimeColoursFollowSortedLabels(t *testing.T) {
	a, b := plotstest.Result("wired", 0), plotstest.Result("wifi", 40*time.Millisecond)
	data, err := LatencyOverTime("", map[string]*result.Run{"wired": a, "wifi": b})
	require.NoError(t, err)
	img := requirePlot(t, data)
	require.Greater(t, countNear(img, palette[0], 8), 300)
	require.Greater(t, countNear(img, palette[1], 8), 300)
	require.Zero(t, countNear(img, palette[2], 8), "only two labels")
}

// Empty and broken input is an error or a plot that says "(no data)",
// never a panic.
func TestDegenerateInput(t *testing.T) {
	empty := &result.Run{Schema: result.Version, Scenario: "empty"}
	one := plotstest.Result("one", 0)
	one.Series = one.Series[:1]
	one.Frames = one.Frames[:1]
	nan := []Point{{math.NaN(), 1, "nan"}, {math.Inf(1), 2, "inf"}}

	_, err := LatencyOverTime("x", nil)
	require.ErrorIs(t, err, ErrNoData)
	_, err = LatencyOverTime("x", map[string]*result.Run{"nil": nil})
	require.ErrorContains(t, err, `"nil" is nil`)
	_, err = StageBreakdown("x", map[string]*result.Run{})
	require.ErrorIs(t, err, ErrNoData)
	_, err = StagesOverTime("x", nil)
	require.ErrorIs(t, err, ErrNoData)
	_, err = LatencyCDF("x", nil)
	require.ErrorIs(t, err, ErrNoData)
	_, err = Pareto("x", "a", "b", nil, nil)
	require.ErrorIs(t, err, ErrNoData)
	_, err = Pareto("x", "a", "b", []Point{{1, 1, "a"}}, []int{3})
	require.ErrorContains(t, err, "front index 3 out of range")

	valid := map[string]func() ([]byte, error){
		"latency of an empty result": func() ([]byte, error) {
			return LatencyOverTime("empty", map[string]*result.Run{"empty": empty})
		},
		"latency of one sample": func() ([]byte, error) {
			return LatencyOverTime("one", map[string]*result.Run{"one": one})
		},
		"stages of an empty result": func() ([]byte, error) {
			return StageBreakdown("empty", map[string]*result.Run{"empty": empty, "one": one})
		},
		"stages over time of an empty result": func() ([]byte, error) {
			return StagesOverTime("empty", empty)
		},
		"stages over time of one frame": func() ([]byte, error) {
			return StagesOverTime("one", one)
		},
		"cdf without values": func() ([]byte, error) {
			return LatencyCDF("empty", []Series{{Label: "none"}, {Label: "nan", Values: []float64{math.NaN(), math.Inf(1)}}})
		},
		"cdf of one value": func() ([]byte, error) {
			return LatencyCDF("one", []Series{{Label: "one", Values: []float64{0.03}}})
		},
		"cdf of zeros": func() ([]byte, error) {
			return LatencyCDF("zeros", []Series{{Label: "zeros", Values: []float64{0, 0, 0}}})
		},
		"pareto of NaN": func() ([]byte, error) { return Pareto("nan", "a", "b", nan, ParetoFront(nan, true, true)) },
		"pareto of one": func() ([]byte, error) {
			return Pareto("one", "a", "b", []Point{{1, 1, "a"}}, []int{0})
		},
	}
	for name, draw := range valid {
		t.Run(name, func(t *testing.T) {
			data, err := draw()
			require.NoError(t, err)
			_, err = png.Decode(bytes.NewReader(data))
			require.NoError(t, err)
		})
	}
}

func TestParetoFront(t *testing.T) {
	pts := []Point{
		{X: 10, Y: 5, Label: "a"},   // 0: lowest X
		{X: 20, Y: 8, Label: "b"},   // 1
		{X: 15, Y: 4, Label: "c"},   // 2: dominated by a (higher X, lower Y)
		{X: 30, Y: 9, Label: "d"},   // 3: dominated by e
		{X: 25, Y: 9.5, Label: "e"}, // 4: highest Y
		{X: 20, Y: 8, Label: "b2"},  // 5: ties b: neither dominates
		{X: math.NaN(), Y: 100},     // 6: never on the front
	}
	require.Equal(t, []int{0, 1, 5, 4}, ParetoFront(pts, true, false), "lower X, higher Y better")
	require.Equal(t, []int{0, 2}, ParetoFront(pts, true, true), "both lower better")
	require.Equal(t, []int{4, 3}, ParetoFront(pts, false, false), "both higher better")
	require.Equal(t, []int{2, 1, 5, 3}, ParetoFront(pts, false, true), "higher X, lower Y better")
	require.Empty(t, ParetoFront(nil, true, true))
}

func TestStageMedians(t *testing.T) {
	r := plotstest.Result("x", 0)
	stages, latency, frames := StageMedians(r)
	// Before the drop and after the queue drains the network takes 20 ms,
	// more than half the frames.
	require.Equal(t, []time.Duration{8 * time.Millisecond, time.Millisecond, 20 * time.Millisecond, 5 * time.Millisecond}, stages)
	require.Equal(t, 34*time.Millisecond, latency)
	require.Equal(t, r.Summary.Displayed, frames)

	_, _, frames = StageMedians(&result.Run{})
	require.Zero(t, frames)
}

func TestTicks(t *testing.T) {
	labels := func(ts []plot.Tick) []string {
		var out []string
		for _, tk := range ts {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	require.Equal(t, []string{"0", "2", "4", "6", "8"}, labels(niceTicks{}.Ticks(0, 8.6)))
	require.Equal(t, []string{"0", "20", "40", "60"}, labels(niceTicks{}.Ticks(0, 70)))
	require.Equal(t, []string{"0.2", "0.4", "0.6", "0.8"}, labels(niceTicks{}.Ticks(0.1, 0.9)))
	require.Equal(t, []string{"20", "50", "100", "200", "500", "1000"}, labels(logTicks{}.Ticks(15, 1600)))
	require.Equal(t, []string{"20", "30", "50", "100"}, labels(logTicks{}.Ticks(15, 160)), "3 on a short axis")
	ts := log10Ticks{}.Ticks(math.Log10(15), math.Log10(160))
	require.InDelta(t, math.Log10(20), ts[0].Value, 1e-12)
}

// Per bucket of the series, the median of each stage over the frames
// displayed in it: 8, 1, 20 and 5 ms before the drop at 4 s; then the
// network grows by the queue (300 ms at its height, for the frame captured
// at 5 s and displayed at 5.334 s) and drains by 7 s.
func TestStagesPerBucket(t *testing.T) {
	r := plotstest.Result("x", 0)
	bs := StagesPerBucket(r)
	require.Len(t, bs, len(r.Series))
	require.Equal(t, StageBucket{From: 0, To: 250 * time.Millisecond, Frames: 7,
		Stages:  []time.Duration{8 * time.Millisecond, time.Millisecond, 20 * time.Millisecond, 5 * time.Millisecond},
		Latency: 34 * time.Millisecond}, bs[0])
	frames := 0
	worst := 0
	for i, b := range bs {
		require.Equal(t, r.Series[i].From, b.From)
		require.Equal(t, r.Series[i].Displayed, b.Frames, "bucket %v: the series counts the same frames", b.From)
		frames += b.Frames
		if b.Stages[2] > bs[worst].Stages[2] {
			worst = i
		}
		if b.Frames > 0 {
			require.Equal(t, 8*time.Millisecond, b.Stages[0])
		}
	}
	require.Equal(t, r.Summary.Displayed, frames)
	require.Equal(t, 5250*time.Millisecond, bs[worst].From, "the queue at its height shows a bucket later")
	require.InDelta(t, float64(310*time.Millisecond), float64(bs[worst].Stages[2]), float64(10*time.Millisecond), "20 ms and a queue of 275-300 ms")

	// Without a series, steps of the sample period over the run; a bucket
	// without a displayed frame has no medians.
	bare := plotstest.Result("bare", 0)
	bare.Series = nil
	bare.Frames = slices.DeleteFunc(bare.Frames, func(f result.FrameRecord) bool {
		return f.Displayed >= time.Second && f.Displayed < 1250*time.Millisecond
	})
	bs = StagesPerBucket(bare)
	require.Len(t, bs, 40)
	require.Equal(t, StageBucket{From: time.Second, To: 1250 * time.Millisecond, Stages: make([]time.Duration, len(Stages))}, bs[4])
	require.Equal(t, 7, bs[3].Frames)
	require.Empty(t, StagesPerBucket(&result.Run{}))
}

// A backlog in front of the network grows the "waiting to send" band: on a
// result whose frames wait 40 ms more to be sent every second, the band's
// colour covers far more of the figure than on the same result without
// the wait, and the per-bucket medians grow with it.
func TestStagesOverTimeShowsABacklog(t *testing.T) {
	backlog := plotstest.Result("backlog", 0)
	for i, f := range backlog.Frames {
		wait := f.Captured * 40 / 1000
		backlog.Frames[i].Sent += wait
		backlog.Frames[i].Arrived += wait
		if f.WasDisplayed() {
			backlog.Frames[i].Displayed += wait
			backlog.Frames[i].Latency += wait
		}
	}
	bs := StagesPerBucket(backlog)
	require.Greater(t, bs[30].Stages[1], 250*time.Millisecond, "frames displayed at 7.5 s, captured about 7.2 s")
	require.Less(t, bs[2].Stages[1], 30*time.Millisecond)

	waiting := stageColours[1].(color.RGBA)
	count := func(r *result.Run) int {
		data, err := StagesOverTime("", r)
		require.NoError(t, err)
		return countNear(requirePlot(t, data), waiting, 8)
	}
	plain, grown := count(plotstest.Result("plain", 0)), count(backlog)
	t.Logf("waiting-to-send pixels: %d without the backlog, %d with it", plain, grown)
	require.Greater(t, grown, 20*max(plain, 100))
}
