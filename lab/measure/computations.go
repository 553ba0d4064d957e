package measure

import (
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
)

// computation is how the lab takes one measurement of the catalogue
// (scenarios.Measurements): of the whole session, or over a window of it.
// Exactly one of session and windowed is set.
type computation struct {
	// session takes a measurement that ignores the window: a figure at
	// an instant (p.At), or how the session connected.
	session func(r *result.Run, p Params) (float64, error)
	// windowed takes a measurement over a window, already checked and
	// cut to what ran (resolve).
	windowed func(w window, p Params) (float64, error)
	// needsPath marks the measurements of the session's path: without
	// one (the plain link) there is nothing to measure.
	needsPath bool
}

// computations binds each measurement of the catalogue to its computation:
// the catalogue (in package scenarios, which cannot import this one) says
// what a name means, this table how it is taken.
// TestComputationsAreTheCatalogue holds the two to the same names.
var computations = map[string]computation{
	"latency.median":     over(latencyQuantile(0.5)),
	"latency.p95":        over(latencyQuantile(0.95)),
	"latency.p99":        over(latencyQuantile(0.99)),
	"latency.min":        over(latencyQuantile(0)),
	"latency.max":        over(latencyQuantile(1)),
	"latency.time-above": overWith(func(w window, p Params) (float64, error) { return w.timeAbove(p.Latency) }),
	"network.median":     over(inSeconds(window.networkMedian)),
	"estimate.error.max": over(inSeconds(window.estimateErrorMax)),
	"frames.displayed":   over(func(w window) (float64, error) { return float64(len(w.displayedFrames())), nil }),
	// The catalogue names skips and drops by reason, as the agent and
	// the viewer record it.
	"frames.skipped":                     counting(result.EventSkip, ""),
	"frames.skipped.send-cap":            counting(result.EventSkip, "send-cap"),
	"frames.skipped.encoder-unavailable": counting(result.EventSkip, "encoder-unavailable"),
	"frames.skipped.rate-control":        counting(result.EventSkip, "rate-control"),
	"frames.dropped":                     counting(result.EventDrop, ""),
	"frames.dropped.overtaken":           counting(result.EventDrop, "overtaken"),
	"fps": over(func(w window) (float64, error) {
		return float64(len(w.displayedFrames())) / w.length().Seconds(), nil
	}),
	"freezes": over(func(w window) (float64, error) {
		fz, _, err := w.freezes()
		return float64(len(fz)), err
	}),
	"freeze.longest": over(func(w window) (float64, error) {
		_, longest, err := w.freezes()
		return longest.Seconds(), err
	}),
	"bitrate.mean": over(func(w window) (float64, error) { return w.bitrateMean(), nil }),
	"bitrate.min": over(func(w window) (float64, error) {
		b, err := w.bitrateMin()
		return float64(b), err
	}),
	"bitrate.target": atInstant(func(r *result.Run, p Params) (float64, error) {
		b, err := targetAtInstant(r, p.At)
		return float64(b), err
	}),
	"bitrate.sent": atInstant(func(r *result.Run, p Params) (float64, error) { return sentAtInstant(r, p.At) }),
	"bitrate.capacity-correlation": overWith(func(w window, p Params) (float64, error) {
		return w.capacityCorrelation(p.Every)
	}),
	"quality.final":       over(window.qualityFinal),
	"quality.psnr.median": over(func(w window) (float64, error) { return w.psnrQuantile(0.5) }),
	"quality.psnr.min":    over(func(w window) (float64, error) { return w.psnrQuantile(0) }),
	"quality.ssim.median": over(func(w window) (float64, error) { return w.ssimQuantile(0.5) }),
	"quality.ssim.min":    over(func(w window) (float64, error) { return w.ssimQuantile(0) }),
	"frames.damaged":      over(func(w window) (float64, error) { return float64(w.damagedFrames()), nil }),
	"damaged.time": over(func(w window) (float64, error) {
		total, _ := w.damagedTime()
		return total.Seconds(), nil
	}),
	"damaged.longest": over(func(w window) (float64, error) {
		_, longest := w.damagedTime()
		return longest.Seconds(), nil
	}),
	"keyframes.asked":  counting(result.EventAsk, "keyframe"),
	"keyframes.sent":   over(func(w window) (float64, error) { return float64(w.keyframesSent()), nil }),
	"refreshes.asked":  counting(result.EventAsk, "refresh"),
	"refinements":      over(func(w window) (float64, error) { return float64(w.refinements()), nil }),
	"utilisation":      over(window.utilisation),
	"utilisation.sent": over(window.utilisationSent),
	"recovery":         over(window.longestRecovery),
	"recovery.under":   overWith(func(w window, p Params) (float64, error) { return w.recoveryUnder(p.Latency) }),
	"time-to-low-latency": over(func(w window) (float64, error) {
		return w.timeUntil(latencyQuantile(0.5), func(v float64) bool { return v < 0.100 })
	}),
	"time-to-full-use": over(func(w window) (float64, error) {
		return w.timeUntil(window.utilisation, func(v float64) bool { return v >= 0.90 })
	}),
	"connect.time":        ofPath(func(r *result.Run) (float64, error) { return r.Path.Connect.Seconds(), nil }),
	"first-frame":         ofPath(firstFrame),
	"path.direct-lan":     ofPath(pathIs("direct-lan")),
	"path.direct-public":  ofPath(pathIs("direct-public")),
	"path.relay":          ofPath(pathIs("relay")),
	"path.websocket":      ofPath(pathIs("websocket")),
	"flow.throughput":     overWith(func(w window, p Params) (float64, error) { return w.flowThroughput(p.Flow) }),
	"flow.share":          overWith(func(w window, p Params) (float64, error) { return w.flowShare(p.Flow) }),
	"flow.latency.median": overWith(func(w window, p Params) (float64, error) { return w.flowLatency(p.Flow, 0.5) }),
	"flow.latency.p95":    overWith(func(w window, p Params) (float64, error) { return w.flowLatency(p.Flow, 0.95) }),
	"fairness.jain":       over(window.jain),
}

