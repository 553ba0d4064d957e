// Package plotstest makes lab results for the tests of the report
// packages and commands, so they can draw and render figures without
// running a session: a result has every field the plots and reports read,
// with figures a reader can check by hand.
package plotstest

import (
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Result is a 10 s result at 30 frames per second. Every frame takes
// 8 ms to encode, waits 1 ms to be sent, 20 ms on the network plus slow,
// and 5 ms to be decoded and displayed. The downlink drops from 8 to
// 2 Mbit/s at 4 s; the network time then grows by up to 300 ms and comes
// back by 7 s, while the target falls from 6 to 1.5 Mbit/s. Every 50th
// frame is dropped; the frame captured at 9 s is followed by a 400 ms
// freeze. The result has a passing and a failing check.
func Result(name string, slow time.Duration) *result.Run {
	const fps = 30
	every := result.DefaultSampleEvery
	dur := 10 * time.Second
	drop := 4 * time.Second
	r := &result.Run{
		Schema: result.Version, Scenario: name, File: name + ".yaml",
		Description: "synthetic: the downlink drops from 8 to 2 Mbit/s at 4 s",
		Seed:        1, Duration: dur, Ran: dur, Refresh: 60,
		FreezeThreshold: 150 * time.Millisecond, SampleEvery: every, Encoder: "model",
		Network: result.NetworkInfo{
			Up: []result.PhaseInfo{{At: 0, Description: "delay 10ms"}},
			Down: []result.PhaseInfo{
				{At: 0, Description: "rate 8 Mbit/s, delay 10ms", RateBps: 8e6},
				{At: drop, Description: "rate 2 Mbit/s, delay 10ms", RateBps: 2e6},
			},
		},
		Targets: []result.TargetRecord{{At: -50 * time.Millisecond, Bps: 6e6}, {At: drop + 500*time.Millisecond, Bps: 1.5e6}},
	}
	target := func(at time.Duration) int64 {
		bps := r.Targets[0].Bps
		for _, t := range r.Targets {
			if t.At <= at {
				bps = t.Bps
			}
		}
		return bps
	}
	for i := range int(dur.Seconds() * fps) {
		captured := time.Duration(i) * time.Second / fps
		queue := time.Duration(0)
		if captured >= drop && captured < 7*time.Second {
			// Rises for a second, then drains.
			since := captured - drop
			queue = min(since, time.Second) * 300 / 1000
			if since > time.Second {
				queue = max(0, 300*time.Millisecond-(since-time.Second)*150/1000)
			}
		}
		if captured >= 9*time.Second && captured < 9*time.Second+400*time.Millisecond {
			continue // the freeze: nothing captured
		}
		f := result.FrameRecord{
			Seq: uint64(i), Bytes: int(target(captured) / 8 / fps), Quality: 0.9,
			Captured: captured, EncodeEnd: captured + 8*time.Millisecond,
		}
		f.Sent = f.EncodeEnd + time.Millisecond
		f.Arrived = f.Sent + 20*time.Millisecond + slow + queue
		if i%50 == 49 {
			f.Dropped = "late"
		} else {
			f.Displayed = f.Arrived + 5*time.Millisecond
			f.Latency = f.Displayed - f.Captured
		}
		f.Network = f.Arrived - f.EncodeEnd
		r.Frames = append(r.Frames, f)
	}
	var all []time.Duration
	for from := time.Duration(0); from < dur; from += every {
		to := from + every
		pt := result.Point{From: from, To: to, TargetBps: target(to)}
		var lat []time.Duration
		sent := 0
		for _, f := range r.Frames {
			if f.WasDisplayed() && f.Displayed >= from && f.Displayed < to {
				lat = append(lat, f.Latency)
			}
			if f.Sent >= from && f.Sent < to {
				sent += f.Bytes
			}
		}
		slices.Sort(lat)
		all = append(all, lat...)
		pt.Displayed = len(lat)
		if len(lat) > 0 {
			pt.LatencyMedian = lat[len(lat)/2]
		}
		pt.SendBps = float64(sent*8) / every.Seconds()
		capacity := 8e6
		if from >= drop {
			capacity = 2e6
		}
		pt.Down = result.LinkPoint{CapacityBps: capacity, Capped: true, ThroughputBps: min(capacity, pt.SendBps)}
		r.Series = append(r.Series, pt)
	}
	slices.Sort(all)
	q := func(p float64) time.Duration { return all[int(p*float64(len(all)-1))] }
	r.Summary = result.Summary{
		Frames: len(r.Frames), Displayed: len(all), FirstDisplay: r.Frames[0].Displayed,
		Latency: result.LatencySummary{Median: q(0.5), P95: q(0.95), P99: q(0.99), Min: all[0], Max: all[len(all)-1]},
		FPS:     float64(len(all)) / dur.Seconds(),
		Freezes: []result.Interval{{From: 9*time.Second - time.Second/fps, To: 9*time.Second + 400*time.Millisecond}},
	}
	r.Summary.FreezeLongest = r.Summary.Freezes[0].To - r.Summary.Freezes[0].From
	limit, floor := 0.1, 35.0
	r.Checks = []result.Check{
		{Measure: "latency.median", Unit: scenarios.UnitDuration, To: dur, Max: &limit, Value: r.Summary.Latency.Median.Seconds(), Pass: r.Summary.Latency.Median.Seconds() <= limit, Line: 20},
		{Measure: "fps", Unit: scenarios.UnitRatio, To: dur, Min: &floor, Value: r.Summary.FPS, Pass: r.Summary.FPS >= floor, Line: 21},
	}
	return r
}

// WithTraffic adds two flows to a Result: a download (tcp-bulk) from 2 s
// to 8 s delivering 4 Mbit/s, then 1 Mbit/s from the downlink's drop at
// 4 s, and a 64 kbit/s cbr flow up over the uncapped uplink for the whole
// run. The summary gets their figures as measure.Summarise would, with
// the download's share and no fairness (there is no second session).
func WithTraffic(r *result.Run) *result.Run {
	period := r.SampleEvery
	n := int(r.Ran / period)
	down := make([]int64, n)
	up := make([]int64, n)
	for k := range n {
		at := time.Duration(k) * period
		switch {
		case at >= 2*time.Second && at < 4*time.Second:
			down[k] = int64(4e6 / 8 * period.Seconds())
		case at >= 4*time.Second && at < 8*time.Second:
			down[k] = int64(1e6 / 8 * period.Seconds())
		}
		up[k] = int64(64e3 / 8 * period.Seconds())
	}
	r.Traffic = []result.FlowRecord{
		{Name: "download", Kind: "tcp-bulk", Direction: "down", Description: "TCP-like CUBIC", Start: 2 * time.Second, Stop: 8 * time.Second, Delivered: down},
		{Name: "voice", Kind: "cbr", Direction: "up", Description: "64 kbit/s in 160-byte datagrams", Stop: r.Ran, Delivered: up},
	}
	for i := range r.Traffic {
		for _, b := range r.Traffic[i].Delivered {
			r.Traffic[i].DeliveredBytes += b
		}
	}
	// The download: 8 Mbit in 2 s of 8 Mbit/s, 4 Mbit in 4 s of 2 Mbit/s.
	share := 12e6 / (8e6*2 + 2e6*4)
	main := r.Summary.Latency
	r.Summary.Flows = []result.FlowSummary{
		{Name: scenarios.MainFlow, ThroughputBps: 2e6, Latency: &main},
		{Name: "download", ThroughputBps: 12e6 / 6, Share: &share},
		{Name: "voice", ThroughputBps: 64e3},
	}
	return r
}
