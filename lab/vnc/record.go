package vnc

import (
	"fmt"
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/vnc/rfb"
	"github.com/nuvirahub/latencylab/lab/vnc/screendrive"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Reasons of the result's skip events.
const (
	// SkipCoalesced: the version was drawn, but the server sent a later
	// one in its place (it reads the screen when the client asks, and
	// what changed twice meanwhile is sent once).
	SkipCoalesced = "server-coalesced"
	// SkipNotDrawn: the driver fell behind the screen's timeline and
	// drew a later version in its place.
	SkipNotDrawn = "not-drawn"
	// SkipInputLost: an input-to-photon press whose key never reached
	// the server's display.
	SkipInputLost = "input-lost"
	// SkipEchoNotShown: a press whose echo the server drew, but the
	// viewer never showed before the run ended.
	SkipEchoNotShown = "echo-not-shown"
)

// EncoderName is the result's encoder for a server and an encoding:
// "x11vnc-zrle".
func EncoderName(server string, encoding int32) string {
	return server + "-" + rfb.EncodingName(encoding)
}

// runName is the result's encoder for a run: EncoderName with the lab's
// client, the server and the viewer otherwise ("xvnc-vncviewer"), which
// chooses its own encoding.
func runName(cfg Config) string {
	switch {
	case cfg.Viewer == ViewerLab:
		return EncoderName(cfg.Server, cfg.Encoding)
	case cfg.Presses > 0:
		return cfg.Server + "-" + cfg.Viewer + "-input"
	}
	return cfg.Server + "-" + cfg.Viewer
}

// describe is the result's description of what was measured.
func describe(cfg Config, o *observed) string {
	sc := cfg.Scenario
	if cfg.Viewer == ViewerLab {
		return fmt.Sprintf("%s (%s) on a %dx%d X display showing the %q screen, measured through the network of scenario %s",
			cfg.Server, rfb.EncodingName(cfg.Encoding), cfg.Width, cfg.Height, cfg.Screen, sc.Name)
	}
	what := "viewer " + cfg.Viewer
	if cfg.Viewer == ViewerDelay {
		what = fmt.Sprintf("the lab's own viewer presenting each version %v after it was drawn (the method's check)", cfg.Delay)
	}
	if cfg.Presses > 0 {
		return fmt.Sprintf("input to photon: %d key presses on %s's display (XTest), each echoed by a marker drawn on %s's %dx%d X display once the key arrived, timed from the press to the echo shown by the viewer, through the network of scenario %s (a frame's capture is the press, its encode end the key's arrival, its send the echo drawn, its display the echo shown); the viewer's display read every %v (%d reads, %d unreadable, the largest bound of a sighting's lateness %v)",
			cfg.Presses, what, cfg.Server, cfg.Width, cfg.Height, sc.Name, cfg.WatchEvery, o.watch.Reads, o.watch.Unreadable, o.errorBound.Round(10*time.Microsecond))
	}
	return fmt.Sprintf("%s on a %dx%d X display showing the %q screen, through %s on a display of its own, glass to glass through the network of scenario %s; the viewer's display read every %v (%d reads, %d unreadable, the largest bound of a sighting's lateness %v)",
		cfg.Server, cfg.Width, cfg.Height, cfg.Screen, what, sc.Name, cfg.WatchEvery, o.watch.Reads, o.watch.Unreadable, o.errorBound.Round(10*time.Microsecond))
}

// record turns what a session saw into a result. Time zero is when the
// timeline started, once the client showed the desktop (version 1): the
// warm-up before it is the result's Handshake, as a session's connection
// is, and version 1 is no frame of it. The links' timelines started when
// the namespace was made, before the servers' start-up and the warm-up.
func record(cfg Config, o *observed, samples []linkSample, interrupted string) *result.Run {
	sc := cfg.Scenario
	r := &result.Run{
		Schema:          result.Version,
		Scenario:        sc.Name,
		File:            sc.File,
		Description:     describe(cfg, o),
		Groups:          []string{"vnc"},
		Seed:            cfg.Seed,
		Duration:        cfg.Duration,
		Ran:             o.ran,
		Handshake:       o.warmup,
		Interrupted:     interrupted,
		Refresh:         screendrive.Refresh,
		FreezeThreshold: result.FreezeAfter(screendrive.Refresh),
		SampleEvery:     result.DefaultSampleEvery,
		Encoder:         runName(cfg),
		Probe:           []result.ProbeAttempt{},
		Network:         result.NetworkInfo{Up: phaseInfo(sc.Network.Up), Down: phaseInfo(sc.Network.Down)},
		Frames:          []result.FrameRecord{},
		ScreenChanges:   slices.Clone(o.changes),
		Events:          []result.EventRecord{},
		Targets:         []result.TargetRecord{},
		Series:          []result.Point{},
		Checks:          []result.Check{},
	}
	if cfg.Presses > 0 {
		r.Frames, r.Events = pressRecords(o)
		r.Groups = append(r.Groups, "input-to-photon")
	} else {
		r.Frames, r.Events = frameRecords(o)
	}
	r.Series = series(r, o, samples, cfg.Viewer != ViewerLab)
	if n := len(samples); n > 0 {
		r.Links = result.LinkTotals{Up: lab.LinkTotal(samples[0].up, samples[n-1].up), Down: lab.LinkTotal(samples[0].down, samples[n-1].down)}
	}
	r.Summary = measure.Summarise(r)
	return r
}

// frameRecords makes a frame of every version drawn, displayed at the
// first update whose framebuffer showed its marker or a later one's. The
// bytes of the updates up to and including that one are the frame's, so
// that every byte the server sent counts once.
func frameRecords(o *observed) ([]result.FrameRecord, []result.EventRecord) {
	frames := []result.FrameRecord{}
	events := []result.EventRecord{}
	var pending int64
	shownAt := map[uint64]time.Duration{}
	bytesOf := map[uint64]int64{}
	var shown uint64
	for _, u := range o.updates {
		pending += u.Bytes
		if u.Version > shown {
			shown = u.Version
			shownAt[u.Version] = u.At
			bytesOf[u.Version] = pending
			pending = 0
		}
	}
	prev := uint64(1) // the desktop, before time zero
	for _, d := range o.drawn {
		for v := prev + 1; v < d.Version; v++ {
			events = append(events, result.EventRecord{At: d.Drawn.Sub(o.epoch), Kind: result.EventSkip, Reason: SkipNotDrawn, Seq: v})
		}
		prev = d.Version
		captured := max(d.Drawn.Sub(o.epoch), 1) // 0 would read as "did not happen"
		f := result.FrameRecord{Seq: d.Version, Version: d.Version, Keyframe: d.Version == 1, Quality: 1,
			Captured: captured, EncodeEnd: captured}
		if at, ok := shownAt[d.Version]; ok {
			f.Bytes = int(bytesOf[d.Version])
			f.Sent, f.Arrived, f.Displayed = at, at, at
			f.Latency = max(at-captured, 0)
		} else {
			events = append(events, result.EventRecord{At: captured, Kind: result.EventSkip, Reason: SkipCoalesced, Seq: d.Version})
		}
		frames = append(frames, f)
	}
	slices.SortStableFunc(events, func(a, b result.EventRecord) int { return int(a.At - b.At) })
	return frames, events
}

// series is the result's time series: frames displayed and their median
// latency, the bytes received and the links' throughput by period. A
// glass-to-glass run (glass) sees no updates: the bytes received are
// the down link's.
func series(r *result.Run, o *observed, samples []linkSample, glass bool) []result.Point {
	out := []result.Point{}
	byDisplay := measure.Displayed(r)
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1].at.Sub(o.epoch), samples[i].at.Sub(o.epoch)
		if b <= a || b <= 0 {
			continue
		}
		a = max(a, 0)
		secs := (b - a).Seconds()
		pt := result.Point{From: a, To: b}
		lat := measure.Latencies(measure.DisplayedIn(byDisplay, a, b))
		pt.Displayed = len(lat)
		if len(lat) > 0 {
			pt.LatencyMedian = quantile.Nearest(lat, 0.5)
		}
		var got int64
		for _, u := range o.updates {
			if u.At >= a && u.At < b {
				got += u.Bytes
			}
		}
		pt.SendBps = float64(got*8) / secs
		pt.Up = linkPoint(samples[i-1].up, samples[i].up, secs)
		pt.Down = linkPoint(samples[i-1].down, samples[i].down, secs)
		if glass {
			// A real viewer's updates are not seen, only their pictures:
			// what the server sent is what the down link delivered.
			pt.SendBps = pt.Down.ThroughputBps
		}
		out = append(out, pt)
	}
	return out
}

func linkPoint(prev, cur netem.Stats, secs float64) result.LinkPoint {
	lp := result.LinkPoint{ThroughputBps: float64(cur.Delivered.Bytes-prev.Delivered.Bytes) * 8 / secs}
	if n := cur.Queued.Packets - prev.Queued.Packets; n > 0 {
		lp.QueueDelay = (cur.Queued.Total - prev.Queued.Total) / time.Duration(n)
	}
	return lp
}

// linkSample is the links' counters at an instant.
type linkSample struct {
	at       time.Time
	up, down netem.Stats
}

// phaseInfo describes a direction's phases as the lab's results do.
func phaseInfo(phases []scenarios.Phase) []result.PhaseInfo {
	out := []result.PhaseInfo{}
	for _, ph := range phases {
		pi := result.PhaseInfo{At: ph.At, Description: plan.DescribePhase(ph), RateBps: ph.Rate}
		if ph.Trace != nil {
			pi.Trace = ph.Trace.File
		}
		out = append(out, pi)
	}
	return out
}
