// Package reports owns the lab's report formats: the versioned JSON of a
// run (lab.ScenarioResult, "latencylab.result/v1") and of a suite of runs
// ("latencylab.suite/v1"), the committed baselines the nightly compares
// with ("latencylab.baseline/v1"), and the verdicts that say whether a
// scenario regressed, with their evidence. SCHEMA.md beside this file
// documents every format field by field.
//
// Readers refuse a file of another schema version with a message naming
// the file, the version found and the one this lab reads (ErrSchema),
// instead of misreading a renamed field or a changed unit.
package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/lab"
)

// SuiteSchema names the JSON form of Suite. Like lab.ResultSchema, a change
// an older reader would misread takes a new version; a new field does not.
const SuiteSchema = "latencylab.suite/v1"

// ErrSchema is wrapped by every error about a file's schema version: one
// this lab does not read, or none at all.
var ErrSchema = errors.New("unsupported schema")

// SchemaError is a file of a schema this lab does not read.
type SchemaError struct {
	File string // the file, or the name the data was given
	Got  string // the file's "schema" field; empty when it has none
	Want string // the schema this lab reads there
}

// Error names the file, the schema found and the one this lab reads, and
// says what to do about it.
func (e *SchemaError) Error() string {
	msg := fmt.Sprintf("%s: schema %q (this lab reads %q)", e.File, e.Got, e.Want)
	gotKind, gotV := splitSchema(e.Got)
	wantKind, wantV := splitSchema(e.Want)
	switch {
	case e.Got == "":
		return msg + ": no schema field, not a lab file or one from before schemas were versioned"
	case gotKind != wantKind || gotV < 0:
		return msg + ": another kind of file"
	case gotV > wantV:
		return msg + ": written by a newer lab; read it with that version"
	default:
		return msg + ": written by an older lab; rerun it with this one"
	}
}

// splitSchema splits "latencylab.suite/v1" into its kind and version
// number; the version is -1 when there is none to read.
func splitSchema(s string) (string, int) {
	kind, v, ok := strings.Cut(s, "/v")
	if !ok {
		return s, -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return kind, -1
	}
	return kind, n
}

// Is makes errors.Is(err, ErrSchema) hold.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// decode reads data as JSON of schema want into v, refusing another schema
// before looking at any other field: a field of another version could
// decode into the wrong meaning without a complaint. Unknown fields are
// accepted, since adding one does not change the version.
func decode(name string, data []byte, want string, v any) error {
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if head.Schema != want {
		return &SchemaError{File: name, Got: head.Schema, Want: want}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// writeJSON writes v indented, through a temporary file renamed into
// place, so that an interrupted write never leaves half a file where a
// good one was.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return writeFile(path, append(data, '\n'))
}

// writeFile writes data through a temporary file renamed into place.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ParseResult reads one run's JSON (lab.ResultSchema); name is used in
// errors.
func ParseResult(name string, data []byte) (*lab.ScenarioResult, error) {
	var r lab.ScenarioResult
	if err := decode(name, data, lab.ResultSchema, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ReadResult reads one run's JSON file.
func ReadResult(path string) (*lab.ScenarioResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseResult(path, data)
}

// WriteResult writes one run's JSON file.
func WriteResult(path string, r *lab.ScenarioResult) error {
	if r.Schema != lab.ResultSchema {
		return fmt.Errorf("%s: result of schema %q, this lab writes %q", path, r.Schema, lab.ResultSchema)
	}
	return writeJSON(path, r)
}

// Suite is a set of runs made together under one configuration: the
// nightly's runs of the library for its seeds, or one side of a
// comparison.
type Suite struct {
	// Schema is SuiteSchema.
	Schema string `json:"schema"`
	// Label names the configuration ("as-written", "old-pipeline").
	Label string `json:"label"`
	// Created is when the runs were made (wall clock).
	Created time.Time `json:"created"`
	// Commit is git describe of the lab's source, when there was a git.
	Commit string `json:"commit,omitempty"`
	// Seeds are the seeds every scenario ran with.
	Seeds []uint64 `json:"seeds"`
	// Config describes the configuration: the variant's changes, key by
	// key ("switches.old_capture_first": "true").
	Config map[string]string `json:"config,omitempty"`
	// Runs are the results, one per scenario and seed (schema
	// lab.ResultSchema each).
	Runs []*lab.ScenarioResult `json:"runs"`
}

// ParseSuite reads a suite's JSON; name is used in errors. Every run in it
// must be of lab.ResultSchema too.
func ParseSuite(name string, data []byte) (*Suite, error) {
	var s Suite
	if err := decode(name, data, SuiteSchema, &s); err != nil {
		return nil, err
	}
	for i, r := range s.Runs {
		if r == nil || r.Schema != lab.ResultSchema {
			got := ""
			if r != nil {
				got = r.Schema
			}
			return nil, &SchemaError{File: fmt.Sprintf("%s: runs[%d]", name, i), Got: got, Want: lab.ResultSchema}
		}
	}
	return &s, nil
}

// ReadSuite reads a suite's JSON file.
func ReadSuite(path string) (*Suite, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSuite(path, data)
}

// WriteSuite writes a suite's JSON file, setting its Schema. It is not
// indented: the library's runs for three seeds hold every frame of more
// than a hundred sessions, tens of megabytes that no one reads by eye.
func WriteSuite(path string, s *Suite) error {
	s.Schema = SuiteSchema
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeFile(path, append(data, '\n'))
}

// Describe is `git describe --always --dirty` of the work tree holding dir,
// or "" when there is no git or no repository: the commit is a
// convenience of the reports, not something to fail a run over.
func Describe(dir string) string {
	cmd := exec.Command("git", "describe", "--always", "--dirty")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return ""
	}
	return strings.TrimSpace(out.String())
}
