package viewer

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/wire"
)

// figures collects the latency figures of the frames displayed in the
// current report period, and keeps the last period's for the status line.
type figures struct {
	mu      sync.Mutex
	latency []time.Duration
	network []time.Duration
	last    wire.Report // the last report sent
	sent    bool
	shown   wire.Report // the last report of a period with frames
	showing bool
}

func (fg *figures) add(latency, network time.Duration) {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	fg.latency = append(fg.latency, latency)
	fg.network = append(fg.network, network)
}

// close ends the period at end (viewer's clock) and returns its report.
func (fg *figures) close(end time.Time) *wire.Report {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	r := &wire.Report{End: end, Frames: uint32(len(fg.latency))}
	r.Median, r.Min = medianMin(fg.latency)
	r.NetworkMedian, r.NetworkMin = medianMin(fg.network)
	fg.latency, fg.network = fg.latency[:0], fg.network[:0]
	fg.last, fg.sent = *r, true
	if r.Frames > 0 {
		fg.shown, fg.showing = *r, true
	}
	return r
}

// medianMin returns the median (the mean of the two middle values for an
// even count) and the minimum; zeros for no values. ds is sorted in place.
// This is the product's own computation for its 250 ms reports, kept as
// the product has it; the lab's measurements use internal/quantile.
func medianMin(ds []time.Duration) (median, least time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	n := len(ds)
	if n%2 == 1 {
		return ds[n/2], ds[0]
	}
	return ds[n/2-1] + (ds[n/2]-ds[n/2-1])/2, ds[0]
}

// reportLoop sends a report every ReportEvery (N1), frames or not: a period
// without frames tells the agent so (a still screen, N13, or a stall). A
// report counts the frames displayed with figures: the first few, shown
// before the first clock exchange completed, have none and count in neither
// the figures nor Frames.
func (v *Viewer) reportLoop(ctx context.Context) {
	t := time.NewTicker(v.cfg.ReportEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			v.send(v.figures.close(v.clock.Now()))
			v.counters.add(func(c *Counters) { c.Reports++ })
		}
	}
}

// LastReport returns the last report sent; false before the first.
func (v *Viewer) LastReport() (wire.Report, bool) {
	v.figures.mu.Lock()
	defer v.figures.mu.Unlock()
	return v.figures.last, v.figures.sent
}

// Status is the live line for the session bar and the window title (N1):
// the last period's median and minimum latency, its network part (N12), and
// its frame rate, e.g. "latency 38 ms (min 31 ms) · network 12 ms · 60 fps".
// After a period without frames the latency figures are the last known and
// the rate is 0: a still screen is not a broken one.
func (v *Viewer) Status() string {
	v.figures.mu.Lock()
	last, sent, shown, showing := v.figures.last, v.figures.sent, v.figures.shown, v.figures.showing
	v.figures.mu.Unlock()
	if !showing {
		return "latency — · waiting for frames"
	}
	fps := 0.0
	if sent {
		fps = float64(last.Frames) / v.cfg.ReportEvery.Seconds()
	}
	return fmt.Sprintf("latency %d ms (min %d ms) · network %d ms · %.0f fps",
		ms(shown.Median), ms(shown.Min), ms(shown.NetworkMedian), fps)
}

func ms(d time.Duration) int64 { return int64(d.Round(time.Millisecond) / time.Millisecond) }
