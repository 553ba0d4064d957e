package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/result"
)

// Series is a labelled set of latencies, in seconds (the catalogue's
// unit); plots show them in milliseconds.
type Series struct {
	Label  string
	Values []float64
}

// LatencyOverTime draws two panels on one time axis (seconds from time
// zero): above, the median latency of each of a result's sample buckets,
// a line per label; below, in Mbit/s, the downlink's capacity where it
// has a bottleneck, the controller's target bitrate and the video sent.
// Each network phase change of the downlink is a dotted line across both
// panels, so a reader sees what the network did and how latency and the
// controller answered. A bucket in which nothing was displayed leaves a
// gap in the latency line: its median does not exist.
//
// Labels are drawn in sorted order, so a label keeps its colour from run
// to run. An empty map is ErrNoData; results without samples draw empty
// panels.
func LatencyOverTime(title string, results map[string]*result.Run) ([]byte, error) {
	labels, err := sortedLabels(results)
	if err != nil {
		return nil, err
	}
	top := newPlot(title, "", latencyAxisLabel(results, labels))
	bottom := newPlot("", "time since start (s)", "bitrate (Mbit/s)")
	single := len(labels) == 1
	end := 0.0
	var lats []float64
	for _, l := range labels {
		r := results[l]
		end = max(end, r.Ran.Seconds())
		if n := len(r.Series); n > 0 {
			end = max(end, r.Series[n-1].To.Seconds())
		}
		for _, pt := range r.Series {
			if pt.Displayed > 0 {
				lats = append(lats, ms(pt.LatencyMedian))
			}
		}
	}
	logY := logWorthIt(lats)
	if logY {
		useLog(&top.Y)
	}
	drawn := false
	for i, l := range labels {
		st := seriesStyle(i)
		added := false
		for _, seg := range latencySegments(results[l].Series, logY) {
			line, err := plotter.NewLine(seg)
			if err != nil {
				return nil, fmt.Errorf("plots: latency of %q: %w", l, err)
			}
			line.LineStyle = st
			top.Add(line)
			if !added {
				top.Legend.Add(legendText(l), line)
				added = true
			}
		}
		drawn = drawn || added
	}
	if !drawn {
		noData(top)
	}
	bitsDrawn, err := addBitrates(bottom, results, labels, single)
	if err != nil {
		return nil, err
	}
	if !bitsDrawn {
		noData(bottom)
	}
	if changes := phaseChanges(results, labels); len(changes) > 0 {
		mark := vlines{xs: changes, LineStyle: phaseStyle()}
		top.Add(mark)
		bottom.Add(mark)
		top.Legend.Add("downlink change", mark)
	}
	if end > 0 {
		for _, p := range []*plot.Plot{top, bottom} {
			p.X.Min, p.X.Max = 0, end
		}
	}
	bottom.Y.Min = 0
	top.X.Tick.Marker = unlabelled{niceTicks{}}
	return figure([]*plot.Plot{top, bottom}, width, 7*vg.Centimeter)
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

// latencyAxisLabel names the bucket's length when all results share it.
func latencyAxisLabel(results map[string]*result.Run, labels []string) string {
	every := results[labels[0]].SampleEvery
	for _, l := range labels[1:] {
		if results[l].SampleEvery != every {
			every = 0
		}
	}
	if every <= 0 {
		return "median latency per sample (ms)"
	}
	return fmt.Sprintf("median latency per %v (ms)", every)
}

// latencySegments are the runs of buckets with a median, each point at its
// bucket's middle; on a log axis a median of 0 cannot be drawn either.
func latencySegments(series []result.Point, logY bool) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	for _, pt := range series {
		v := ms(pt.LatencyMedian)
		if pt.Displayed == 0 || (logY && v <= 0) || pt.To <= pt.From {
			if len(cur) > 0 {
				segs = append(segs, cur)
				cur = nil
			}
			continue
		}
		if logY {
			v = logValue(v)
		}
		cur = append(cur, plotter.XY{X: (pt.From + pt.To).Seconds() / 2, Y: v})
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs
}

func phaseStyle() draw.LineStyle {
	return lineStyle(darkGrey, 1, []vg.Length{vg.Points(2), vg.Points(3)})
}

// addBitrates draws capacity, target and video sent; it tells whether it
// drew anything.
func addBitrates(p *plot.Plot, results map[string]*result.Run, labels []string, single bool) (bool, error) {
	drawn := false
	// One capacity when the results share the network (a comparison of
	// controllers over one scenario), one per result otherwise.
	shared := true
	for _, l := range labels[1:] {
		if !sameCapacity(results[labels[0]].Series, results[l].Series) {
			shared = false
		}
	}
	for i, l := range labels {
		if shared && i > 0 {
			break
		}
		name, st := "downlink capacity", lineStyle(darkGrey, 1, nil)
		var fill color.Color = lightGrey
		if !shared {
			// Wide and pale under the result's own lines, no fill:
			// fills of several results would hide each other.
			name = "capacity: " + l
			st, fill = lineStyle(withAlpha(palette[i%len(palette)], 0x60), 4, nil), nil
		}
		added := false
		for _, seg := range capacitySegments(results[l].Series) {
			line, err := plotter.NewLine(seg)
			if err != nil {
				return false, fmt.Errorf("plots: capacity of %q: %w", l, err)
			}
			line.StepStyle = plotter.PostStep
			line.LineStyle = st
			line.FillColor = fill
			p.Add(line)
			if !added {
				p.Legend.Add(legendText(name), line)
				added = true
			}
		}
		drawn = drawn || added
	}
	for i, l := range labels {
		r := results[l]
		st := seriesStyle(i)
		targetName, sentName := "target: "+l, "sent: "+l
		if single {
			targetName, sentName = "target bitrate", "video sent"
		}
		if xys := targetSteps(r); len(xys) > 0 {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return false, fmt.Errorf("plots: target of %q: %w", l, err)
			}
			line.StepStyle = plotter.PostStep
			line.LineStyle = st
			line.Width = vg.Points(1.8)
			line.Dashes = []vg.Length{vg.Points(5), vg.Points(2.5)}
			p.Add(line)
			p.Legend.Add(legendText(targetName), line)
			drawn = true
		}
		if xys := sentSteps(r.Series); len(xys) > 0 {
			line, err := plotter.NewLine(xys)
			if err != nil {
				return false, fmt.Errorf("plots: video sent of %q: %w", l, err)
			}
			line.StepStyle = plotter.PostStep
			line.LineStyle = st
			line.Width = vg.Points(1)
			p.Add(line)
			p.Legend.Add(legendText(sentName), line)
			drawn = true
		}
	}
	return drawn, nil
}

