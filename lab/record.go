package lab

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/agent/gcc"

	"github.com/nuvirahub/latencylab/internal/quantile"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/plan"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/lab/transport"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/tcplike"
	"github.com/nuvirahub/latencylab/scenarios"
)

// newPathRecord turns a session's connection into its record.
func newPathRecord(pr *transport.PathResult) *result.PathRecord {
	if pr == nil {
		return nil
	}
	rec := &result.PathRecord{Path: string(pr.Path), AgentPath: string(pr.AgentPath), Connect: pr.Connect, Steps: []result.StepRecord{}}
	for _, st := range pr.Steps {
		sr := result.StepRecord{Path: string(st.Path), Start: st.Start.Sub(pr.Steps[0].Start), Duration: st.Duration()}
		if st.Err != nil {
			sr.Error = st.Err.Error()
		}
		rec.Steps = append(rec.Steps, sr)
	}
	return rec
}

// newScenarioResult turns a session's raw result into a scenario's.
func newScenarioResult(sc *scenarios.Scenario, p *plan.Plan, s Session, res *Result, interrupted error) *result.Run {
	start := res.Start
	off := func(t time.Time) time.Duration {
		if t.IsZero() {
			return 0
		}
		return t.Sub(start)
	}
	r := &result.Run{
		Schema:          result.Version,
		Scenario:        sc.Name,
		File:            sc.File,
		Description:     sc.Description,
		Findings:        slices.Clone(sc.Findings),
		Groups:          slices.Clone(sc.Groups),
		Seed:            sc.Seed,
		Duration:        sc.Duration,
		Ran:             min(sc.Duration, max(0, res.End.Sub(start))),
		Handshake:       res.Handshake,
		Late:            res.Late,
		Refresh:         p.Refresh,
		FreezeThreshold: result.FreezeAfter(p.Refresh),
		SampleEvery:     s.SampleEvery,
		Probe:           []result.ProbeAttempt{},
		Network:         p.Network,
		Frames:          make([]result.FrameRecord, 0, len(res.Frames)),
		Events:          make([]result.EventRecord, 0, len(res.Events)),
		Targets:         make([]result.TargetRecord, 0, len(res.Targets)),
		Series:          []result.Point{},
		Checks:          []result.Check{},
		Path:            newPathRecord(res.Path),
	}
	if r.Network.Up == nil {
		r.Network.Up = []result.PhaseInfo{}
	}
	if r.Network.Down == nil {
		r.Network.Down = []result.PhaseInfo{}
	}
	if interrupted != nil {
		r.Interrupted = interrupted.Error()
	}
	for _, a := range res.Probe {
		pa := result.ProbeAttempt{Name: a.Name, Hardware: a.Hardware, Took: a.Took}
		if a.Err != nil {
			pa.Error = a.Err.Error()
		} else {
			r.Encoder = a.Name
		}
		r.Probe = append(r.Probe, pa)
	}
	if sw := s.Agent.Software; r.Encoder == sw.Name && !sw.Hardware && !scenarios.IsRealPreset(sw.Name) {
		r.FrameSizes = "budget"
		if encoder.Calibrated(sw) {
			r.FrameSizes = "calibrated"
		}
	}
	for _, f := range res.Frames {
		fr := result.FrameRecord{
			Seq: f.Seq, Pass: f.Pass, Version: f.Version, Keyframe: f.Keyframe, Bytes: f.Bytes, Quality: f.Quality, PSNR: f.PSNR, SSIM: f.SSIM,
			Damaged: f.Damaged, DamageAge: f.DamageAge,
			Captured: off(f.Captured), EncodeEnd: off(f.EncodeEnd), Sent: off(f.Sent),
			Arrived: off(f.Arrived), Displayed: off(f.Displayed),
			Latency: f.Latency(), Network: f.Network(),
			Estimate: f.Estimated, EstimateNetwork: f.EstimatedNetwork,
			Dropped: f.Dropped,
		}
		r.Frames = append(r.Frames, fr)
	}
	r.ScreenChanges = slices.Clone(res.ScreenChanges)
	for _, e := range res.Events {
		r.Events = append(r.Events, result.EventRecord{At: off(e.At), Kind: e.Kind, Reason: e.Reason, Seq: e.Seq})
	}
	if p.Decisions != nil {
		r.Decisions = p.Decisions(start)
	}
	for _, t := range res.Targets {
		r.Targets = append(r.Targets, result.TargetRecord{At: off(t.At), Bps: t.Bps})
	}
	// Only a kernel-mode session measures beyond the rest, and its flows
	// ran over the kernel's TCP.
	r.Traffic = flowRecords(res.Traffic, res.Kernel != nil, off)
	r.Series = buildSeries(r, p, res.Samples, off)
	r.Links = linkTotals(res)
	r.Marked = res.Marked
	r.Hops = hopTotals(res)
	r.Summary = measure.Summarise(r)
	r.Checks = measure.Evaluate(r, sc.Expect)
	return r
}