// take computes the measurement name with c: over the window [from, to)
// unless it ignores the window.
func (c computation) take(r *result.Run, name string, from, to time.Duration, p Params) (float64, error) {
	if c.needsPath && r.Path == nil {
		return 0, fmt.Errorf("%w: %s: the scenario has no path (the plain link)", ErrNoData, name)
	}
	if c.session != nil {
		return c.session(r, p)
	}
	from, to, err := resolve(r, from, to)
	if err != nil {
		return 0, err
	}
	return c.windowed(newWindow(r, from, to), p)
}

// over is a measurement over the window that reads no figure of its own.
func over(f func(window) (float64, error)) computation {
	return computation{windowed: func(w window, _ Params) (float64, error) { return f(w) }}
}

// overWith is a measurement over the window that reads figures of its own.
func overWith(f func(window, Params) (float64, error)) computation {
	return computation{windowed: f}
}

// atInstant is a measurement at an instant (p.At): it has no window.
func atInstant(f func(*result.Run, Params) (float64, error)) computation {
	return computation{session: f}
}

// ofPath is a measurement of how the session connected: it has no window,
// and needs a path.
func ofPath(f func(*result.Run) (float64, error)) computation {
	return computation{session: func(r *result.Run, _ Params) (float64, error) { return f(r) }, needsPath: true}
}

// counting counts the events of kind (and reason, unless empty) in the
// window.
func counting(kind, reason string) computation {
	return over(func(w window) (float64, error) { return float64(w.count(kind, reason)), nil })
}

// inSeconds turns a duration measured over the window into seconds, the
// catalogue's unit for durations.
func inSeconds(f func(window) (time.Duration, error)) func(window) (float64, error) {
	return func(w window) (float64, error) {
		d, err := f(w)
		return d.Seconds(), err
	}
}

// latencyQuantile is the quantile q of the latency of the frames displayed
// in the window, in seconds.
func latencyQuantile(q float64) func(window) (float64, error) {
	return inSeconds(func(w window) (time.Duration, error) { return w.latencyQuantile(q) })
}

// pathIs is 1 when the session went by the path kind, else 0.
func pathIs(kind string) func(*result.Run) (float64, error) {
	return func(r *result.Run) (float64, error) {
		if r.Path.Path == kind {
			return 1, nil
		}
		return 0, nil
	}
}

// firstFrame is how long a user waits for the picture. The agent starts at
// time zero, whenever QUIC came up before it; the user waits for the
// connection, then for the first frame's display after the start.
func firstFrame(r *result.Run) (float64, error) {
	for _, f := range r.Frames {
		if f.WasDisplayed() {
			first := f.Displayed
			for _, g := range r.Frames {
				if g.WasDisplayed() && g.Displayed < first {
					first = g.Displayed
				}
			}
			return (r.Path.Connect + first).Seconds(), nil
		}
	}
	return 0, fmt.Errorf("%w: first-frame: no frame displayed", ErrNoData)
}
