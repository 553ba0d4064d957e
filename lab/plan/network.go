package plan

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/scenarios"
)

// convertLink turns a direction's timeline into the impairments in force
// from the start and the later phases, and notes each phase's capacity.
// file is the scenario's file, where its trace paths count from.
func convertLink(dir, file string, phases []scenarios.Phase, traces map[string]*netem.Trace) (initial []netem.Impairment, timeline []netem.Phase, caps Capacity, info []result.PhaseInfo, err error) {
	for i, ph := range phases {
		where := fmt.Sprintf("network.%s[%d]", dir, i)
		if ph.At < 0 || (i > 0 && ph.At <= phases[i-1].At) {
			return nil, nil, nil, nil, fmt.Errorf("%w: %s: at %v: phases must start at increasing instants from 0", laberr.ErrScenario, where, ph.At)
		}
		imps, c, err := convertPhase(where, file, ph, traces)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		caps = append(caps, c)
		pi := result.PhaseInfo{At: ph.At, Description: DescribePhase(ph), RateBps: ph.Rate}
		if ph.Trace != nil {
			pi.Trace = ph.Trace.File // its segment is in the description
		}
		info = append(info, pi)
		if i == 0 && ph.At == 0 {
			initial = imps
			continue
		}
		timeline = append(timeline, netem.Phase{At: ph.At, Impairments: imps})
	}
	return initial, timeline, caps, info, nil
}

// convertPhase builds one phase's impairments. The order inside a stage
// matters only for the delay stage: spikes come first so that a spike
// window judges a packet by the instant it reaches the delay stage, as the
// schedule of a radio stall would, not by an instant a jitter moved.
func convertPhase(where, file string, ph scenarios.Phase, traces map[string]*netem.Trace) ([]netem.Impairment, capPhase, error) {
	var imps []netem.Impairment
	c := capPhase{at: ph.At}
	if ph.BlockUDP {
		imps = append(imps, &netem.Block{})
	}
	if o := ph.Outages; o != nil {
		out := &netem.Outage{Every: o.Every, Duration: o.Duration, Offset: o.Offset, Mode: netem.OutageDrop}
		if o.Hold {
			out.Mode = netem.OutageHold
		}
		for _, w := range o.Windows {
			out.Windows = append(out.Windows, netem.OutageWindow{Start: w.Start, Duration: w.Duration})
		}
		imps = append(imps, out)
	}
	if ph.Loss > 0 {
		imps = append(imps, &netem.Loss{Probability: ph.Loss})
	}
	if g := ph.Gilbert; g != nil {
		imps = append(imps, &netem.GilbertElliott{P: g.P, R: g.R, OneMinusH: g.OneMinusH, OneMinusK: g.OneMinusK})
	}
	if ph.Duplicate > 0 {
		imps = append(imps, &netem.Duplicate{Probability: ph.Duplicate})
	}
	if ph.Corrupt > 0 {
		imps = append(imps, &netem.Corrupt{Probability: ph.Corrupt})
	}
	q := netem.QueueLimit{Bytes: ph.Queue.Bytes, Packets: ph.Queue.Packets, Delay: ph.Queue.Delay}
	if ph.Queue.CoDel {
		q.CoDel = &netem.CoDelParams{} // RFC 8289's defaults
	}
	if ph.Queue.PIE {
		q.PIE = &netem.PIEParams{} // RFC 8033's defaults
	}
	if ph.Queue.FQCoDel {
		q.FQCoDel = &netem.FQCoDelParams{} // RFC 8290's defaults
	}
	if ph.Queue.DualPI2 {
		q.DualPI2 = &netem.DualPI2Params{} // RFC 9332's defaults
	}
	if m := ph.Queue.Cake; m != "" {
		// FQ-CoDel's defaults; the validated name is one of the modes.
		q.Cake = &netem.CakeParams{Hosts: netem.CakeHosts(slices.Index(netem.CakeModes, m))}
	}
	switch {
	case ph.Trace != nil:
		tr, err := loadTrace(file, ph.Trace.File, traces)
		if err != nil {
			return nil, c, fmt.Errorf("%s: %w", where, err)
		}
		// The loaded trace is shared by every phase that names it, so a
		// timeline that keeps the trace (and its offset) keeps its
		// position (TraceLink's Inherit compares the traces).
		imps = append(imps, &netem.TraceLink{Path: tr.Name, Trace: tr, Offset: ph.Trace.Offset, NoLoop: ph.Trace.NoLoop,
			Overhead: ph.Overhead, Queue: q})
		tt, err := traceTimesOf(tr)
		if err != nil {
			return nil, c, fmt.Errorf("%s: %w", where, err)
		}
		c.trace = &traceCap{times: tt, offset: ph.Trace.Offset, once: ph.Trace.NoLoop}
	case ph.Rate > 0:
		imps = append(imps, &netem.Rate{Rate: ph.Rate, Overhead: ph.Overhead, Queue: q})
		c.rate = ph.Rate
	case ph.Rate < 0:
		return nil, c, fmt.Errorf("%w: %s: rate %d bit/s is negative", laberr.ErrScenario, where, ph.Rate)
	case ph.Queue != (scenarios.Queue{}) || ph.Overhead != 0:
		return nil, c, fmt.Errorf("%w: %s: a queue or overhead needs a rate or a trace (there is no bottleneck to queue at)", laberr.ErrScenario, where)
	}
	if s := ph.Spikes; s != nil {
		imps = append(imps, &netem.Spikes{Min: s.Min, Max: s.Max, Every: s.Every, Duration: s.Duration, Offset: s.Offset, Random: s.Random})
	}
	switch {
	case ph.Jitter != nil:
		// netem's jitter carries the mean delay itself: "delay 25ms
		// jitter 5ms" is one impairment, as in tc.
		j := ph.Jitter
		imps = append(imps, &netem.Jitter{Delay: ph.Delay, Jitter: j.Spread, Distribution: j.Distribution, Correlation: j.Correlation, Reorder: j.Reorder})
	case ph.Delay > 0:
		imps = append(imps, &netem.Delay{Delay: ph.Delay})
	case ph.Delay < 0:
		return nil, c, fmt.Errorf("%w: %s: delay %v is negative", laberr.ErrScenario, where, ph.Delay)
	}
	for _, imp := range imps {
		if v, ok := imp.(netem.Validator); ok {
			if err := v.Validate(); err != nil {
				return nil, c, fmt.Errorf("%w: %s: %s: %w", laberr.ErrScenario, where, imp.Kind(), err)
			}
		}
	}
	return imps, c, nil
}

