package lab

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/metrics"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// WriteOpenMetrics writes a finished run as OpenMetrics text with explicit
// timestamps, ready for `promtool tsdb create-blocks-from openmetrics`, so
// that a past (virtual-time) run can be looked at in Grafana on its own
// time axis: time zero of the run is start, and the figures are those of
// time zero and of the end of each point of its time series (every 250
// ms).
//
// The run is replayed through the live metrics (package metrics), so the
// names, types, help and buckets are the ones a live run serves, each
// labelled with the scenario's name: counters and histograms cumulative
// from time zero, gauges as sampled. Each instant counts what happened
// before it, as the series' points do. The result keeps the links' drops
// only as totals, so lab_link_dropped_packets_total stays at zero until
// the last instant, which has them all.
func WriteOpenMetrics(w io.Writer, r *result.Run, start time.Time) error {
	reg := prometheus.NewRegistry()
	var labels prometheus.Labels
	if r.Scenario != "" {
		labels = prometheus.Labels{"scenario": r.Scenario}
	}
	m, err := metrics.New(reg, labels)
	if err != nil {
		return fmt.Errorf("openmetrics: %w", err)
	}

	// The instants: time zero of the series and the end of each point.
	instants := []time.Duration{0}
	if len(r.Series) > 0 {
		instants[0] = r.Series[0].From
		for _, p := range r.Series {
			instants = append(instants, p.To)
		}
	} else if r.Ran > 0 {
		instants = append(instants, r.Ran)
	}

	var families []*dto.MetricFamily
	byName := map[string]*dto.MetricFamily{}
	from := time.Duration(math.MinInt64)
	for i, to := range instants {
		replay(m, r, from, to)
		if i > 0 {
			last := i == len(instants)-1
			if len(r.Series) > 0 {
				p := r.Series[i-1]
				m.Link(metrics.Up, seriesLink(p.Up, p, r.Links.Up, last))
				m.Link(metrics.Down, seriesLink(p.Down, p, r.Links.Down, last))
				if err := replayFlows(m, r, p); err != nil {
					return fmt.Errorf("openmetrics: %w", err)
				}
			} else if last {
				m.Link(metrics.Up, metrics.LinkSample{DeliveredBytes: r.Links.Up.DeliveredBytes, Dropped: r.Links.Up.Dropped})
				m.Link(metrics.Down, metrics.LinkSample{DeliveredBytes: r.Links.Down.DeliveredBytes, Dropped: r.Links.Down.Dropped})
			}
		}
		gathered, err := reg.Gather()
		if err != nil {
			return fmt.Errorf("openmetrics: %w", err)
		}
		ts := start.Add(to).UnixMilli()
		for _, f := range gathered {
			for _, mt := range f.Metric {
				mt.TimestampMs = &ts
			}
			if acc, ok := byName[f.GetName()]; ok {
				acc.Metric = append(acc.Metric, f.Metric...)
				continue
			}
			byName[f.GetName()] = f
			families = append(families, f)
		}
		from = to
	}

	for _, f := range families {
		// OpenMetrics wants each series' points together, in time
		// order; the gathering gave them instant by instant.
		slices.SortStableFunc(f.Metric, func(a, b *dto.Metric) int {
			return cmp.Compare(labelKey(a), labelKey(b))
		})
		if _, err := expfmt.MetricFamilyToOpenMetrics(w, f); err != nil {
			return fmt.Errorf("openmetrics: %w", err)
		}
	}
	if _, err := expfmt.FinalizeOpenMetrics(w); err != nil {
		return fmt.Errorf("openmetrics: %w", err)
	}
	return nil
}

// replay feeds m with what happened in [from, to) and the target at to.
// A frame's zero instant means it did not happen (result.FrameRecord), so only
// positive instants count.
func replay(m *metrics.Metrics, r *result.Run, from, to time.Duration) {
	in := func(t time.Duration) bool { return t >= from && t < to }
	happened := func(t time.Duration) bool { return t > 0 && in(t) }
	for _, f := range r.Frames {
		if happened(f.Sent) {
			m.FrameSent(f.Bytes)
		}
		if happened(f.Arrived) {
			m.FrameArrived(f.Network)
		}
		if happened(f.Displayed) {
			m.FrameDisplayed(f.Latency)
			if f.Damaged {
				m.FrameDamaged()
			}
		}
	}
	for _, e := range r.Events {
		if !in(e.At) {
			continue
		}
		switch e.Kind {
		case result.EventSkip:
			m.FrameSkipped(e.Reason)
		case result.EventDrop:
			m.FrameDropped(e.Reason)
		case result.EventAsk:
			m.RepairAsked(e.Reason)
		}
	}
	for _, d := range r.Decisions {
		if in(d.At) {
			m.Decision(d.Rule)
		}
	}
	if b, ok := measure.TargetAt(r, to); ok {
		m.Target(b)
	}
}

// seriesLink is a point's link as a metrics sample; the last one carries
// the run's drops.
func seriesLink(lp result.LinkPoint, p result.Point, total result.LinkTotal, last bool) metrics.LinkSample {
	s := metrics.LinkSample{
		QueueBytes: lp.QueueBytes,
		QueueDelay: lp.QueueDelay,
		// ThroughputBps was made from a whole number of bytes over the
		// point's length: rounding undoes the division.
		DeliveredBytes: uint64(math.Round(lp.ThroughputBps * (p.To - p.From).Seconds() / 8)),
	}
	if last {
		s.Dropped = total.Dropped
	}
	return s
}

// labelKey orders a family's series.
func labelKey(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		b.WriteString(l.GetName())
		b.WriteByte(0)
		b.WriteString(l.GetValue())
		b.WriteByte(0)
	}
	return b.String()
}

// replayFlows feeds each flow's payload over one point of the series and
// its share of its link's capacity then, as a live run's samples do; a
// result without traffic feeds none.
func replayFlows(m *metrics.Metrics, r *result.Run, p result.Point) error {
	if len(r.Traffic) == 0 || p.To <= p.From {
		return nil
	}
	type flow struct{ name, direction string }
	fl := []flow{{scenarios.MainFlow, metrics.Down}}
	for _, f := range r.Traffic {
		fl = append(fl, flow{f.Name, f.Direction})
	}
	secs := (p.To - p.From).Seconds()
	for _, f := range fl {
		bps, err := measure.OfWith(r, "flow.throughput", p.From, p.To, measure.Params{Flow: f.name})
		if err != nil {
			return err
		}
		s := metrics.FlowSample{DeliveredBytes: uint64(math.Round(bps * secs / 8))}
		link := p.Down
		if f.direction == metrics.Up {
			link = p.Up
		}
		if link.Capped && link.CapacityBps > 0 {
			s.Share, s.Capped = bps/link.CapacityBps, true
		}
		m.Flow(f.name, f.direction, s)
	}
	return nil
}
