package lab

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// findingsYAML is the project's own record of the write-ups' findings and
// how the lab stands to each; it travels with the code, so the suite and
// the reproduction table need nothing outside the repository.
//
//go:embed findings.yaml
var findingsYAML []byte

// FindingsFile is where the findings live in the repository, for messages.
const FindingsFile = "lab/findings.yaml"

// Class says how the lab stands to a finding.
type Class string

// The classes of the reproduction table.
const (
	// Reproduced: the figure or behaviour comes out of the mechanisms.
	Reproduced Class = "reproduced"
	// Calibrated: the documented figure is a model input.
	Calibrated Class = "calibrated"
	// Partly: mechanism and direction are there, the numbers differ.
	Partly Class = "partly"
	// NotReproduced: the lab does not show it, or shows the opposite.
	NotReproduced Class = "not reproduced"
)

// Classes lists the classes in the order the table counts them.
var Classes = []Class{Reproduced, Calibrated, Partly, NotReproduced}

// Evidence is a measurement outside the library's scenarios that bears on a
// finding: what was measured, and the command that measures it again.
type Evidence struct {
	Lab     string `yaml:"lab"`
	Command string `yaml:"command"`
}

// Finding is one documented behaviour: its ID, what the write-up documents
// (in the lab's words), its figures, and how the lab stands to it.
type Finding struct {
	ID         string `yaml:"id"`
	Documented string `yaml:"documented"`
	Figures    string `yaml:"figures"`
	// Class and Why: for calibrated, the parameter the figure is; for
	// partly and not reproduced, the gap and what decides it.
	Class    Class      `yaml:"class"`
	Why      string     `yaml:"why"`
	Evidence []Evidence `yaml:"evidence"`
}

var findingID = regexp.MustCompile(`^[NE][1-9][0-9]*$`)

// Findings returns every finding, in the write-ups' order.
func Findings() ([]Finding, error) {
	return parseFindingsYAML(FindingsFile, findingsYAML)
}

// parseFindingsYAML reads and checks a findings file: unknown fields,
// missing ones, a class outside Classes and a repeated ID are errors that
// name the file and the finding.
func parseFindingsYAML(name string, data []byte) ([]Finding, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var fs []Finding
	if err := dec.Decode(&fs); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var errs []error
	seen := map[string]bool{}
	for i, f := range fs {
		where := fmt.Sprintf("%s: finding %d (%s)", name, i+1, f.ID)
		switch {
		case !findingID.MatchString(f.ID):
			errs = append(errs, fmt.Errorf("%s: id %q: expected N or E and a number", where, f.ID))
		case seen[f.ID]:
			errs = append(errs, fmt.Errorf("%s: id %s appears twice", where, f.ID))
		}
		seen[f.ID] = true
		if f.Documented == "" || f.Figures == "" || f.Why == "" {
			errs = append(errs, fmt.Errorf("%s: documented, figures and why are required (figures \"—\" when there are none)", where))
		}
		if !slices.Contains(Classes, f.Class) {
			errs = append(errs, fmt.Errorf("%s: class %q: expected one of %q", where, f.Class, Classes))
		}
		for j, e := range f.Evidence {
			if e.Lab == "" || e.Command == "" {
				errs = append(errs, fmt.Errorf("%s: evidence %d: lab and command are required", where, j+1))
			}
		}
	}
	if len(fs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no findings", name))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return fs, nil
}

// SharedFinding is one row of the write-ups' own table (FINDINGS.md in the
// shared folder): the ID, the documented behaviour and its figures. The lab
// checks its record against it where the folder is present.
type SharedFinding struct {
	ID, Documented, Figures string
}

var findingRow = regexp.MustCompile(`^\|\s*([NE]\d+)\s*\|(.*)\|(.*)\|\s*$`)

// ParseSharedFindings reads the finding tables of FINDINGS.md, in their
// order.
func ParseSharedFindings(r io.Reader) ([]SharedFinding, error) {
	var out []SharedFinding
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := findingRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		out = append(out, SharedFinding{ID: m[1], Documented: strings.TrimSpace(m[2]), Figures: strings.TrimSpace(m[3])})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lab: no finding rows (| N1 | ... | ... |) found")
	}
	return out, nil
}

// SharedFindingsPath is where FINDINGS.md lies: in the shared folder beside
// the repository.
func SharedFindingsPath() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(root), "shared", "FINDINGS.md"), nil
}

// codecRows reads the reproduction rows of the codec lab's reference run
// (testdata/codecs/codecs.json, written by lab codecs), by finding ID. The
// file is read as plain JSON so that lab need not import the codec lab.
func codecRows(root string) (map[string]string, string, error) {
	path := filepath.Join(root, CodecReference)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	var rep struct {
		Started string `json:"started"`
		Rows    []struct {
			ID  string `json:"id"`
			Lab string `json:"lab"`
		} `json:"reproduction"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, "", fmt.Errorf("%s: %w", CodecReference, err)
	}
	rows := map[string]string{}
	for _, r := range rep.Rows {
		rows[r.ID] = r.Lab
	}
	if len(rows) == 0 {
		return nil, "", fmt.Errorf("%s: no reproduction rows", CodecReference)
	}
	return rows, strings.SplitN(rep.Started, "T", 2)[0], nil
}

// CodecReference is the codec lab's reference run, whose rows the
// reproduction table cites for the E findings.
const CodecReference = "testdata/codecs/codecs.json"
