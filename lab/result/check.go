package result

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/scenarios"
)

// Check is an expectation evaluated: the measured value beside its bounds,
// in the measurement's unit (seconds, bits/s, a count or a fraction).
type Check struct {
	// Measure names the measurement; Unit is its unit.
	Measure string         `json:"measure"`
	Unit    scenarios.Unit `json:"unit,omitempty"`
	// From and To are the window, To resolved to the end of the session
	// when the expectation left it open.
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
	// Latency, At and Every are the expectation's figures for the
	// measurements that read one (scenarios.MeasurementKeys): a latency
	// bound, an instant (a measurement at an instant ignores From and
	// To), an averaging period; 0 is none.
	Latency time.Duration `json:"latency_ns,omitempty"`
	At      time.Duration `json:"at_ns,omitempty"`
	Every   time.Duration `json:"every_ns,omitempty"`
	// Min and Max are the bounds; nil is none.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Value is what was measured; Within whether it is within the
	// bounds; Pass whether the check holds: Within, or for an expected
	// failure its opposite.
	Value  float64 `json:"value"`
	Within bool    `json:"within"`
	Pass   bool    `json:"pass"`
	// ExpectedFailure is why the product misses this bound today (the
	// expectation's expected_failure); empty for an ordinary bound.
	ExpectedFailure string `json:"expected_failure,omitempty"`
	// Line is the expectation's line in the scenario's file.
	Line int `json:"line,omitempty"`
	// Error says why nothing could be measured (then Pass is false).
	Error string `json:"error,omitempty"`
	// Recovery is recovery.under's detail: each network phase change in
	// the window and how the latency came back under Latency after it.
	Recovery []Recovery `json:"recovery,omitempty"`
}

// String reads as a line of a report:
// "latency.median [1s, 20s) = 13.3 ms, want <= 50 ms: pass",
// "flow.share [20s, 40s) = 55%, want >= 70%: expected failure (why)",
// "recovery.under (latency 150ms) [20s, 70s) = 1.2 s, want <= 3 s: pass",
// "bitrate.target at 30s = 2 Mbit/s, want <= 2.5 Mbit/s: pass".
func (c Check) String() string {
	var b strings.Builder
	b.WriteString(c.Measure)
	if c.Latency > 0 {
		fmt.Fprintf(&b, " (latency %v)", c.Latency)
	}
	if c.Every > 0 {
		fmt.Fprintf(&b, " (every %v)", c.Every)
	}
	if c.At > 0 {
		fmt.Fprintf(&b, " at %v", c.At)
	} else {
		fmt.Fprintf(&b, " [%v, %v)", c.From, c.To)
	}
	if c.Error != "" {
		fmt.Fprintf(&b, ": %s", c.Error)
	} else {
		fmt.Fprintf(&b, " = %s", FormatValue(c.Value, c.Unit))
	}
	var want []string
	if c.Min != nil {
		want = append(want, ">= "+FormatValue(*c.Min, c.Unit))
	}
	if c.Max != nil {
		want = append(want, "<= "+FormatValue(*c.Max, c.Unit))
	}
	if len(want) > 0 {
		fmt.Fprintf(&b, ", want %s", strings.Join(want, " and "))
	}
	switch {
	case c.ExpectedFailure != "" && c.Pass:
		fmt.Fprintf(&b, ": expected failure (%s)", c.ExpectedFailure)
	case c.ExpectedFailure != "" && c.Error == "":
		fmt.Fprintf(&b, ": FAIL (met a bound marked as an expected failure: %s; take the mark off)", c.ExpectedFailure)
	case c.Pass:
		b.WriteString(": pass")
	default:
		b.WriteString(": FAIL")
	}
	return b.String()
}

// FormatValue writes a measured value for people: durations in ms below a
// second, rates in Mbit/s, fractions as percentages, three significant
// digits.
func FormatValue(v float64, u scenarios.Unit) string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 3, 64) }
	switch u {
	case scenarios.UnitDuration:
		if v != 0 && v < 1 && v > -1 {
			return g(v*1e3) + " ms"
		}
		return g(v) + " s"
	case scenarios.UnitRate:
		return g(v/1e6) + " Mbit/s"
	case scenarios.UnitFraction, scenarios.UnitShare:
		return g(v*100) + "%"
	case scenarios.UnitCorrelation:
		return g(v)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}
