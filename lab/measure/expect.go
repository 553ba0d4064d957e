package measure

import (
	"fmt"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Evaluate measures every expectation and says whether it holds. A value
// that cannot be measured (nothing in the window) fails its check with the
// reason, rather than passing vacuously, an expected failure too: it must
// be missed by a measured figure, not by a run that measured nothing.
func Evaluate(r *result.Run, exps []scenarios.Expectation) []result.Check {
	out := make([]result.Check, 0, len(exps))
	for _, e := range exps {
		c := result.Check{Measure: e.Measure, From: e.From, To: e.To, Latency: e.Latency, At: e.At, Every: e.Every,
			Min: e.Min, Max: e.Max, Line: e.Line, ExpectedFailure: e.ExpectedFailure, Band: e.Band, Required: e.Required}
		if m, ok := scenarios.LookupMeasurement(e.Measure); ok {
			c.Unit = m.Unit
		}
		// A run shorter than the expectation's window (a scenario run
		// for less than its duration, scenarios.WithDuration, or one
		// interrupted before the window's end) did not measure what the
		// bound is about: a part of the window is another figure, so it
		// is not judged either way.
		end := max(e.To, e.At)
		if end == 0 {
			end = r.Duration // a window open to the end
		}
		ran, how := r.Duration, "lasted"
		if r.Interrupted != "" {
			ran, how = r.Ran, "was interrupted at"
		}
		if ran > 0 && end > ran {
			c.NotJudged = fmt.Sprintf("the run %s %v, and this window ends at %v", how, ran, end)
			if e.At > 0 {
				c.NotJudged = fmt.Sprintf("the run %s %v, and this is measured at %v", how, ran, end)
			}
			c.Pass = true
			out = append(out, c)
			continue
		}
		if from, to, err := resolve(r, e.From, e.To); err == nil {
			c.To = to
			if e.Measure == "recovery.under" && e.Latency > 0 {
				// Each change's recovery, recovered or not, beside the
				// longest: the check's evidence.
				c.Recovery, _ = newWindow(r, from, to).recoveriesUnder(e.Latency)
			}
		}
		v, err := OfWith(r, e.Measure, e.From, e.To, ParamsOf(e))
		if err != nil {
			c.Error = err.Error()
		} else {
			c.Value = v
			c.Within = (e.Min == nil || v >= *e.Min) && (e.Max == nil || v <= *e.Max)
			// A bound marked as an expected failure passes while it is
			// missed: meeting it is the news.
			c.Pass = c.Within == (e.ExpectedFailure == "")
		}
		out = append(out, c)
	}
	return out
}