// DescribePhase sums a scenario's phase up as the reports do: "delay
// 25ms, loss 1%, rate 5 Mbit/s", or "perfect". lab shell's status line
// names the phase in force with it.
func DescribePhase(ph scenarios.Phase) string {
	var parts []string
	add := func(format string, a ...any) { parts = append(parts, fmt.Sprintf(format, a...)) }
	if ph.BlockUDP {
		add("UDP blocked")
	}
	if o := ph.Outages; o != nil {
		mode := "lost"
		if o.Hold {
			mode = "held"
		}
		if len(o.Windows) > 0 {
			add("%d outages (%s)", len(o.Windows), mode)
		} else {
			add("outage %v every %v (%s)", o.Duration, o.Every, mode)
		}
	}
	if ph.Loss > 0 {
		add("loss %s%%", strconv.FormatFloat(ph.Loss*100, 'g', 4, 64))
	}
	if g := ph.Gilbert; g != nil {
		add("gilbert p %g r %g", g.P, g.R)
	}
	if ph.Duplicate > 0 {
		add("duplicate %g%%", ph.Duplicate*100)
	}
	if ph.Corrupt > 0 {
		add("corrupt %g%%", ph.Corrupt*100)
	}
	switch {
	case ph.Trace != nil:
		// The segment that ran: where the trace stood at time zero, and
		// whether it ended rather than wrapped.
		desc := "trace " + ph.Trace.File
		if ph.Trace.Offset > 0 {
			desc += " from " + scenarios.FormatDuration(ph.Trace.Offset)
		}
		if ph.Trace.NoLoop {
			desc += " (played once)"
		}
		add("%s", desc)
	case ph.Rate > 0:
		add("rate %s Mbit/s", strconv.FormatFloat(float64(ph.Rate)/1e6, 'g', 6, 64))
	}
	if q := ph.Queue; q != (scenarios.Queue{}) {
		var lim []string
		if q.Bytes > 0 {
			lim = append(lim, fmt.Sprintf("%d B", q.Bytes))
		}
		if q.Packets > 0 {
			lim = append(lim, fmt.Sprintf("%d packets", q.Packets))
		}
		if q.Delay > 0 {
			lim = append(lim, q.Delay.String())
		}
		if q.CoDel {
			lim = append(lim, "CoDel")
		}
		if q.PIE {
			lim = append(lim, "PIE")
		}
		if q.FQCoDel {
			lim = append(lim, "FQ-CoDel")
		}
		if q.DualPI2 {
			lim = append(lim, "DualPI2")
		}
		if q.Cake != "" {
			lim = append(lim, "CAKE "+q.Cake)
		}
		add("queue %s", strings.Join(lim, " "))
	}
	if s := ph.Spikes; s != nil {
		add("spikes %v-%v every %v", s.Min, s.Max, s.Every)
	}
	switch {
	case ph.Jitter != nil:
		add("delay %v ± %v (%s)", ph.Delay, ph.Jitter.Spread, cmp.Or(ph.Jitter.Distribution, netem.DistUniform))
	case ph.Delay > 0:
		add("delay %v", ph.Delay)
	}
	if len(parts) == 0 {
		return "perfect"
	}
	return strings.Join(parts, ", ")
}

// loadTrace finds the trace ref that the scenario file names and loads it
// once per run.
func loadTrace(file, ref string, traces map[string]*netem.Trace) (*netem.Trace, error) {
	path, err := resolveTrace(file, ref)
	if err != nil {
		return nil, err
	}
	if tr, ok := traces[path]; ok {
		return tr, nil
	}
	tr, err := netem.LoadTrace(path)
	if err != nil {
		return nil, fmt.Errorf("%w: trace %q: %w", laberr.ErrScenario, ref, err)
	}
	traces[path] = tr
	return tr, nil
}

// resolveTrace finds a trace file by the loader's rule (scenarios.TracePath).
// An absent shared folder is scenarios.ErrSharedAbsent, for the tests to skip; any
// other reason is laberr.ErrScenario, a shared trace not in a folder that is there
// included: a misspelled name fails rather than skips.
func resolveTrace(file, ref string) (string, error) {
	path, err := scenarios.TracePath(file, ref)
	switch {
	case errors.Is(err, scenarios.ErrSharedAbsent):
		return "", fmt.Errorf("lab: trace %q: %w", ref, err)
	case err != nil:
		return "", fmt.Errorf("%w: trace %q: %w", laberr.ErrScenario, ref, err)
	}
	return path, nil
}