func sameCapacity(a, b []result.Point) bool {
	return slices.EqualFunc(a, b, func(x, y result.Point) bool {
		return x.From == y.From && x.To == y.To && x.Down.Capped == y.Down.Capped && x.Down.CapacityBps == y.Down.CapacityBps
	})
}

// capacitySegments are the runs of buckets with a bottleneck on the
// downlink, as steps: a point at each bucket's start and one at the run's
// end.
func capacitySegments(series []result.Point) []plotter.XYs {
	return linkCapacitySegments(series, func(pt result.Point) result.LinkPoint { return pt.Down })
}

// linkCapacitySegments is capacitySegments for the link that link picks
// from each point.
func linkCapacitySegments(series []result.Point, link func(result.Point) result.LinkPoint) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	closeRun := func(at time.Duration, v float64) {
		if len(cur) > 0 {
			segs = append(segs, append(cur, plotter.XY{X: at.Seconds(), Y: v}))
			cur = nil
		}
	}
	for i, pt := range series {
		v := link(pt).CapacityBps / 1e6
		if !link(pt).Capped || math.IsNaN(v) || math.IsInf(v, 0) || pt.To <= pt.From {
			if i > 0 {
				closeRun(series[i-1].To, link(series[i-1]).CapacityBps/1e6)
			}
			continue
		}
		cur = append(cur, plotter.XY{X: pt.From.Seconds(), Y: v})
	}
	if n := len(series); n > 0 {
		closeRun(series[n-1].To, link(series[n-1]).CapacityBps/1e6)
	}
	return segs
}

// targetSteps is the controller's target as steps from its changes,
// exact to the instant, up to the end of the run; from the samples when
// the result has no changes recorded. Changes before time zero (the
// target the agent started with) count from zero.
func targetSteps(r *result.Run) plotter.XYs {
	end := r.Ran
	if n := len(r.Series); n > 0 {
		end = max(end, r.Series[n-1].To)
	}
	var xys plotter.XYs
	if len(r.Targets) > 0 {
		ts := slices.Clone(r.Targets)
		slices.SortStableFunc(ts, func(a, b result.TargetRecord) int { return int(a.At - b.At) })
		for _, t := range ts {
			at := max(t.At, 0)
			if n := len(xys); n > 0 && xys[n-1].X == at.Seconds() {
				xys[n-1].Y = float64(t.Bps) / 1e6
				continue
			}
			xys = append(xys, plotter.XY{X: at.Seconds(), Y: float64(t.Bps) / 1e6})
		}
		if last := xys[len(xys)-1]; end.Seconds() > last.X {
			xys = append(xys, plotter.XY{X: end.Seconds(), Y: last.Y})
		}
		return xys
	}
	for _, pt := range r.Series {
		// The sample's target is the one at its end.
		xys = append(xys, plotter.XY{X: pt.To.Seconds(), Y: float64(pt.TargetBps) / 1e6})
	}
	return xys
}

