// Package reports owns the lab's report formats beyond one run's (package
// lab/result has that): the versioned JSON of a suite of runs
// ("latencylab.suite/v1"), the committed baselines the nightly compares
// with ("latencylab.baseline/v1"), and the verdicts that say whether a
// scenario regressed, with their evidence. SCHEMA.md beside this file
// documents every format field by field.
//
// Readers refuse a file of another schema version with a message naming
// the file, the version found and the one this lab reads (schemaver.ErrSchema),
// instead of misreading a renamed field or a changed unit.
package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/internal/schemaver"
	"github.com/nuvirahub/latencylab/lab/result"
)

// SuiteSchema names the JSON form of Suite. Like result.Version, a change
// an older reader would misread takes a new version; a new field does not.
const SuiteSchema = "latencylab.suite/v1"

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
	// result.Version each).
	Runs []*result.Run `json:"runs"`
}

// ParseSuite reads a suite's JSON; name is used in errors. Every run in it
// must be of result.Version too.
func ParseSuite(name string, data []byte) (*Suite, error) {
	var s Suite
	if err := schemaver.Decode(name, data, SuiteSchema, &s); err != nil {
		return nil, err
	}
	for i, r := range s.Runs {
		if r == nil || r.Schema != result.Version {
			got := ""
			if r != nil {
				got = r.Schema
			}
			return nil, &schemaver.SchemaError{File: fmt.Sprintf("%s: runs[%d]", name, i), Got: got, Want: result.Version}
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
	return schemaver.WriteFile(path, append(data, '\n'))
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
