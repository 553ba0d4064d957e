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

// StageBucket is one bucket [From, To) of StagesPerBucket: the median of
// each of Stages and of the latency over the frames displayed in it.
type StageBucket struct {
	From, To time.Duration
	// Frames counts the frames displayed in the bucket; the medians are 0
	// when it is 0.
	Frames  int
	Stages  []time.Duration
	Latency time.Duration
}

// StagesPerBucket splits a result's session into its sample buckets (the
// series', or SampleEvery steps from zero to the end when it has no
// series) and takes, for the frames displayed in each, the median of every
// stage of Stages and of the latency. Frames count by their display, as
// the latency over time does: a bucket shows what the viewer saw then,
// and how long each stage had held it. A frame missing an instant is left
// out, as in StageMedians.
func StagesPerBucket(r *result.Run) []StageBucket {
	var out []StageBucket
	for _, b := range buckets(r) {
		out = append(out, StageBucket{From: b.From, To: b.To, Stages: make([]time.Duration, len(Stages))})
	}
	if len(out) == 0 {
		return nil
	}
	per := make([][][]time.Duration, len(out)) // bucket -> stage -> durations
	lat := make([][]time.Duration, len(out))
	for _, f := range r.Frames {
		if !complete(f) {
			continue
		}
		i := bucketOf(out, f.Displayed)
		if i < 0 {
			continue
		}
		if per[i] == nil {
			per[i] = make([][]time.Duration, len(Stages))
		}
		for s, st := range Stages {
			per[i][s] = append(per[i][s], st.Of(f))
		}
		lat[i] = append(lat[i], f.Displayed-f.Captured)
	}
	for i := range out {
		out[i].Frames = len(lat[i])
		if out[i].Frames == 0 {
			continue
		}
		for s := range Stages {
			out[i].Stages[s] = quantile.Median(per[i][s])
		}
		out[i].Latency = quantile.Median(lat[i])
	}
	return out
}

// complete tells whether a frame was displayed and has every instant in
// order, so that its stages add up to its latency.
func complete(f result.FrameRecord) bool {
	return f.WasDisplayed() && f.Sent > 0 && f.Arrived > 0 && f.EncodeEnd >= f.Captured &&
		f.Sent >= f.EncodeEnd && f.Arrived >= f.Sent && f.Displayed >= f.Arrived
}

// buckets are the series' buckets, or steps of the sample period over
// the run when it has none.
func buckets(r *result.Run) []result.Interval {
	var out []result.Interval
	for _, pt := range r.Series {
		if pt.To > pt.From {
			out = append(out, result.Interval{From: pt.From, To: pt.To})
		}
	}
	if len(out) > 0 {
		return out
	}
	step := r.SampleEvery
	if step <= 0 {
		step = result.DefaultSampleEvery
	}
	for a := time.Duration(0); a < r.Ran; a += step {
		out = append(out, result.Interval{From: a, To: min(a+step, r.Ran)})
	}
	return out
}

// bucketOf is the index of the bucket holding t, -1 for none.
func bucketOf(bs []StageBucket, t time.Duration) int {
	lo, hi := 0, len(bs)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case t < bs[m].From:
			hi = m
		case t >= bs[m].To:
			lo = m + 1
		default:
			return m
		}
	}
	return -1
}

