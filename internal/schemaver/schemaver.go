// Package schemaver reads and writes the lab's versioned JSON files (a
// run's result, a suite, a baseline): each has a "schema" field such as
// "latencylab.result/v1", and a reader refuses a file of another version
// with a message naming the file, the version found and the one it reads
// (ErrSchema), instead of misreading a renamed field or a changed unit.
// Writes go through a temporary file renamed into place.
package schemaver

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

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

// Decode reads data as JSON of schema want into v, refusing another schema
// before looking at any other field: a field of another version could
// decode into the wrong meaning without a complaint. Unknown fields are
// accepted, since adding one does not change the version.
func Decode(name string, data []byte, want string, v any) error {
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

// WriteJSON writes v indented, through a temporary file renamed into
// place, so that an interrupted write never leaves half a file where a
// good one was.
func WriteJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return WriteFile(path, append(data, '\n'))
}

// WriteFile writes data through a temporary file renamed into place.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
