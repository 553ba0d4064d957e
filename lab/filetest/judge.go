package filetest

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/internal/needs"
	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// Outcome is one session of a scenario file: which scenario at which seed,
// and what came of it. Its JSON form carries it from the process that ran
// it (lab test's native job) to the one that judges it.
type Outcome struct {
	Scenario string `json:"scenario"`
	// File is the scenario's file, as it was named.
	File string `json:"file"`
	Seed uint64 `json:"seed"`
	// Result is what the session measured; nil when it could not run.
	Result *result.Run `json:"result,omitempty"`
	// Err says why there is no result or why it is incomplete; Skipped
	// says the scenario replays a trace of ../shared and that folder is
	// absent.
	Err     string `json:"error,omitempty"`
	Skipped bool   `json:"skipped,omitempty"`
	// Wall is the session's wall time.
	Wall time.Duration `json:"wall_ns"`
}

// Status is a session's verdict.
type Status string

// The verdicts.
const (
	// Pass: the session ran to its end and met every expectation.
	Pass Status = "pass"
	// Fail: it ran to its end and missed an expectation.
	Fail Status = "FAIL"
	// Error: it did not run to its end.
	Error Status = "error"
	// Skipped: it replays a trace of ../shared, which is absent (and
	// LAB_REQUIRE_SHARED is not 1, which makes this an Error).
	Skipped Status = "skipped"
)

// OK tells whether the status lets a run pass: a pass, or a skip that
// nothing requires.
func (s Status) OK() bool { return s == Pass || s == Skipped }

// Verdict is a session judged.
type Verdict struct {
	Status Status
	// Why says why an Error or a skip: the session's own message.
	Why string
	// Checks are the scenario's expectations, in its file's order (none
	// when the session did not run to its end).
	Checks []Judged
}

// Judged is one expectation judged.
type Judged struct {
	// Name says what is expected, without the value measured, so that it
	// names the same case in every run: "latency.median [1s, 4s) <= 50 ms".
	Name string
	Pass bool
	// Line is the expectation's line in the scenario's file (0: unknown).
	Line int
	// Message says what was measured against what was expected, with
	// the file and line: "my.yaml:12: latency.median over [1s, 4s) =
	// 80.1 ms, want <= 50 ms".
	Message string
}

// Judge judges a session: the one rule lab test and go test share.
func Judge(o Outcome) Verdict {
	switch {
	case o.Skipped:
		if os.Getenv(needs.Shared) == "1" {
			return Verdict{Status: Error, Why: o.Err + "; " + needs.Shared + "=1 requires it"}
		}
		return Verdict{Status: Skipped, Why: o.Err + "; " + needs.Shared + "=1 makes this a failure"}
	case o.Err != "":
		return Verdict{Status: Error, Why: o.Err}
	case o.Result == nil:
		return Verdict{Status: Error, Why: "the session gave no result"}
	}
	v := Verdict{Status: Pass}
	for _, c := range o.Result.Checks {
		j := Judged{Name: expectation(c), Pass: c.Pass, Line: c.Line}
		where := o.File
		if c.Line > 0 {
			where = fmt.Sprintf("%s:%d", o.File, c.Line)
		}
		var got string
		if c.Error != "" {
			got = "could not be measured: " + c.Error
		} else {
			got = "= " + result.FormatValue(c.Value, c.Unit)
		}
		j.Message = fmt.Sprintf("%s: %s over [%v, %v) %s, want %s", where, c.Measure, c.From, c.To, got, bounds(c))
		if !c.Pass && c.Error == "" && c.ExpectedFailure == "" && (c.Band || c.Required != "") {
			// A band's failure is a change, a requirement's names what
			// requires it: the kind, as the check's own verdict says it.
			j.Message += ": " + strings.TrimPrefix(c.Verdict(), "FAIL: ")
		}
		if !c.Pass {
			v.Status = Fail
		}
		v.Checks = append(v.Checks, j)
	}
	return v
}

// Failed returns the messages of the expectations not met.
func (v Verdict) Failed() []string {
	var out []string
	for _, c := range v.Checks {
		if !c.Pass {
			out = append(out, c.Message)
		}
	}
	return out
}

// passed counts the expectations met.
func (v Verdict) passed() int {
	n := 0
	for _, c := range v.Checks {
		if c.Pass {
			n++
		}
	}
	return n
}

