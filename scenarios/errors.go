package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Error is one mistake in a scenario file. The loader returns every mistake
// it finds in a file, each an *Error, joined with errors.Join in the order
// of their lines; Errors takes them apart again.
type Error struct {
	// File is the file the mistaken value is written in: the scenario, or
	// the defaults file when the value came from there.
	File string
	// Line is the value's line in File, from 1; 0 when there is no file
	// (a Scenario built in Go and checked with Validate).
	Line int
	// Field is the value's place in the scenario, as written:
	// "network.down[0].loss", "expect[2].max". Empty for the whole file
	// (bad YAML syntax).
	Field string
	// Msg says what is wrong and what was expected.
	Msg string
}

// Error formats e the way compilers do, so that editors and terminals link
// it to the line: "library/mobile.yaml:12: network.down[0].loss: 120% out
// of range: expected a percentage from 0% to 100%".
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors returns every *Error in err, in order: the loader joins several
// with errors.Join, and callers that list them (an editor, a test) want
// each one.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *Error:
			out = append(out, e)
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// errorList collects a file's errors. The same mistake can be found twice
// (a `both:` phase is checked for each direction, a value from the defaults
// once per use): it is kept once.
type errorList struct {
	main string // the scenario file, whose errors come first
	seen map[Error]bool
	list []*Error
}

func (l *errorList) add(e Error) {
	if l.seen == nil {
		l.seen = map[Error]bool{}
	}
	if l.seen[e] {
		return
	}
	l.seen[e] = true
	l.list = append(l.list, &e)
}

// err returns the errors joined, the scenario file's first then the
// defaults', each file's by line; nil when there are none.
func (l *errorList) err() error {
	if len(l.list) == 0 {
		return nil
	}
	sorted := slices.Clone(l.list)
	slices.SortStableFunc(sorted, func(a, b *Error) int {
		if (a.File == l.main) != (b.File == l.main) {
			if a.File == l.main {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	errs := make([]error, len(sorted))
	for i, e := range sorted {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// closest returns the candidate nearest to s, the way people mistype: the
// same word in another case or with '-' for '_' ("block-udp" for
// block_udp), or within an edit or two ("los" for loss, "delya" for delay).
// It returns "" when nothing is close enough to be a useful guess.
func closest(s string, candidates []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(s))
	}
	for _, c := range candidates {
		if norm(c) == norm(s) {
			return c
		}
	}
	best, bestD := "", 0
	limit := 1
	if utf8.RuneCountInString(s) >= 5 {
		limit = 2
	}
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d <= limit && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of neighbours each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 1 << 30 // nobody mistypes a key that long; keep the cost bounded
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// list writes names for a message: "a, b, c".
func list(names []string) string { return strings.Join(names, ", ") }