// StagesOverTime draws where a displayed frame's time went, bucket by
// bucket over the session (StagesPerBucket): the medians of the stages
// stacked in the frame's order as bands (encode, waiting to send, network,
// decode and display), and the median latency itself as a black line.
// A backlog shows as a band that grows: frames waiting in front of the
// network (the send cap) widen "waiting to send", a queue at the
// bottleneck widens "network". Medians do not add up, so the line can lie
// off the top of the bands. A dashed line is the mean wait in the
// downlink's bottleneck queue (the series' queue_delay): the part of
// "network" spent queued at the bottleneck, the rest on the wire or in
// QUIC's own send buffer, before the link, which the send cap bounds. A bucket in which nothing was displayed leaves
// a gap; dotted lines mark the downlink's phase changes. The time axis is
// the one LatencyOverTime uses, so the two figures read together; the
// delay axis is in seconds once it passes 5 s.
//
// A nil result is ErrNoData; one without displayed frames draws an empty
// plot that says so.
func StagesOverTime(title string, r *result.Run) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: no result", ErrNoData)
	}
	bs := StagesPerBucket(r)
	top := 0.0
	for _, b := range bs {
		if b.Frames == 0 {
			continue
		}
		var sum time.Duration
		for _, d := range b.Stages {
			sum += d
		}
		top = max(top, ms(sum), ms(b.Latency))
	}
	unit, scale := "ms", 1.0
	if top > 5000 {
		unit, scale = "s", 1e-3
	}
	every := r.SampleEvery
	if every <= 0 {
		every = result.DefaultSampleEvery
	}
	p := newPlot(title, "time since start (s)", fmt.Sprintf("median per %v, stacked (%s)", every, unit))
	drawn := false
	for s, st := range Stages {
		added := false
		for _, poly := range stageBands(bs, s, scale) {
			band, err := plotter.NewPolygon(poly)
			if err != nil {
				return nil, fmt.Errorf("plots: stage %q: %w", st.Name, err)
			}
			band.Color = stageColours[s]
			band.LineStyle = draw.LineStyle{Color: stageColours[s], Width: vg.Points(0.3)}
			p.Add(band)
			if !added {
				p.Legend.Add(st.Name, band)
				added = true
			}
		}
		drawn = drawn || added
	}
	added := false
	for _, seg := range latencySteps(bs, scale) {
		line, err := plotter.NewLine(seg)
		if err != nil {
			return nil, fmt.Errorf("plots: median latency: %w", err)
		}
		line.StepStyle = plotter.PostStep
		line.LineStyle = lineStyle(color.Black, 1.2, nil)
		p.Add(line)
		if !added {
			p.Legend.Add("median latency", line)
			added = true
		}
	}
	if seg := queueSteps(r.Series, scale); len(seg) > 0 {
		line, err := plotter.NewLine(seg)
		if err != nil {
			return nil, fmt.Errorf("plots: bottleneck queue: %w", err)
		}
		line.StepStyle = plotter.PostStep
		line.LineStyle = lineStyle(darkGrey, 1.2, []vg.Length{vg.Points(4), vg.Points(2)})
		p.Add(line)
		p.Legend.Add("downlink bottleneck queue", line)
	}
	if !drawn {
		noData(p)
	}
	if changes := phaseChanges(map[string]*result.Run{"": r}, []string{""}); len(changes) > 0 {
		mark := vlines{xs: changes, LineStyle: phaseStyle()}
		p.Add(mark)
		p.Legend.Add("downlink change", mark)
	}
	end := r.Ran
	if n := len(bs); n > 0 {
		end = max(end, bs[n-1].To)
	}
	if end > 0 {
		p.X.Min, p.X.Max = 0, end.Seconds()
	}
	p.Y.Min = 0
	return figure([]*plot.Plot{p}, width, height)
}

// stageBands are the polygons of stage s over the runs of buckets with
// frames: each bucket a flat step from the stages below it to their sum
// with s, in ms times scale.
func stageBands(bs []StageBucket, s int, scale float64) []plotter.XYs {
	var polys []plotter.XYs
	var upper, lower plotter.XYs
	flush := func() {
		if len(upper) > 0 {
			poly := append(plotter.XYs{}, upper...)
			for i := len(lower) - 1; i >= 0; i-- {
				poly = append(poly, lower[i])
			}
			polys = append(polys, poly)
		}
		upper, lower = nil, nil
	}
	for _, b := range bs {
		if b.Frames == 0 {
			flush()
			continue
		}
		var below time.Duration
		for _, d := range b.Stages[:s] {
			below += d
		}
		lo, hi := ms(below)*scale, ms(below+b.Stages[s])*scale
		x0, x1 := b.From.Seconds(), b.To.Seconds()
		upper = append(upper, plotter.XY{X: x0, Y: hi}, plotter.XY{X: x1, Y: hi})
		lower = append(lower, plotter.XY{X: x0, Y: lo}, plotter.XY{X: x1, Y: lo})
	}
	flush()
	return polys
}

// latencySteps are the runs of buckets with frames as steps of their
// median latency: a point at each bucket's start and one at the run's end.
func latencySteps(bs []StageBucket, scale float64) []plotter.XYs {
	var segs []plotter.XYs
	var cur plotter.XYs
	var last StageBucket
	flush := func() {
		if len(cur) > 0 {
			segs = append(segs, append(cur, plotter.XY{X: last.To.Seconds(), Y: ms(last.Latency) * scale}))
		}
		cur = nil
	}
	for _, b := range bs {
		if b.Frames == 0 {
			flush()
			continue
		}
		cur = append(cur, plotter.XY{X: b.From.Seconds(), Y: ms(b.Latency) * scale})
		last = b
	}
	flush()
	return segs
}

// queueSteps is the downlink's mean wait in its bottleneck queue, bucket by
// bucket, in ms times scale; none when no bucket had a queue.
func queueSteps(series []result.Point, scale float64) plotter.XYs {
	var xys plotter.XYs
	var last result.Point
	queued := false
	for _, pt := range series {
		if pt.To <= pt.From {
			continue
		}
		queued = queued || pt.Down.QueueDelay > 0
		xys = append(xys, plotter.XY{X: pt.From.Seconds(), Y: ms(pt.Down.QueueDelay) * scale})
		last = pt
	}
	if !queued {
		return nil
	}
	return append(xys, plotter.XY{X: last.To.Seconds(), Y: ms(last.Down.QueueDelay) * scale})
}