// buildSeries makes a point of every interval between two samples.
func buildSeries(r *result.Run, p *plan.Plan, samples []Sample, off func(time.Time) time.Duration) []result.Point {
	out := []result.Point{}
	byDisplay := measure.Displayed(r)
	sentBytes := measure.NewFrameBytes(r.Frames, func(f result.FrameRecord) time.Duration { return f.Sent })
	for i := 1; i < len(samples); i++ {
		a, b := off(samples[i-1].At), off(samples[i].At)
		if b <= a {
			continue
		}
		secs := (b - a).Seconds()
		pt := result.Point{From: a, To: b}
		lat := measure.Latencies(measure.DisplayedIn(byDisplay, a, b))
		pt.Displayed = len(lat)
		if len(lat) > 0 {
			pt.LatencyMedian = quantile.Nearest(lat, 0.5)
		}
		pt.TargetBps, _ = measure.TargetAt(r, b)
		sent := sentBytes.In(a, b)
		pt.SendBps = float64(sent*8) / secs
		pt.Up = linkPoint(samples[i-1].Uplink, samples[i].Uplink, p.UplinkCapacity, a, b)
		pt.Down = linkPoint(samples[i-1].Downlink, samples[i].Downlink, p.DownlinkCapacity, a, b)
		out = append(out, pt)
	}
	return out
}

func linkPoint(prev, cur netem.Stats, caps plan.Capacity, a, b time.Duration) result.LinkPoint {
	lp := result.LinkPoint{QueueBytes: int64(cur.Backlog.Bytes)}
	if n := cur.Queued.Packets - prev.Queued.Packets; n > 0 {
		lp.QueueDelay = (cur.Queued.Total - prev.Queued.Total) / time.Duration(n)
	}
	lp.ThroughputBps = float64((cur.Delivered.Bytes-prev.Delivered.Bytes)*8) / (b - a).Seconds()
	bits, capped := caps.Between(a, b)
	lp.CapacityBps, lp.Capped = bits/(b-a).Seconds(), capped > 0
	return lp
}

// linkTotals are the links' counters from the first sample (time zero) to
// the last, so the handshake before time zero does not count.
func linkTotals(res *Result) result.LinkTotals {
	up, down := res.Uplink, res.Downlink
	var up0, down0 netem.Stats
	if n := len(res.Samples); n > 0 {
		up0, down0 = res.Samples[0].Uplink, res.Samples[0].Downlink
		up, down = res.Samples[n-1].Uplink, res.Samples[n-1].Downlink
	}
	return result.LinkTotals{Up: LinkTotal(up0, up), Down: LinkTotal(down0, down)}
}

// hopTotals are each hop's counters from the first sample to the last,
// as linkTotals; nil for one pair of links.
func hopTotals(res *Result) []result.HopTotals {
	from, to := res.Hops, res.Hops
	if n := len(res.Samples); n > 0 && len(res.Samples[0].Hops) == len(res.Hops) && len(res.Samples[n-1].Hops) == len(res.Hops) {
		from, to = res.Samples[0].Hops, res.Samples[n-1].Hops
	}
	var out []result.HopTotals
	for i, h := range to {
		var f transport.HopStats
		if len(res.Samples) > 0 {
			f = from[i]
		}
		out = append(out, result.HopTotals{Name: h.Name, LinkTotals: result.LinkTotals{Up: LinkTotal(f.Up, h.Up), Down: LinkTotal(f.Down, h.Down)}})
	}
	return out
}

