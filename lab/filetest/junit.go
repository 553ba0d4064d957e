package filetest

import (
	"encoding/xml"
	"fmt"
	"io"
	"time"
)

// The JUnit XML shape CI systems read (GitHub Actions' test reporters,
// GitLab, Jenkins): a testsuites root holding a testsuite per session, a
// testcase per expectation. Counts and times are attributes; a problem is a
// failure (an expectation not met), an error (the session did not run) or
// skipped, each a child of its testcase with a message attribute and the
// detail as text.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	File       string          `xml:"file,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Line      int           `xml:"line,attr,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// SessionCase names the testcase every session has beside its
// expectations: that it ran to its end (an error or a skip shows there).
const SessionCase = "session"

// JUnit writes the sessions as JUnit XML: a testsuite per session, named
// after its scenario and seed ("my-scenario seed 1"), with a testcase for
// the session itself (SessionCase: an error when it did not run to its
// end, skipped when it needs ../shared) and one per expectation, named by
// what it asks (Judged.Name), failing with the measure, window, bound and
// value. name names the whole run.
func JUnit(w io.Writer, name string, outcomes []Outcome, verdicts []Verdict) error {
	root := junitSuites{Name: name}
	var total time.Duration
	for i, o := range outcomes {
		v := verdicts[i]
		total += o.Wall
		suite := junitSuite{
			Name: fmt.Sprintf("%s seed %d", o.Scenario, o.Seed),
			Time: seconds(o.Wall),
			File: o.File,
			Properties: []junitProperty{
				{Name: "scenario", Value: o.Scenario},
				{Name: "seed", Value: fmt.Sprint(o.Seed)},
				{Name: "file", Value: o.File},
			},
		}
		class := fmt.Sprintf("%s.seed%d", o.Scenario, o.Seed)
		session := junitCase{Name: SessionCase, Classname: class, Time: seconds(o.Wall), File: o.File}
		switch v.Status {
		case Error:
			session.Error = &junitProblem{Message: firstLine(v.Why), Type: "session", Text: v.Why}
			suite.Errors++
		case Skipped:
			session.Skipped = &junitProblem{Message: v.Why}
			suite.Skipped++
		default:
			if o.Result != nil {
				session.SystemOut = Headline(o.Result)
			}
		}
		suite.Cases = append(suite.Cases, session)
		names := map[string]int{}
		for _, c := range v.Checks {
			names[c.Name]++
			caseName := c.Name
			if n := names[c.Name]; n > 1 {
				caseName = fmt.Sprintf("%s #%d", c.Name, n) // the same expectation twice: still two cases
			}
			jc := junitCase{Name: caseName, Classname: class, Time: seconds(0), File: o.File, Line: c.Line}
			if !c.Pass {
				jc.Failure = &junitProblem{Message: c.Message, Type: "expectation", Text: c.Message}
				suite.Failures++
			}
			suite.Cases = append(suite.Cases, jc)
		}
		suite.Tests = len(suite.Cases)
		root.Tests += suite.Tests
		root.Failures += suite.Failures
		root.Errors += suite.Errors
		root.Skipped += suite.Skipped
		root.Suites = append(root.Suites, suite)
	}
	root.Time = seconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(root); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds is a JUnit time: seconds with a decimal point.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
