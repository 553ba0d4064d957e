package abr_test

import (
	"time"

	"github.com/nuvirahub/latencylab/agent"
	"github.com/nuvirahub/latencylab/agent/abr"
	"github.com/nuvirahub/latencylab/internal/wire"
)

// The controller is what the agent expects.
var (
	_ agent.Controller    = (*abr.ABR)(nil)
	_ agent.FrameObserver = (*abr.ABR)(nil)
)

// t0 is the agent's time zero in every test.
var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// viewerSkew puts the viewer's clock far from the agent's: only differences
// of report Ends may matter to the controller (N1).
const viewerSkew = -7*time.Hour + 123456789*time.Nanosecond

// period is the viewer's report period (N1).
const period = 250 * time.Millisecond

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// lat is one report's latency figures: the network part (N12) and the
// total, capture to display.
type lat struct {
	frames             uint32
	netMed, netMin     time.Duration
	totalMed, totalMin time.Duration
	// noFrameSent: the video sent nothing in the period.
	noFrameSent bool
}

// net is a report whose total latency is the network part plus a fast
// 10 ms encode and decode.
func net(med, mn time.Duration) lat {
	return lat{frames: 15, netMed: med, netMin: mn, totalMed: med + ms(10), totalMin: mn + ms(10)}
}

// run drives a controller with a synthetic session: one report per period
// (or at chosen spacings), and before each report the frames the video sent
// in that period, sized as a share of the current target.
type run struct {
	a *abr.ABR
	// now is the agent's time of the last report; end its End, on the
	// viewer's clock.
	now, end time.Time
	// util is the share of the target the video sends; bytes, when not
	// zero, overrides it with a fixed number of bytes per period.
	util  float64
	bytes int
	seq   uint64
	// ack, when set, acknowledges every frame at once except the last
	// unacked ones.
	ack      bool
	unacked  int
	inflight []sent
}

type sent struct {
	seq   uint64
	bytes int
	at    time.Time
}

func newRun(a *abr.ABR, util float64) *run {
	return &run{a: a, now: t0, end: t0.Add(viewerSkew), util: util}
}

// send hands one frame to the controller at r.now.
func (r *run) send(bytes int) {
	r.seq++
	r.a.FrameSent(r.now, r.seq, bytes)
	r.inflight = append(r.inflight, sent{r.seq, bytes, r.now})
	if r.ack {
		for len(r.inflight) > r.unacked {
			f := r.inflight[0]
			r.inflight = r.inflight[1:]
			r.a.FrameAcked(r.now, f.seq, f.bytes, f.at, f.at.Add(viewerSkew+ms(20)))
		}
	}
}

// after advances both clocks by d, sends the period's video and delivers
// one report. It returns the target after the report.
func (r *run) after(d time.Duration, l lat) int64 {
	r.now = r.now.Add(d)
	r.end = r.end.Add(d)
	if !l.noFrameSent {
		b := r.bytes
		if b == 0 {
			b = int(r.util * float64(r.a.Bitrate(r.now)) * d.Seconds() / 8)
		}
		r.send(b)
	}
	r.a.Report(r.now, wire.Report{End: r.end, Frames: l.frames,
		Median: l.totalMed, Min: l.totalMin, NetworkMedian: l.netMed, NetworkMin: l.netMin})
	return r.a.Bitrate(r.now)
}

// step delivers n reports one period apart, all alike.
func (r *run) step(n int, l lat) int64 {
	var b int64
	for range n {
		b = r.after(period, l)
	}
	return b
}

// elapsed is the agent's time since the start.
func (r *run) elapsed() time.Duration { return r.now.Sub(t0) }

// rules counts the decisions by rule.
func rules(ds []abr.Decision) map[string]int {
	m := map[string]int{}
	for _, d := range ds {
		m[d.Rule]++
	}
	return m
}

// firstAtOrBelow returns when the target first reached bps or less, from t0.
func firstAtOrBelow(ds []abr.Decision, bps int64) (time.Duration, bool) {
	for _, d := range ds {
		if d.New <= bps {
			return d.At.Sub(t0), true
		}
	}
	return 0, false
}
