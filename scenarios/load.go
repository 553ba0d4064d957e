package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultsFile is the name of the file, beside the scenarios, whose values
// every scenario of the folder inherits.
const DefaultsFile = "defaults.yaml"

// library is the scenario library, compiled into every binary that loads
// it so that `go test ./lab` and the command line need no files beside
// them.
//
//go:embed library
var library embed.FS

// Library loads the embedded scenario library (scenarios/library/*.yaml
// with scenarios/library/defaults.yaml). Files are named "library/x.yaml".
func Library() ([]*Scenario, error) {
	return LoadDir(library, "library")
}

// LibraryDefaults is the embedded library's defaults file
// (scenarios/library/defaults.yaml): the defaults of a user's scenario
// file whose folder has none, where no checkout holds the file.
func LibraryDefaults() []byte {
	data, err := library.ReadFile("library/" + DefaultsFile)
	if err != nil {
		panic("scenarios: the embedded library has no " + DefaultsFile + ": " + err.Error())
	}
	return data
}

// Parse reads one scenario from data, with the defaults file's contents
// (nil or empty for none) merged beneath it: mappings merge key by key, a
// scenario's list or scalar replaces the defaults' one, and null removes a
// default. file names the scenario in errors and in Scenario.File; errors
// in values that came from the defaults name defaults.yaml in the same
// folder as file.
//
// file is also where the scenario's trace paths count from (see
// Trace.File): the folder of file, taken from the working directory, or
// the repository's root for a library file (library/NAME.yaml, as Library
// names them). Every trace is opened and parsed; a relative path of a file
// outside the library is written absolute in the Scenario.
//
// Every mistake is reported, each an *Error naming file, line and field,
// joined with errors.Join in order of line; on error the Scenario is nil.
func Parse(file string, data, defaults []byte) (*Scenario, error) {
	return parse(file, data, path.Join(path.Dir(filepath.ToSlash(file)), DefaultsFile), defaults)
}

func parse(file string, data []byte, defaultsFile string, defaults []byte) (*Scenario, error) {
	s, _, err := decodeFile(file, data, defaultsFile, defaults)
	return s, err
}

// decodeFile is parse, also returning the decoder for the tests to see
// which keys it read.
func decodeFile(file string, data []byte, defaultsFile string, defaults []byte) (*Scenario, *decoder, error) {
	errs := &errorList{main: file}
	root := readDocument(file, data, errs, false)
	under := readDefaults(defaultsFile, defaults, errs)
	if root == nil || len(errs.list) > 0 {
		// Without its file, or without the defaults it counts on, the
		// scenario would only show consequences: missing fields.
		return nil, nil, errs.err()
	}
	d := newDecoder(file, defaultsFile, under, errs)
	s := d.scenario(merge(root, under))
	// A real encoder's frames are its own bytes: the frame sizes a defaults
	// file gives every scenario beneath it (the library's budget) do not
	// apply to it, and its scenario need not take them away. Written in
	// the scenario's own file, they are a mistake the validation reports.
	if s.Agent.FrameSizes != "" && IsRealPreset(s.Agent.Encoder) && d.inherited("agent.frame_sizes") {
		s.Agent.FrameSizes = ""
	}
	validate(s, d.report)
	if err := errs.err(); err != nil {
		return nil, d, err
	}
	absoluteTraces(s)
	absoluteRecordings(s)
	return s, d, nil
}

// readDefaults reads a defaults file. It must be a mapping, and it may not
// name a scenario: a name inherited by several would clash.
func readDefaults(file string, data []byte, errs *errorList) *yaml.Node {
	root := readDocument(file, data, errs, true)
	if root == nil {
		return nil
	}
	r := resolve(root)
	if r.Kind != yaml.MappingNode {
		errs.add(Error{File: file, Line: root.Line, Msg: "expected a mapping of defaults for the scenario keys, got " + describe(root)})
		return nil
	}
	for i := 0; i+1 < len(r.Content); i += 2 {
		if k, _ := keyName(r.Content[i]); k == "name" {
			errs.add(Error{File: file, Line: r.Content[i].Line, Field: "name",
				Msg: "a name cannot be a default: every scenario names itself"})
		}
	}
	return root
}

// LoadFile loads the scenario file at path, with the defaults.yaml of its
// folder when there is one.
func LoadFile(file string) (*Scenario, error) {
	if filepath.Base(file) == DefaultsFile {
		return nil, &Error{File: file, Msg: DefaultsFile + " holds the folder's defaults, not a scenario"}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	defaultsFile := filepath.Join(filepath.Dir(file), DefaultsFile)
	defaults, err := os.ReadFile(defaultsFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return parse(file, data, defaultsFile, defaults)
}

// LoadDir loads every *.yaml file of dir in fsys (not its subfolders),
// with dir/defaults.yaml beneath each. Files are named dir/x.yaml, and
// their relative trace paths count from dir taken from the working
// directory (as for os.DirFS(".")), or from the repository's root for the
// embedded library (see Parse). Names
// must be unique: a second scenario of the same name is an error naming
// both files. A *.yml file is an error rather than silently skipped.
//
// The scenarios that loaded are returned, in file name order, even when
// others did not; the error joins every file's errors.
func LoadDir(fsys fs.FS, dir string) ([]*Scenario, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	defaultsFile := path.Join(dir, DefaultsFile)
	defaults, err := fs.ReadFile(fsys, defaultsFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var (
		out    []*Scenario
		errs   []error
		seen   = map[string]bool{}
		byName = map[string]string{} // name -> "file:line"
	)
	for _, e := range entries {
		name := e.Name()
		file := path.Join(dir, name)
		switch {
		case e.IsDir() || name == DefaultsFile:
			continue
		case strings.HasSuffix(name, ".yml"):
			errs = append(errs, &Error{File: file, Msg: "scenario files end in .yaml: rename it, or it is not loaded"})
			continue
		case !strings.HasSuffix(name, ".yaml"):
			continue
		}
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s, err := parse(file, data, defaultsFile, defaults)
		for _, e := range Errors(err) {
			// An error in the defaults shows in every scenario: say it once.
			if key := e.Error(); !seen[key] {
				seen[key] = true
				errs = append(errs, e)
			}
		}
		if s == nil {
			continue
		}
		line := nameLine(data)
		if first, dup := byName[s.Name]; dup {
			errs = append(errs, &Error{File: file, Line: line, Field: "name",
				Msg: fmt.Sprintf("duplicate name %s: %s has it too", s.Name, first)})
			continue
		}
		byName[s.Name] = fmt.Sprintf("%s:%d", file, line)
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}

// nameLine finds the line of a file's name key, for the duplicate-name
// error (the file parsed, so it is there).
func nameLine(data []byte) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) > 0 {
		root := resolve(doc.Content[0])
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k, _ := keyName(root.Content[i]); k == "name" {
				return root.Content[i].Line
			}
		}
	}
	return 1
}

// String summarises s in a line, for logs and test names: name, file,
// duration, findings and groups.
func (s *Scenario) String() string {
	parts := []string{s.Name, "(" + s.File + ")", FormatDuration(s.Duration)}
	if len(s.Findings) > 0 {
		parts = append(parts, "findings "+strings.Join(s.Findings, ","))
	}
	if len(s.Groups) > 0 {
		parts = append(parts, "groups "+strings.Join(slices.Sorted(slices.Values(s.Groups)), ","))
	}
	return strings.Join(parts, " ")
}
