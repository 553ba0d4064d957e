package measure

import (
	"time"

	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/result"
)

// Summarise computes the summary over the whole session. A figure that
// cannot be measured (no frame displayed, say) stays zero.
func Summarise(r *result.Run) result.Summary {
	from, to := time.Duration(0), r.Ran
	s := result.Summary{
		Frames:   len(r.Frames),
		Skipped:  map[string]int{},
		Dropped:  map[string]int{},
		Freezes:  []result.Interval{},
		Recovery: []result.Recovery{},
	}
	w := newWindow(r, from, to)
	disp := w.displayedFrames()
	s.Displayed = len(disp)
	if len(disp) > 0 {
		s.FirstDisplay = disp[0].Displayed
		lat := Latencies(disp)
		s.Latency = result.LatencySummary{Median: quantile.Nearest(lat, 0.5), P95: quantile.Nearest(lat, 0.95), P99: quantile.Nearest(lat, 0.99), Min: lat[0], Max: lat[len(lat)-1]}
	}
	if v, err := w.networkMedian(); err == nil {
		s.NetworkMedian = v
	}
	if v, err := w.estimateErrorMax(); err == nil {
		s.EstimateErrorMax = v
	}
	s.FPS = float64(len(disp)) / w.length().Seconds()
	if fz, longest, err := w.freezes(); err == nil {
		s.Freezes, s.FreezeLongest = fz, longest
	}
	for _, e := range w.events() {
		switch e.Kind {
		case result.EventSkip:
			s.Skipped[e.Reason]++
		case result.EventDrop:
			s.Dropped[e.Reason]++
		}
	}
	s.BitrateMean = w.bitrateMean()
	if v, err := w.bitrateMin(); err == nil {
		s.BitrateMin = v
	}
	if v, err := w.qualityFinal(); err == nil {
		s.QualityFinal = v
	}
	s.Refinements = w.refinements()
	if v, err := w.utilisation(); err == nil {
		s.Utilisation = &v
	}
	if rec, err := w.recoveries(); err == nil {
		s.Recovery = rec
	}
	s.Flows, s.Fairness = summariseFlows(r)
	return s
}