// sentSteps is the video handed to QUIC, bucket by bucket.
func sentSteps(series []result.Point) plotter.XYs {
	var xys plotter.XYs
	for _, pt := range series {
		if pt.To <= pt.From || math.IsNaN(pt.SendBps) || math.IsInf(pt.SendBps, 0) {
			continue
		}
		xys = append(xys, plotter.XY{X: pt.From.Seconds(), Y: pt.SendBps / 1e6})
	}
	if n := len(series); n > 0 && len(xys) > 0 {
		xys = append(xys, plotter.XY{X: series[n-1].To.Seconds(), Y: xys[len(xys)-1].Y})
	}
	return xys
}

// phaseChanges are the instants after zero at which a result's downlink
// changed phase, all results together, each once.
func phaseChanges(results map[string]*result.Run, labels []string) []float64 {
	var xs []float64
	for _, l := range labels {
		for _, ph := range results[l].Network.Down {
			if ph.At > 0 {
				xs = append(xs, ph.At.Seconds())
			}
		}
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// LatencyCDF draws each series' cumulative distribution: for a latency on
// the x axis (ms), the share of values at or below it. Dotted lines mark
// the median and the 95th percentile, where the legend gives each series'
// figures. The latency axis is logarithmic when the values span more than
// a factor of 20, so both the body and the tail can be read.
//
// No series at all is ErrNoData; series without values draw an empty plot.
// NaN and infinite values are left out.
func LatencyCDF(title string, series []Series) ([]byte, error) {
	if len(series) == 0 {
		return nil, fmt.Errorf("%w: no series", ErrNoData)
	}
	vals := make([][]float64, len(series))
	var all []float64
	for i, s := range series {
		v := finite(s.Values)
		for j := range v {
			v[j] *= 1e3
		}
		slices.Sort(v)
		vals[i] = v
		all = append(all, v...)
	}
	logX := logWorthIt(all)
	p := newPlot(title, "latency (ms)", "values at or below (%)")
	if logX {
		useLog(&p.X)
	}
	drawn := false
	for i, s := range series {
		v := vals[i]
		if logX {
			// A log axis has no place for 0 or less.
			v = v[sortedFirstAbove(v, 0):]
		}
		if len(v) == 0 {
			continue
		}
		at := func(x float64) float64 {
			if logX {
				return logValue(x)
			}
			return x
		}
		xys := make(plotter.XYs, 0, len(v)+1)
		xys = append(xys, plotter.XY{X: at(v[0]), Y: 0})
		for j, x := range v {
			xys = append(xys, plotter.XY{X: at(x), Y: 100 * float64(j+1) / float64(len(v))})
		}
		line, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plots: CDF of %q: %w", s.Label, err)
		}
		line.StepStyle = plotter.PostStep
		line.LineStyle = seriesStyle(i)
		p.Add(line)
		// The figures matter more than the whole of a long label.
		p.Legend.Add(fmt.Sprintf("%s: median %s, p95 %s", legendText(s.Label), fmtMs(nearest(v, 0.5)), fmtMs(nearest(v, 0.95))), line)
		drawn = true
	}
	if !drawn {
		noData(p)
	}
	for _, q := range []float64{50, 95} {
		f := plotter.NewFunction(func(float64) float64 { return q })
		f.LineStyle = lineStyle(grey, 0.8, []vg.Length{vg.Points(1.5), vg.Points(2.5)})
		p.Add(f)
	}
	p.Y.Min, p.Y.Max = 0, 100
	p.Y.Tick.Marker = plot.ConstantTicks(percentTicks())
	return figure([]*plot.Plot{p}, width, height)
}

func percentTicks() []plot.Tick {
	var ts []plot.Tick
	for _, v := range []float64{0, 25, 50, 75, 95, 100} {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
	}
	return ts
}

// sortedFirstAbove is the index of the first value above x in sorted v.
func sortedFirstAbove(v []float64, x float64) int {
	i, _ := slices.BinarySearchFunc(v, x, func(e, t float64) int {
		if e <= t {
			return -1
		}
		return 1
	})
	return i
}

// nearest is the nearest-rank quantile of sorted values (the lab's one
// definition, as in the run's summary), NaN for none.
func nearest(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return quantile.Nearest(sorted, q)
}

// fmtMs prints milliseconds with the precision a reader needs.
func fmtMs(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.1f ms", v)
	}
}
