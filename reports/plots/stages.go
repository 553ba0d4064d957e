package plots

import (
	"fmt"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/result"
)

// Stage is one part of a frame's way from capture to display, between two
// of its true instants.
type Stage struct {
	Name string
	// Of is the stage's duration for a displayed frame.
	Of func(f result.FrameRecord) time.Duration
}

// Stages are the parts StageBreakdown draws, in the frame's order. Each
// ends where the next begins, so they add up to the frame's latency.
var Stages = []Stage{
	{"encode (incl. conversion)", func(f result.FrameRecord) time.Duration { return f.EncodeEnd - f.Captured }},
	{"waiting to send", func(f result.FrameRecord) time.Duration { return f.Sent - f.EncodeEnd }},
	{"network", func(f result.FrameRecord) time.Duration { return f.Arrived - f.Sent }},
	{"decode and display", func(f result.FrameRecord) time.Duration { return f.Displayed - f.Arrived }},
}

var stageColours = []color.Color{
	color.RGBA{R: 0x4e, G: 0x79, B: 0xa7, A: 0xff}, // blue
	color.RGBA{R: 0xf2, G: 0x8e, B: 0x2b, A: 0xff}, // orange
	color.RGBA{R: 0x76, G: 0xb7, B: 0xb2, A: 0xff}, // teal
	color.RGBA{R: 0xe1, G: 0x57, B: 0x59, A: 0xff}, // red
}

// StageMedians are, for the frames of r that were displayed, the median
// of each of Stages and of the whole latency, and how many frames that
// was. A frame missing an instant (a broken record) is left out.
func StageMedians(r *result.Run) (stages []time.Duration, latency time.Duration, frames int) {
	per := make([][]time.Duration, len(Stages))
	var lat []time.Duration
	for _, f := range r.Frames {
		if !complete(f) {
			continue
		}
		for i, st := range Stages {
			per[i] = append(per[i], st.Of(f))
		}
		lat = append(lat, f.Displayed-f.Captured)
	}
	stages = make([]time.Duration, len(Stages))
	for i := range per {
		stages[i] = quantile.Median(per[i])
	}
	return stages, quantile.Median(lat), len(lat)
}

// StageBreakdown draws, per label, a horizontal bar of the median of each
// stage over the displayed frames, stacked in the frame's order, and a
// black dot at the median latency itself. Medians do not add up: the
// dot shows how far the stacked medians are from the true median.
// Labels run top to bottom in sorted order.
//
// An empty map is ErrNoData; a result without displayed frames draws an
// empty bar, its label saying so.
func StageBreakdown(title string, results map[string]*result.Run) ([]byte, error) {
	labels, err := sortedLabels(results)
	if err != nil {
		return nil, err
	}
	n := len(labels)
	p := newPlot(title, "median time per displayed frame (ms)", "")
	values := make([]plotter.Values, len(Stages))
	for i := range values {
		values[i] = make(plotter.Values, n)
	}
	var marks plotter.XYs
	names := make([]string, n)
	drawn := false
	for k, l := range labels {
		// Row n-1 is drawn at the top: the first label goes there.
		row := n - 1 - k
		stages, latency, frames := StageMedians(results[l])
		names[row] = l
		if frames == 0 {
			names[row] += " (no frame displayed)"
			continue
		}
		drawn = true
		for i, d := range stages {
			values[i][row] = ms(d)
		}
		marks = append(marks, plotter.XY{X: ms(latency), Y: float64(row)})
	}
	slot := vg.Centimeter * 0.9
	var below *plotter.BarChart
	for i, st := range Stages {
		bars, err := plotter.NewBarChart(values[i], slot*0.6)
		if err != nil {
			return nil, fmt.Errorf("plots: stage %q: %w", st.Name, err)
		}
		bars.Horizontal = true
		bars.Color = stageColours[i]
		bars.LineStyle = draw.LineStyle{Color: color.White, Width: vg.Points(0.5)}
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		p.Add(bars)
		p.Legend.Add(st.Name, bars)
	}
	if len(marks) > 0 {
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return nil, fmt.Errorf("plots: median latency: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		p.Legend.Add("median latency", sc)
	}
	if !drawn {
		noData(p)
	}
	p.NominalY(names...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	// Room beyond the longest bar for its dot.
	p.X.Min, p.X.Max = 0, max(p.X.Max*1.04, 1)
	return figure([]*plot.Plot{p}, width, max(6*vg.Centimeter, 3.5*vg.Centimeter+slot*vg.Length(n)))
}
