// Package docregion owns the generated regions of the project's docs: the
// tables that commands write between two marker lines of a Markdown file
// (the reproduction table, the README's class counts, the library's bounds,
// the RFC 8867 suite's table, the codec lab's rows, the scenario format's
// measurement table). Generators check their region before a long run, so
// a missing marker fails at once and names the file, and write only
// between the markers, keeping the prose around them.
package docregion

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Region is a generated part of a file: what lies between Begin and End.
type Region struct {
	// File is the file's path from the repository's root.
	File string
	// Begin and End are the marker lines; Begin says what writes it.
	Begin, End string
}

// The project's generated regions.
var (
	// Reproduction is the full reproduction table (make readme).
	Reproduction = Region{"docs/reproduction.md",
		"<!-- reproduction:begin (generated: make readme) -->", "<!-- reproduction:end -->"}
	// ClassCounts is the README's summary of the reproduction classes
	// (make readme).
	ClassCounts = Region{"README.md",
		"<!-- reproduction-counts:begin (generated: make readme) -->", "<!-- reproduction-counts:end -->"}
	// Bounds is the library's measured spreads and bounds (make bounds).
	Bounds = Region{"docs/testing.md",
		"<!-- bounds:begin (generated: make bounds) -->", "<!-- bounds:end -->"}
	// RMCAT is the RFC 8867 suite's two controllers side by side (make
	// rmcat).
	RMCAT = Region{"docs/rmcat.md",
		"<!-- rmcat:begin (generated: make rmcat) -->", "<!-- rmcat:end -->"}
	// Policies is the viewer's policies measured (make policies).
	Policies = Region{"docs/policies.md",
		"<!-- policies:begin (generated: make policies) -->", "<!-- policies:end -->"}
	// Codecs is the codec lab's reproduction rows (lab codecs -doc).
	Codecs = Region{"docs/codecs.md",
		"<!-- codecs:begin (generated: go run ./cmd/lab codecs -doc docs/codecs.md) -->", "<!-- codecs:end -->"}
	// Measurements is the scenario format's measurement table, from the
	// catalogue (scenarios.Measurements); a test fails while it is stale.
	Measurements = Region{"scenarios/FORMAT.md",
		"<!-- measurements:begin (generated: go test ./scenarios -run TestFormatMeasurementTable -update) -->", "<!-- measurements:end -->"}
)

// All lists every generated region of the project.
var All = []Region{Reproduction, ClassCounts, Bounds, RMCAT, Codecs, Policies, Measurements}

// Find returns where the region's content starts and ends in doc, or an
// error saying which marker is missing, repeated or out of order.
func (r Region) Find(doc string) (start, end int, err error) {
	for _, m := range []string{r.Begin, r.End} {
		if n := strings.Count(doc, m); n != 1 {
			return 0, 0, fmt.Errorf("%s: marker %q appears %d times, want once", r.File, m, n)
		}
	}
	i, j := strings.Index(doc, r.Begin), strings.Index(doc, r.End)
	if j < i {
		return 0, 0, fmt.Errorf("%s: marker %q comes before %q", r.File, r.End, r.Begin)
	}
	return i + len(r.Begin), j, nil
}

// Replace returns doc with the region's content replaced by with.
func (r Region) Replace(doc, with string) (string, error) {
	i, j, err := r.Find(doc)
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(with, "\n") {
		with += "\n"
	}
	return doc[:i] + "\n" + with + doc[j:], nil
}

// Check reads the region's file under root and checks its markers, without
// writing: what a generator calls before its long run.
func (r Region) Check(root string) error {
	doc, err := os.ReadFile(filepath.Join(root, r.File))
	if err != nil {
		return fmt.Errorf("%s: %w", r.File, err)
	}
	_, _, err = r.Find(string(doc))
	return err
}

// Write replaces the region's content in its file under root.
func (r Region) Write(root, with string) error {
	path := filepath.Join(root, r.File)
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %w", r.File, err)
	}
	out, err := r.Replace(string(doc), with)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