// LinkTotal is what a link carried, dropped and queued between two
// readings of its counters: a result's link totals (lab vnc's runs too).
func LinkTotal(from, to netem.Stats) result.LinkTotal {
	t := result.LinkTotal{
		OfferedPackets:   to.Offered.Packets - from.Offered.Packets,
		OfferedBytes:     to.Offered.Bytes - from.Offered.Bytes,
		DeliveredPackets: to.Delivered.Packets - from.Delivered.Packets,
		DeliveredBytes:   to.Delivered.Bytes - from.Delivered.Bytes,
		Dropped:          map[string]uint64{},
		Marked:           to.Marked.Packets - from.Marked.Packets,
		QueueMax:         to.Queued.Max,
	}
	for reason, c := range to.Dropped {
		if n := c.Packets - from.Dropped[reason].Packets; n > 0 {
			t.Dropped[string(reason)] = n
		}
	}
	if n := to.Queued.Packets - from.Queued.Packets; n > 0 {
		t.QueueMean = (to.Queued.Total - from.Queued.Total) / time.Duration(n)
	}
	return t
}

// flowRecords turns what the flows measured into their records; nil
// without traffic, so that a result without it keeps its form.
func flowRecords(flows []traffic.Result, kernel bool, off func(time.Time) time.Duration) []result.FlowRecord {
	var out []result.FlowRecord
	for _, fr := range flows {
		f := fr.Flow
		rec := result.FlowRecord{
			Name: f.Name, Kind: f.Kind, Direction: "down", Description: describeFlow(f, kernel),
			Start: f.Start, Stop: f.Stop, Delay: f.Delay, Hops: f.Hops,
			SentBytes: fr.Stats.Sent, DeliveredBytes: fr.Stats.Delivered, Delivered: fr.Delivered,
			Packets: fr.Stats.Packets, Lost: fr.Stats.Lost, Marked: fr.Stats.Marked,
		}
		if rec.Delivered == nil {
			rec.Delivered = []int64{}
		}
		if f.DataUp() {
			rec.Direction = "up"
		}
		for _, o := range fr.Stats.Objects {
			rec.Objects = append(rec.Objects, result.ObjectRecord{Bytes: o.Size, Start: off(o.Start), Done: off(o.Done)})
		}
		for _, fm := range fr.Frames {
			rec.Frames = append(rec.Frames, result.FlowFrame{Seq: fm.Seq, Bytes: fm.Bytes, Sent: off(fm.Sent),
				Arrived: off(fm.Arrived), Displayed: off(fm.Displayed), Latency: fm.Latency()})
		}
		if fr.Err != nil {
			rec.Error = fr.Err.Error()
		}
		out = append(out, rec)
	}
	return out
}

// describeFlow sums a flow up for reports: "TCP-like CUBIC", "64 kbit/s
// in 160-byte datagrams", "controller gcc"; its extra delay after.
func describeFlow(f traffic.Flow, kernel bool) string {
	tcp := "TCP-like " + strings.ToUpper(cmp.Or(f.Congestion, tcplike.CUBIC))
	if f.Congestion == tcplike.Reno {
		tcp = "TCP-like Reno"
	}
	switch f.ECN {
	case tcplike.ECNClassic:
		tcp += ", ECN classic"
	case tcplike.ECNL4S:
		tcp = "TCP-like DCTCP-like, ECN l4s" // its own growth and cuts
	}
	if kernel {
		tcp = "kernel TCP " + cmp.Or(f.Congestion, transport.DefaultKernelController)
	}
	var d string
	switch f.Kind {
	case traffic.KindQUICBulk:
		d = "QUIC (quic-go, NewReno)"
	case traffic.KindTCPBulk:
		d = tcp
	case traffic.KindCBR:
		d = fmt.Sprintf("%s Mbit/s in %d-byte datagrams", strconv.FormatFloat(float64(f.Rate)/1e6, 'g', 6, 64), cmp.Or(f.Size, traffic.DefaultCBRSize))
	case traffic.KindWeb:
		w := f.Web.WithDefaults()
		d = fmt.Sprintf("objects lognormal, mean %d B, sd %d B, in [%d B, %d B], think %v, %s", w.Mean, w.SD, w.Min, w.Max, w.Think, tcp)
	case traffic.KindSession, traffic.KindReverseMedia:
		d = "controller " + controllerName(f.Agent.Controller)
	}
	if f.Delay > 0 {
		d += fmt.Sprintf(", %v more each way", f.Delay)
	}
	return d
}

// controllerName names a controller as the scenario format does.
func controllerName(c agent.Controller) string {
	switch c.(type) {
	case *abr.ABR:
		return "abr"
	case *gcc.GCC:
		return "gcc"
	case *agent.Steps:
		return "steps"
	}
	return "fixed"
}
