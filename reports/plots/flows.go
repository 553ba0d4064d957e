package plots

import (
	"fmt"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// FlowPeriod is the period FlowsOverTime averages a flow's throughput
// over: a second, where a session's video, frame by frame, and a TCP
// flow's bursts even out; the sample period for runs shorter than 10 s,
// which a second would leave with a handful of points.
func FlowPeriod(r *result.Run) time.Duration {
	if r.Ran >= 10*time.Second {
		return time.Second
	}
	if r.SampleEvery > 0 {
		return r.SampleEvery
	}
	return result.DefaultSampleEvery
}

// FlowsOverTime draws each flow's throughput over the session, a line per
// flow (the scenario's own session, main, first) in Mbit/s per
// FlowPeriod, over the capacity of the link the flow's data crosses, so a
// reader sees who took the link when: the downlink's flows above, the
// uplink's below when any flow sends up. Dotted lines mark the downlink's
// phase changes. A result without traffic is ErrNoData: main alone is
// LatencyOverTime's bitrate panel.
func FlowsOverTime(title string, r *result.Run) ([]byte, error) {
	if r == nil || len(r.Traffic) == 0 {
		return nil, fmt.Errorf("%w: no traffic", ErrNoData)
	}
	every := FlowPeriod(r)
	type flow struct{ name, label, direction string }
	fl := []flow{{scenarios.MainFlow, "main (the session)", "down"}}
	up := false
	for _, f := range r.Traffic {
		fl = append(fl, flow{f.Name, f.Name + " (" + f.Kind + ")", f.Direction})
		up = up || f.Direction == "up"
	}
	yLabel := fmt.Sprintf("Mbit/s per %v", every)
	down := newPlot(title, "", "downlink, "+yLabel)
	panels := []*plot.Plot{down}
	var upPlot *plot.Plot
	if up {
		upPlot = newPlot("", "time since start (s)", "uplink, "+yLabel)
		panels = append(panels, upPlot)
		down.X.Tick.Marker = unlabelled{niceTicks{}}
	} else {
		down.X.Label.Text = "time since start (s)"
	}
	for _, link := range []struct {
		p    *plot.Plot
		name string
		of   func(result.Point) result.LinkPoint
	}{
		{down, "downlink capacity", func(pt result.Point) result.LinkPoint { return pt.Down }},
		{upPlot, "uplink capacity", func(pt result.Point) result.LinkPoint { return pt.Up }},
	} {
		if link.p == nil {
			continue
		}
		added := false
		for _, seg := range linkCapacitySegments(r.Series, link.of) {
			line, err := plotter.NewLine(seg)
			if err != nil {
				return nil, fmt.Errorf("plots: %s: %w", link.name, err)
			}
			line.StepStyle = plotter.PostStep
			line.LineStyle = lineStyle(darkGrey, 1, nil)
			line.FillColor = lightGrey
			link.p.Add(line)
			if !added {
				link.p.Legend.Add(link.name, line)
				added = true
			}
		}
	}
	drawn := map[*plot.Plot]bool{}
	for i, f := range fl {
		v, err := measure.FlowThroughputs(r, f.name, every)
		if err != nil {
			return nil, fmt.Errorf("plots: flow %q: %w", f.name, err)
		}
		if len(v) == 0 {
			continue
		}
		xys := make(plotter.XYs, 0, len(v)+1)
		for k, bps := range v {
			xys = append(xys, plotter.XY{X: (time.Duration(k) * every).Seconds(), Y: bps / 1e6})
		}
		xys = append(xys, plotter.XY{X: r.Ran.Seconds(), Y: v[len(v)-1] / 1e6})
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plots: flow %q: %w", f.name, err)
		}
		line.StepStyle = plotter.PostStep
		line.LineStyle = seriesStyle(i)
		if i == 0 {
			line.Width = vg.Points(2.2) // the session reads first
		}
		p := down
		if f.direction == "up" {
			p = upPlot
		}
		p.Add(line)
		p.Legend.Add(legendText(f.label), line)
		drawn[p] = true
	}
	if changes := phaseChanges(map[string]*result.Run{"": r}, []string{""}); len(changes) > 0 {
		mark := vlines{xs: changes, LineStyle: phaseStyle()}
		for _, p := range panels {
			p.Add(mark)
		}
		down.Legend.Add("downlink change", mark)
	}
	for _, p := range panels {
		if !drawn[p] {
			noData(p)
		}
		if r.Ran > 0 {
			p.X.Min, p.X.Max = 0, r.Ran.Seconds()
		}
		p.Y.Min = 0
	}
	return figure(panels, width, 7*vg.Centimeter)
}
