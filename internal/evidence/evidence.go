// Package evidence lets a test pin the figures that the project's record of
// the findings (lab/findings.yaml) and the docs quote from it. The record's
// evidence strings are typed by hand and copied into the reproduction table,
// so a figure in them is only trustworthy if the test that measures it also
// reads it: a test takes the text, claims each number in it with the value it
// measured, and fails when a written figure and the measurement part, or
// when a number in the text is claimed by nothing.
//
// The package reads lab/findings.yaml itself (plain YAML, a few fields), so
// that a test of a low package can pin its figures without importing lab.
package evidence

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/internal/modroot"
)

// File is the record of the findings, from the module's root.
const File = "lab/findings.yaml"

// Item is one evidence string of the record: the finding it bears on, what
// the lab measured (the text the table shows) and the command that
// measures it again.
type Item struct {
	ID, Lab, Command string
}

// Read returns every evidence string of the record at root.
func Read(root string) ([]Item, error) {
	data, err := os.ReadFile(filepath.Join(root, File))
	if err != nil {
		return nil, err
	}
	var fs []struct {
		ID       string `yaml:"id"`
		Evidence []struct {
			Lab     string `yaml:"lab"`
			Command string `yaml:"command"`
		} `yaml:"evidence"`
	}
	if err := yaml.Unmarshal(data, &fs); err != nil {
		return nil, fmt.Errorf("%s: %w", File, err)
	}
	var out []Item
	for _, f := range fs {
		for _, e := range f.Evidence {
			out = append(out, Item{ID: f.ID, Lab: e.Lab, Command: e.Command})
		}
	}
	return out, nil
}

// Call is how a test names the evidence it pins, as For's arguments are
// written in Go: the finding and the command, quoted. A check of the record
// looks for it in the tests of the command's package.
func Call(id, command string) string {
	return fmt.Sprintf("evidence.For(t, %q, %q)", id, command)
}

// Number is a figure written in a text: where it is, its value, and how
// many decimals it was written with.
type Number struct {
	Start, End int
	Value      float64
	Decimals   int
}

// number is a figure as the docs write them: digits, thousands apart by a
// space ("18 118"), and decimals after a point.
var number = regexp.MustCompile(`\d{1,3}(?: \d{3})+(?:\.\d+)?|\d+(?:\.\d+)?`)

// reference is a name that holds digits but no figure: an RFC and its
// section ("RFC 6143 7.7.4", "RFC 6143 section 7.7.4"), a section alone
// ("7.7.6"), a resolution's name ("4K") and a shift in code ("x<<12").
var reference = regexp.MustCompile(`RFC \d+(?:(?: section)? \d+(?:\.\d+)+)?|\b\d+(?:\.\d+){2,}|\b\d+K\b|<<\d+`)

// Numbers returns the figures written in text, leaving out the digits of
// RFC references.
func Numbers(text string) []Number {
	refs := reference.FindAllStringIndex(text, -1)
	inRef := func(i int) bool {
		for _, r := range refs {
			if i >= r[0] && i < r[1] {
				return true
			}
		}
		return false
	}
	var out []Number
	for _, m := range number.FindAllStringIndex(text, -1) {
		if inRef(m[0]) {
			continue
		}
		// A digit glued to letters is a name (x86, H264, E11, static_0pct),
		// not a figure.
		if m[0] > 0 && isLetter(text[m[0]-1]) {
			continue
		}
		s := strings.ReplaceAll(text[m[0]:m[1]], " ", "")
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			continue
		}
		dec := 0
		if i := strings.IndexByte(s, '.'); i >= 0 {
			dec = len(s) - i - 1
		}
		out = append(out, Number{Start: m[0], End: m[1], Value: v, Decimals: dec})
	}
	return out
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '_' }

// Pin is a text whose numbers a test claims, one by one.
type Pin struct {
	tb      testing.TB
	where   string
	text    string
	nums    []Number
	claimed []bool
	errs    []string
}

// For returns the evidence string of finding id whose command is command,
// for the test that runs that command to pin. It fails tb when the record
// holds no such evidence.
func For(tb testing.TB, id, command string) *Pin {
	tb.Helper()
	root, err := modroot.Find()
	if err != nil {
		tb.Fatal(err)
	}
	items, err := Read(root)
	if err != nil {
		tb.Fatal(err)
	}
	for _, it := range items {
		if it.ID == id && it.Command == command {
			return Text(tb, fmt.Sprintf("%s, %s's evidence (%s)", File, id, command), it.Lab)
		}
	}
	tb.Fatalf("%s: %s holds no evidence with the command %q", File, id, command)
	return nil
}

// Doc returns the text of file (from the module's root) from the first
// line holding from to the first line after it holding to, its lines
// joined by spaces, for a test to pin the figures a page quotes.
func Doc(tb testing.TB, file, from, to string) *Pin {
	tb.Helper()
	root, err := modroot.Find()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		tb.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, from)
	if i < 0 {
		tb.Fatalf("%s: no %q", file, from)
	}
	i = strings.LastIndexByte(doc[:i], '\n') + 1
	j := strings.Index(doc[i:], to)
	if j < 0 {
		tb.Fatalf("%s: no %q after %q", file, to, from)
	}
	j += i + len(to)
	if k := strings.IndexByte(doc[j:], '\n'); k >= 0 {
		j += k
	} else {
		j = len(doc)
	}
	return Text(tb, file, strings.Join(strings.Fields(doc[i:j]), " "))
}