// expectation names an expectation by what it asks.
func expectation(c result.Check) string {
	return fmt.Sprintf("%s [%v, %v) %s", c.Measure, c.From, c.To, bounds(c))
}

// bounds writes an expectation's bounds: ">= 9.5 ms and <= 18 ms".
func bounds(c result.Check) string {
	var want []string
	if c.Min != nil {
		want = append(want, ">= "+result.FormatValue(*c.Min, c.Unit))
	}
	if c.Max != nil {
		want = append(want, "<= "+result.FormatValue(*c.Max, c.Unit))
	}
	if len(want) == 0 {
		return "(no bound)"
	}
	return strings.Join(want, " and ")
}

// Headline is a result's figures a reader looks at first: "latency median
// 13.3 ms, p95 14.1 ms, 60.0 fps, 0 freezes".
func Headline(r *result.Run) string {
	s := r.Summary
	return fmt.Sprintf("latency median %s, p95 %s, %.1f fps, %s",
		ms(s.Latency.Median), ms(s.Latency.P95), s.FPS, count(len(s.Freezes), "freeze", "freezes"))
}

// count writes n and its noun: "1 freeze", "2 freezes".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func ms(d time.Duration) string {
	return result.FormatValue(d.Seconds(), scenarios.UnitDuration)
}

// ProgressLine is the line printed as a session finishes: the count, the
// verdict, the scenario and seed, the wall time and the headline figures,
// then a line for each expectation not met, or the reason it did not run.
func ProgressLine(o Outcome, v Verdict, done, total int) string {
	var b strings.Builder
	width := len(fmt.Sprint(total))
	fmt.Fprintf(&b, "[%*d/%d] %-7s %-28s seed %-4d %6.2f s wall", width, done, total, v.Status, o.Scenario, o.Seed, o.Wall.Seconds())
	switch {
	case o.Result != nil && (v.Status == Pass || v.Status == Fail):
		fmt.Fprintf(&b, "  %s; checks %d/%d\n", Headline(o.Result), v.passed(), len(v.Checks))
		for _, m := range v.Failed() {
			fmt.Fprintf(&b, "    %s\n", m)
		}
	default:
		fmt.Fprintf(&b, "\n    %s\n", firstLine(v.Why))
	}
	return b.String()
}

// firstLine keeps a long error (a worker's last lines) to its first line
// for the progress; the summary and the report have the rest.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// Summary is the table printed at the end and written as summary.md: a
// row per session, then the counts.
func Summary(outcomes []Outcome, verdicts []Verdict) string {
	var b strings.Builder
	b.WriteString("| scenario | seed | status | latency median | p95 | fps | freezes | checks | wall |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for i, o := range outcomes {
		v := verdicts[i]
		row := []string{o.Scenario, fmt.Sprint(o.Seed), string(v.Status)}
		if r := o.Result; r != nil && v.Status != Error {
			s := r.Summary
			row = append(row, ms(s.Latency.Median), ms(s.Latency.P95), fmt.Sprintf("%.1f", s.FPS), fmt.Sprint(len(s.Freezes)),
				fmt.Sprintf("%d/%d", v.passed(), len(v.Checks)))
		} else {
			row = append(row, strings.ReplaceAll(firstLine(v.Why), "|", "\\|"), "", "", "", "")
		}
		row = append(row, fmt.Sprintf("%.2f s", o.Wall.Seconds()))
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\n" + Counts(verdicts) + "\n")
	return b.String()
}

// Counts says how the sessions went: "4 sessions: 2 passed, 1 failed,
// 0 errors, 1 skipped".
func Counts(verdicts []Verdict) string {
	n := map[Status]int{}
	for _, v := range verdicts {
		n[v.Status]++
	}
	return fmt.Sprintf("%s: %d passed, %d failed, %s, %d skipped", count(len(verdicts), "session", "sessions"),
		n[Pass], n[Fail], count(n[Error], "error", "errors"), n[Skipped])
}

// FromSession is the outcome of a session that package jobs ran.
func FromSession(s jobs.Session) Outcome {
	o := Outcome{Scenario: s.Scenario, File: s.File, Seed: s.Seed, Result: s.Result, Skipped: s.Skipped, Wall: s.Wall}
	if s.Err != nil {
		o.Err = s.Err.Error()
	}
	return o
}
