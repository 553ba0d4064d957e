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
	// Band is a bound set from the measured spread of the scenario's own
	// runs (the expectation's band): a value outside it is a change, in
	// either direction, not a verdict on quality, and its failure says so
	// and how to accept the change.
	Band bool `json:"band,omitempty"`
	// Required says what requires a bound that is not a band (the
	// expectation's required): its failure names it.
	Required string `json:"required,omitempty"`
	// NotJudged says why the check was not judged: the run did not cover
	// its window (a run shorter than the scenario). Such a check neither
	// holds nor fails: Pass is true, so that it fails nothing, and String
	// says it was not judged.
	NotJudged string `json:"not_judged,omitempty"`
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
// A failure says what kind of bound failed: a band, that the session
// changed ("FAIL: changed: below the band measured for this scenario",
// and how to accept the change); a requirement, which bound it missed and
// what requires it. A check the run did not cover says "not judged" and
// why, with no value.
func (c Check) String() string { return c.Subject() + ": " + c.Verdict() }

// Subject is String without its verdict: the measurement, its window, the
// value and the bounds.
func (c Check) Subject() string {
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
	switch {
	case c.NotJudged != "":
	case c.Error != "":
		fmt.Fprintf(&b, ": %s", c.Error)
	default:
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
	return b.String()
}

// Verdict is the end of String: "pass", "expected failure (why)", "not
// judged (why)", or "FAIL" followed by what kind of bound failed.
func (c Check) Verdict() string {
	var b strings.Builder
	switch {
	case c.NotJudged != "":
		fmt.Fprintf(&b, "not judged (%s)", c.NotJudged)
	case c.ExpectedFailure != "" && c.Pass:
		fmt.Fprintf(&b, "expected failure (%s)", c.ExpectedFailure)
	case c.ExpectedFailure != "" && c.Error == "":
		fmt.Fprintf(&b, "FAIL (met a bound marked as an expected failure: %s; take the mark off)", c.ExpectedFailure)
	case c.Pass:
		b.WriteString("pass")
	case c.Error != "":
		b.WriteString("FAIL")
	case c.Band:
		fmt.Fprintf(&b, "FAIL: changed: %s the band measured for this scenario; if the change is intended, "+
			"measure the band again (make bounds, for the library's scenarios) and move min and max to it", c.side("below", "above"))
	default:
		fmt.Fprintf(&b, "FAIL: %s", c.side("below the required minimum", "above the required maximum"))
		if c.Required != "" {
			fmt.Fprintf(&b, "; required by %s", c.Required)
		}
	}
	return b.String()
}

// side says which bound a value outside its bounds missed: below for
// under Min, above for over Max.
func (c Check) side(below, above string) string {
	if c.Min != nil && c.Value < *c.Min {
		return below
	}
	if c.Max != nil && c.Value > *c.Max {
		return above
	}
	// Within both, or not a number: not a side of the bounds.
	return "outside"
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
