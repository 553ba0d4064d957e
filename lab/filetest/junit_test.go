package filetest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/needs"
)

// element is an XML element as read, without the writer's types, so that
// the shape is checked against the conventions and not against itself.
type element struct {
	name     string
	attrs    map[string]string
	children []*element
	text     string
}

func (e *element) all(name string) []*element {
	var out []*element
	for _, c := range e.children {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

func readXML(data []byte) (*element, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	var stack []*element
	var root *element
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := &element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				if root != nil {
					return nil, errors.New("two root elements")
				}
				root = e
			} else {
				parent := stack[len(stack)-1]
				parent.children = append(parent.children, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}

// junitProblems checks a document against the conventions of the common
// JUnit XML schema (the Ant/Jenkins junit XSD, as GitHub Actions' test
// reporters, GitLab and Jenkins read it): a testsuites root of testsuite
// elements; a testsuite with a name and counts (tests, failures, errors,
// skipped) that match its testcases, an optional properties element
// first, of name/value properties; a testcase with a name and a
// classname, at most one of failure, error and skipped, each failure or
// error with a message; times in seconds; the root's counts the sums of
// its suites'.
func junitProblems(root *element) []string {
	var ps []string
	bad := func(format string, args ...any) { ps = append(ps, fmt.Sprintf(format, args...)) }
	count := func(e *element, attr string) int {
		v, ok := e.attrs[attr]
		if !ok {
			bad("%s %q: no %s attribute", e.name, e.attrs["name"], attr)
			return -1
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			bad("%s %q: %s=%q is not a count", e.name, e.attrs["name"], attr, v)
		}
		return n
	}
	timeOK := func(e *element) {
		if v, ok := e.attrs["time"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 {
				bad("%s %q: time=%q is not seconds", e.name, e.attrs["name"], v)
			}
		}
	}
	if root.name != "testsuites" {
		bad("the root is <%s>, not <testsuites>", root.name)
	}
	timeOK(root)
	sums := map[string]int{}
	for _, suite := range root.children {
		if suite.name != "testsuite" {
			bad("<testsuites> holds a <%s>", suite.name)
			continue
		}
		if suite.attrs["name"] == "" {
			bad("a testsuite without a name")
		}
		timeOK(suite)
		seen := map[string]int{}
		for i, c := range suite.children {
			switch c.name {
			case "properties":
				if i != 0 {
					bad("suite %q: <properties> is not first", suite.attrs["name"])
				}
				for _, p := range c.children {
					if p.name != "property" || p.attrs["name"] == "" {
						bad("suite %q: a property without a name", suite.attrs["name"])
					}
					if _, ok := p.attrs["value"]; !ok {
						bad("suite %q: property %q without a value", suite.attrs["name"], p.attrs["name"])
					}
				}
			case "testcase":
				if c.attrs["name"] == "" || c.attrs["classname"] == "" {
					bad("suite %q: a testcase without a name or classname: %v", suite.attrs["name"], c.attrs)
				}
				timeOK(c)
				problems := 0
				for _, cc := range c.children {
					switch cc.name {
					case "failure", "error":
						if cc.attrs["message"] == "" {
							bad("case %q: <%s> without a message", c.attrs["name"], cc.name)
						}
						problems++
						seen[cc.name]++
					case "skipped":
						problems++
						seen["skipped"]++
					case "system-out", "system-err":
					default:
						bad("case %q holds a <%s>", c.attrs["name"], cc.name)
					}
				}
				if problems > 1 {
					bad("case %q: more than one of failure, error and skipped", c.attrs["name"])
				}
				seen["tests"]++
			case "system-out", "system-err":
			default:
				bad("suite %q holds a <%s>", suite.attrs["name"], c.name)
			}
		}
		// Each count and what it counts among the cases.
		for _, k := range [][2]string{{"tests", "tests"}, {"failures", "failure"}, {"errors", "error"}, {"skipped", "skipped"}} {
			attr, counted := k[0], k[1]
			n := count(suite, attr)
			if n >= 0 && n != seen[counted] {
				bad("suite %q: %s=%d, but its cases say %d", suite.attrs["name"], attr, n, seen[counted])
			}
			sums[attr] += n
		}
	}
	for _, attr := range []string{"tests", "failures", "errors", "skipped"} {
		if n := count(root, attr); n >= 0 && n != sums[attr] {
			bad("testsuites: %s=%d, but its suites add up to %d", attr, n, sums[attr])
		}
	}
	return ps
}

// The JUnit XML has the shape CI systems read: a suite per session, a case
// for the session and one per expectation, a failure per expectation not
// met with the measure, window, bound and value, an error for a session
// that did not run, skipped for one that needs ../shared.
func TestJUnit(t *testing.T) {
	t.Setenv(needs.Shared, "")
	outcomes := []Outcome{
		{Scenario: "good", File: "mine/good.yaml", Seed: 1, Result: run("good", medianMet), Wall: 750 * time.Millisecond},
		{Scenario: "bad", File: "mine/bad.yaml", Seed: 2, Result: run("bad", medianMet, medianMissed, fpsMissed), Wall: 540 * time.Millisecond},
		{Scenario: "broken", File: "mine/broken.yaml", Seed: 1, Err: "exact: session broken: the guest died\nlast lines <here> & there"},
		{Scenario: "lte", File: "mine/lte.yaml", Seed: 1, Err: "trace absent", Skipped: true},
	}
	var verdicts []Verdict
	for _, o := range outcomes {
		verdicts = append(verdicts, Judge(o))
	}
	var b bytes.Buffer
	require.NoError(t, JUnit(&b, "lab test", outcomes, verdicts))
	require.True(t, strings.HasPrefix(b.String(), xml.Header))
	root, err := readXML(b.Bytes())
	require.NoError(t, err)
	require.Empty(t, junitProblems(root))

	require.Equal(t, map[string]string{"name": "lab test", "tests": "8", "failures": "2", "errors": "1", "skipped": "1", "time": "1.290"}, root.attrs)
	suites := root.all("testsuite")
	var names []string
	for _, s := range suites {
		names = append(names, s.attrs["name"])
	}
	require.Equal(t, []string{"good seed 1", "bad seed 2", "broken seed 1", "lte seed 1"}, names)

	bad := suites[1]
	require.Equal(t, "mine/bad.yaml", bad.attrs["file"])
	var cases, failures []string
	for _, c := range bad.all("testcase") {
		require.Equal(t, "bad.seed2", c.attrs["classname"])
		cases = append(cases, c.attrs["name"])
		for _, f := range c.all("failure") {
			failures = append(failures, f.attrs["message"])
			require.Equal(t, f.attrs["message"], f.text, "the detail repeats the message")
		}
	}
	require.Equal(t, []string{SessionCase, "latency.median [1s, 4s) <= 60 ms", "latency.median [1s, 4s) <= 50 ms", "fps [0s, 4s) >= 50 and <= 70"}, cases)
	require.Equal(t, []string{
		"mine/bad.yaml:7: latency.median over [1s, 4s) = 133 ms, want <= 50 ms",
		"mine/bad.yaml:8: fps over [0s, 4s) = 24.8, want >= 50 and <= 70",
	}, failures)
	require.Equal(t, "8", bad.all("testcase")[3].attrs["line"])

	session := suites[2].all("testcase")[0]
	require.Equal(t, SessionCase, session.attrs["name"])
	require.Equal(t, "exact: session broken: the guest died", session.all("error")[0].attrs["message"])
	require.Equal(t, "exact: session broken: the guest died\nlast lines <here> & there", session.all("error")[0].text, "escaped and read back whole")
	require.Len(t, suites[3].all("testcase")[0].all("skipped"), 1)

	// The same expectation twice is still two cases.
	b.Reset()
	twice := Outcome{Scenario: "twice", File: "t.yaml", Seed: 1, Result: run("twice", medianMet, medianMet)}
	require.NoError(t, JUnit(&b, "lab test", []Outcome{twice}, []Verdict{Judge(twice)}))
	root, err = readXML(b.Bytes())
	require.NoError(t, err)
	var twiceCases []string
	for _, c := range root.all("testsuite")[0].all("testcase") {
		twiceCases = append(twiceCases, c.attrs["name"])
	}
	require.Equal(t, []string{SessionCase, "latency.median [1s, 4s) <= 60 ms", "latency.median [1s, 4s) <= 60 ms #2"}, twiceCases)
}

// The check finds what CI systems would misread.
func TestJUnitProblems(t *testing.T) {
	for want, doc := range map[string]string{
		"the root is <testsuite>":              `<testsuite name="x" tests="0" failures="0" errors="0" skipped="0"></testsuite>`,
		`suite "s": failures=0, but its cases`: `<testsuites tests="1" failures="1" errors="0" skipped="0"><testsuite name="s" tests="1" failures="0" errors="0" skipped="0"><testcase name="c" classname="k"><failure message="m"/></testcase></testsuite></testsuites>`,
		"without a name or classname":          `<testsuites tests="1" failures="0" errors="0" skipped="0"><testsuite name="s" tests="1" failures="0" errors="0" skipped="0"><testcase name="c"/></testsuite></testsuites>`,
		"<failure> without a message":          `<testsuites tests="1" failures="1" errors="0" skipped="0"><testsuite name="s" tests="1" failures="1" errors="0" skipped="0"><testcase name="c" classname="k"><failure/></testcase></testsuite></testsuites>`,
		"more than one of failure":             `<testsuites tests="1" failures="1" errors="0" skipped="1"><testsuite name="s" tests="1" failures="1" errors="0" skipped="1"><testcase name="c" classname="k"><failure message="m"/><skipped/></testcase></testsuite></testsuites>`,
		"testsuites: tests=2, but":             `<testsuites tests="2" failures="0" errors="0" skipped="0"><testsuite name="s" tests="1" failures="0" errors="0" skipped="0"><testcase name="c" classname="k"/></testsuite></testsuites>`,
		`time="soon" is not seconds`:           `<testsuites tests="0" failures="0" errors="0" skipped="0" time="soon"></testsuites>`,
	} {
		root, err := readXML([]byte(doc))
		require.NoError(t, err)
		ps := junitProblems(root)
		require.True(t, slices.ContainsFunc(ps, func(p string) bool { return strings.Contains(p, want) }), "%s: %v", want, ps)
	}
}