// Text returns a pin on text; where names it in messages.
func Text(tb testing.TB, where, text string) *Pin {
	nums := Numbers(text)
	return &Pin{tb: tb, where: where, text: text, nums: nums, claimed: make([]bool, len(nums))}
}

// String is the text pinned.
func (p *Pin) String() string { return p.text }

// figures finds pattern in the text, once, and returns the numbers its
// groups hold, one per group, marking them claimed.
func (p *Pin) figures(pattern string, n int) []Number {
	re, err := regexp.Compile(pattern)
	if err != nil {
		p.tb.Fatalf("evidence: pattern %q: %v", pattern, err)
	}
	ms := re.FindAllStringSubmatchIndex(p.text, -1)
	if len(ms) != 1 {
		p.errs = append(p.errs, fmt.Sprintf("%q appears %d times, want once", pattern, len(ms)))
		return nil
	}
	m := ms[0]
	if re.NumSubexp() != n {
		p.tb.Fatalf("evidence: pattern %q has %d groups for %d values", pattern, re.NumSubexp(), n)
	}
	var out []Number
	for g := 1; g <= n; g++ {
		s, e := m[2*g], m[2*g+1]
		var found []int
		for k, num := range p.nums {
			if num.Start >= s && num.End <= e {
				found = append(found, k)
			}
		}
		if len(found) != 1 {
			p.tb.Fatalf("evidence: group %d of %q holds %d figures of %q, want one", g, pattern, len(found), p.text)
		}
		p.claimed[found[0]] = true
		out = append(out, p.nums[found[0]])
	}
	return out
}

// Figure claims the figures pattern's groups hold (one figure a group) and
// checks each against what the test measured: the measured value, written
// with as many decimals as the figure, must be the figure.
func (p *Pin) Figure(pattern string, measured ...float64) {
	for i, n := range p.figures(pattern, len(measured)) {
		half := 0.5 * math.Pow(10, -float64(n.Decimals))
		if math.Abs(measured[i]-n.Value) > half*(1+1e-9) {
			p.errs = append(p.errs, fmt.Sprintf("%s says %s where the test measures %.*f", p.where, p.text[n.Start:n.End], n.Decimals+1, measured[i]))
		}
	}
}

// Within claims the figures pattern's groups hold and checks that each lies
// within rel (a fraction) of what the test measured, or rounds to it: for a
// figure that moves from run to run, rel is the spread measured, which must
// stay inside the library's bound rule (a factor of the square root of two
// either way, docs/testing.md).
func (p *Pin) Within(pattern string, rel float64, measured ...float64) {
	if rel <= 0 || rel >= math.Sqrt2-1 {
		p.tb.Fatalf("evidence: a tolerance of %v is outside the bound rule (0 to %.2f)", rel, math.Sqrt2-1)
	}
	for i, n := range p.figures(pattern, len(measured)) {
		half := 0.5 * math.Pow(10, -float64(n.Decimals))
		m := measured[i]
		if math.Abs(m-n.Value) > half*(1+1e-9) && math.Abs(m-n.Value) > rel*math.Abs(n.Value) {
			p.errs = append(p.errs, fmt.Sprintf("%s says %s where the test measures %.*f, more than %.0f%% away", p.where, p.text[n.Start:n.End], n.Decimals+1, m, 100*rel))
		}
	}
}

// Rule claims the figures pattern's groups hold and checks each against
// the library's bound rule with no spread measured (docs/testing.md): the
// measured value within a factor of the square root of two of the figure,
// either way. It is for figures measured in real time, whose runs move with
// the machine's load by more than a written figure's precision.
func (p *Pin) Rule(pattern string, measured ...float64) {
	for i, n := range p.figures(pattern, len(measured)) {
		m := measured[i]
		if n.Value <= 0 || m < n.Value/math.Sqrt2 || m > n.Value*math.Sqrt2 {
			p.errs = append(p.errs, fmt.Sprintf("%s says %s where the test measures %.*f, more than the bound rule's factor of 1.41 away", p.where, p.text[n.Start:n.End], n.Decimals+1, m))
		}
	}
}

// AtMost claims the figure pattern's group holds as a bound the measured
// value must not pass ("within 1 ms", "< 1 us").
func (p *Pin) AtMost(pattern string, measured float64) {
	for _, n := range p.figures(pattern, 1) {
		if measured > n.Value {
			p.errs = append(p.errs, fmt.Sprintf("%s says at most %s where the test measures %g", p.where, p.text[n.Start:n.End], measured))
		}
	}
}

// Mismatch says which figures claimed so far part from the measurements,
// leaving aside the numbers not claimed yet: nil when all hold.
func (p *Pin) Mismatch() error {
	if len(p.errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(p.errs, "\n"))
}

// Err says what does not hold so far: figures that part from the
// measurements and numbers no call claimed. Nil when every number is
// claimed and holds.
func (p *Pin) Err() error {
	errs := p.errs
	for k, c := range p.claimed {
		if !c {
			n := p.nums[k]
			errs = append(errs, fmt.Sprintf("%s: the figure %s (at %q) is pinned by nothing: claim it in the test", p.where, p.text[n.Start:n.End], context(p.text, n)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s\n(the text: %q)", strings.Join(errs, "\n"), p.text)
}

// Done fails the test unless every number is claimed and holds.
func (p *Pin) Done() {
	p.tb.Helper()
	if err := p.Err(); err != nil {
		p.tb.Error(err)
	}
}

func context(text string, n Number) string {
	return text[max(0, n.Start-20):min(len(text), n.End+20)]
}
