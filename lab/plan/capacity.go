package plan

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/nuvirahub/latencylab/netem"
)

// Capacity is what a direction of the network can carry, phase by phase
// (Between).
type Capacity []capPhase

// capPhase is a direction's capacity from At on: a rate, a trace, or none.
type capPhase struct {
	at    time.Duration
	rate  int64
	trace *traceCap
}

// traceCap is a trace as a phase replays it: from an offset, wrapping or
// played once.
type traceCap struct {
	times  *traceTimes
	offset time.Duration
	once   bool
}

// traceTimes are a trace's opportunities in a form that can be counted;
// netem keeps them to itself.
type traceTimes struct {
	ms     []int64 // non-decreasing, the last is the period
	period int64   // ms
}

// traceTimesOf reads a trace's opportunities back through its mahimahi
// form, the only way netem exposes them.
func traceTimesOf(tr *netem.Trace) (*traceTimes, error) {
	var buf bytes.Buffer
	if _, err := tr.WriteTo(&buf); err != nil {
		return nil, err
	}
	tt := &traceTimes{ms: make([]int64, 0, tr.Opportunities())}
	for line := range bytes.Lines(buf.Bytes()) {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("lab: trace %s: %w", tr.Name, err)
		}
		tt.ms = append(tt.ms, v)
	}
	tt.period = tt.ms[len(tt.ms)-1]
	return tt, nil
}

// before counts the opportunities at instants in [0, t) from the link's
// epoch, the trace repeating with its period.
func (tt *traceTimes) before(t time.Duration) int64 {
	if t <= 0 {
		return 0
	}
	n := int64(len(tt.ms))
	period := time.Duration(tt.period) * time.Millisecond
	q := int64(t / period)
	// Only the last two repetitions can be partly before t: every
	// opportunity of earlier ones is at most one period after its start.
	count := max(0, q-1) * n
	for rep := max(0, q-1); rep <= q; rep++ {
		rel := t - time.Duration(rep)*period
		count += int64(sort.Search(len(tt.ms), func(i int) bool {
			return time.Duration(tt.ms[i])*time.Millisecond >= rel
		}))
	}
	return count
}

// between counts the opportunities the phase's trace offers at the
// session's instants [a, b), 0 <= a <= b: the trace stands at offset at
// time zero, and played once it offers none after its end.
func (tc *traceCap) between(a, b time.Duration) int64 {
	count := tc.times.before
	if tc.once {
		count = tc.times.once
	}
	return count(tc.offset+b) - count(tc.offset+a)
}

// once counts the opportunities of the trace's first repetition at
// instants in [0, t): a trace played once has no other.
func (tt *traceTimes) once(t time.Duration) int64 {
	return int64(sort.Search(len(tt.ms), func(i int) bool {
		return time.Duration(tt.ms[i])*time.Millisecond >= t
	}))
}

// Between is the bits the direction can carry in [a, b), instants from
// time zero, and the part of that interval with a bottleneck at all.
func (phases Capacity) Between(a, b time.Duration) (bits float64, capped time.Duration) {
	for i, ph := range phases {
		lo, hi := max(a, ph.at), b
		if i+1 < len(phases) {
			hi = min(hi, phases[i+1].at)
		}
		if hi <= lo {
			continue
		}
		switch {
		case ph.trace != nil:
			bits += float64(ph.trace.between(lo, hi)) * netem.TraceMTU * 8
		case ph.rate > 0:
			bits += float64(ph.rate) * (hi - lo).Seconds()
		default:
			continue
		}
		capped += hi - lo
	}
	return bits, capped
}
