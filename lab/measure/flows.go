package measure

import (
	"fmt"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// The measurements of competing traffic: a flow's throughput and share of
// its link, a session's latency, and Jain's fairness across the media
// sessions. A flow is named as the scenario names it; main is the
// scenario's own session.

// flowOf finds a flow of the result's traffic; nil for main.
func flowOf(r *result.Run, name string) (*result.FlowRecord, error) {
	if name == scenarios.MainFlow {
		return nil, nil
	}
	i := slices.IndexFunc(r.Traffic, func(f result.FlowRecord) bool { return f.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("%w: no flow %q in the result's traffic", ErrParams, name)
	}
	return &r.Traffic[i], nil
}

// deliveredBits is what the flow's receiver got in [a, b): main's and a
// session's frames by arrival, the other flows' periods, prorated where
// the interval cuts one.
func deliveredBits(r *result.Run, f *result.FlowRecord, a, b time.Duration) float64 {
	return deliveriesOf(r, f).bits(a, b)
}

// deliveries is what a flow's receiver got, for taking over many
// intervals (a series' points, a plot's periods): frames indexed by
// arrival, or a flow's bytes per period.
type deliveries struct {
	frames    *FrameBytes
	delivered []int64
	period    time.Duration
}

func deliveriesOf(r *result.Run, f *result.FlowRecord) deliveries {
	if f == nil {
		fb := NewFrameBytes(r.Frames, func(fr result.FrameRecord) time.Duration { return fr.Arrived })
		return deliveries{frames: &fb}
	}
	if len(f.Frames) > 0 || len(f.Delivered) == 0 {
		fb := flowFrameBytes(f.Frames)
		return deliveries{frames: &fb}
	}
	period := r.SampleEvery
	if period <= 0 {
		period = result.DefaultSampleEvery
	}
	return deliveries{delivered: f.Delivered, period: period}
}

// bits is what arrived in [a, b). A flow's periods are added in order,
// starting at the first that [a, b) touches and stopping after the last:
// the periods skipped would add nothing, so the float sum is the one a
// loop over every period makes.
func (d deliveries) bits(a, b time.Duration) float64 {
	if d.frames != nil {
		return float64(d.frames.In(a, b) * 8)
	}
	var bits float64
	for k := max(0, int(a/d.period)); k < len(d.delivered) && time.Duration(k)*d.period < b; k++ {
		bytes := d.delivered[k]
		lo, hi := max(a, time.Duration(k)*d.period), min(b, time.Duration(k+1)*d.period)
		if hi > lo {
			bits += float64(bytes*8) * float64(hi-lo) / float64(d.period)
		}
	}
	return bits
}

// direction is the link a flow's data crossed: main's video goes down.
func direction(f *result.FlowRecord) string {
	if f == nil {
		return "down"
	}
	return f.Direction
}

func (w window) flowThroughput(name string) (float64, error) {
	f, err := flowOf(w.r, name)
	if err != nil {
		return 0, err
	}
	return deliveredBits(w.r, f, w.from, w.to) / w.length().Seconds(), nil
}

// flowShare is the flow's payload over the capacity of its link, over the
// parts of the window where the link has a bottleneck (as utilisation
// counts the video).
func (w window) flowShare(name string) (float64, error) {
	f, err := flowOf(w.r, name)
	if err != nil {
		return 0, err
	}
	if f != nil && len(f.Hops) > 0 {
		return 0, fmt.Errorf("%w: flow %s crosses part of the path (hops %v), and its share would count over the narrowest hop", ErrNoData, name, f.Hops)
	}
	dir := direction(f)
	got := deliveriesOf(w.r, f)
	var capBits, bits float64
	capped := false
	for _, pt := range w.r.Series {
		lp := pt.Down
		if dir == "up" {
			lp = pt.Up
		}
		if !lp.Capped {
			continue
		}
		lo, hi := max(pt.From, w.from), min(pt.To, w.to)
		if hi <= lo {
			continue
		}
		capped = true
		capBits += lp.CapacityBps * (hi - lo).Seconds()
		bits += got.bits(lo, hi)
	}
	switch {
	case !capped:
		return 0, fmt.Errorf("%w: the %slink has no rate cap or trace in %v", ErrNoData, dir, w)
	case capBits == 0:
		return 0, fmt.Errorf("%w: the %slink's trace offers no capacity in %v", ErrNoData, dir, w)
	}
	return bits / capBits, nil
}

// flowLatency is a quantile of the latency of the session's frames
// displayed in the window.
func (w window) flowLatency(name string, q float64) (float64, error) {
	f, err := flowOf(w.r, name)
	if err != nil {
		return 0, err
	}
	if f == nil {
		d, err := w.latencyQuantile(q)
		return d.Seconds(), err
	}
	if !scenarios.IsMediaFlow(f.Kind) {
		return 0, fmt.Errorf("%w: %s is a %s flow: it has no frames, no latency", ErrParams, f.Name, f.Kind)
	}
	lat := flowLatencies(f, w.from, w.to)
	if len(lat) == 0 {
		return 0, fmt.Errorf("%w: %s displayed no frame in %v", ErrNoData, f.Name, w)
	}
	return quantile.Nearest(lat, q).Seconds(), nil
}

// flowLatencies are the sorted latencies of a session flow's frames
// displayed in [a, b).
func flowLatencies(f *result.FlowRecord, a, b time.Duration) []time.Duration {
	var lat []time.Duration
	for _, fr := range f.Frames {
		if fr.Displayed > 0 && fr.Displayed >= a && fr.Displayed < b {
			lat = append(lat, fr.Latency)
		}
	}
	slices.Sort(lat)
	return lat
}

// jain is Jain's fairness index, (sum x)^2 / (n sum x^2), over the
// throughputs in the window of the media sessions on the downlink: main
// and each session flow that ran during some of it.
func (w window) jain() (float64, error) {
	xs := []float64{deliveredBits(w.r, nil, w.from, w.to)}
	for i := range w.r.Traffic {
		f := &w.r.Traffic[i]
		if f.Kind == "session" && f.Start < w.to && f.Stop > w.from {
			xs = append(xs, deliveredBits(w.r, f, w.from, w.to))
		}
	}
	if len(xs) < 2 {
		return 0, fmt.Errorf("%w: no session flow ran in %v beside the scenario's own: fairness needs two", ErrNoData, w)
	}
	return Jain(xs)
}

// Jain is Jain's fairness index of xs: 1 when they are all equal, 1/n
// when one has everything.
func Jain(xs []float64) (float64, error) {
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	if sq == 0 {
		return 0, fmt.Errorf("%w: every flow delivered nothing", ErrNoData)
	}
	return sum * sum / (float64(len(xs)) * sq), nil
}

// summariseFlows sums up main and each flow over the time it ran.
func summariseFlows(r *result.Run) ([]result.FlowSummary, *float64) {
	if len(r.Traffic) == 0 {
		return nil, nil
	}
	out := []result.FlowSummary{summariseFlow(r, scenarios.MainFlow, 0, r.Ran)}
	for _, f := range r.Traffic {
		out = append(out, summariseFlow(r, f.Name, f.Start, min(f.Stop, r.Ran)))
	}
	var fairness *float64
	if v, err := newWindow(r, 0, r.Ran).jain(); err == nil {
		fairness = &v
	}
	return out, fairness
}

func summariseFlow(r *result.Run, name string, from, to time.Duration) result.FlowSummary {
	s := result.FlowSummary{Name: name}
	if to <= from {
		return s
	}
	w := newWindow(r, from, to)
	s.ThroughputBps, _ = w.flowThroughput(name)
	if v, err := w.flowShare(name); err == nil {
		s.Share = &v
	}
	f, _ := flowOf(r, name)
	var lat []time.Duration
	switch {
	case f == nil:
		lat = Latencies(w.displayedFrames())
	case scenarios.IsMediaFlow(f.Kind):
		lat = flowLatencies(f, from, to)
	}
	if len(lat) > 0 {
		s.Latency = &result.LatencySummary{Median: quantile.Nearest(lat, 0.5), P95: quantile.Nearest(lat, 0.95),
			P99: quantile.Nearest(lat, 0.99), Min: lat[0], Max: lat[len(lat)-1]}
	}
	return s
}

// FlowThroughputs is a flow's throughput (bit/s, as flow.throughput) in
// each period of every from time zero to the end of the run: what a plot
// of the flows over time draws. name is a flow of the result's traffic or
// main; the last period may be shorter than every.
func FlowThroughputs(r *result.Run, name string, every time.Duration) ([]float64, error) {
	if every <= 0 {
		return nil, fmt.Errorf("%w: a period of %v", ErrParams, every)
	}
	f, err := flowOf(r, name)
	if err != nil {
		return nil, err
	}
	got := deliveriesOf(r, f)
	var out []float64
	for a := time.Duration(0); a < r.Ran; a += every {
		b := min(a+every, r.Ran)
		out = append(out, got.bits(a, b)/(b-a).Seconds())
	}
	return out, nil
}
