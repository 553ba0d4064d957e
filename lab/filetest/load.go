// Package filetest runs scenario files that users write as tests: the
// loading and the judging behind `lab test FILE|DIR...` and
// `go test ./lab -run Files -args -scenarios DIR`, so that the two load the
// same files the same way and call the same session a pass or a failure,
// with the same message.
//
// Loading: a folder is every *.yaml file in it but defaults.yaml; each file
// has the defaults named, or its folder's defaults.yaml, or the library's;
// every mistake of every file is reported at once. Judging: a session is a
// pass, a failure (an expectation not met), an error (it did not run to its
// end) or skipped (it replays a trace of ../shared, which is absent), and
// each expectation is a named case with a message that gives the file and
// line, the measure, the window, the bound and the value, for the terminal,
// go test and JUnit XML alike.
//
// Running the sessions is the caller's: lab test runs them exact or in
// worker processes (packages lab/exact, lab/jobs), go test in bubbles of
// its own.
package filetest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/scenarios"
)

// LibraryDefaults is the library's defaults file, relative to the module's
// root: the defaults of a scenario file whose folder has none.
const LibraryDefaults = "scenarios/library/defaults.yaml"

// Load loads the scenario files named and every *.yaml file but
// defaults.yaml of the folders named (not their subfolders), in the order
// given, a folder's files in name order; a file named twice loads once.
//
// defaults, when not empty, names the defaults file of every scenario;
// otherwise each file has its folder's defaults.yaml, or, when its folder
// has none, the library's (LibraryDefaults).
//
// Every mistake of every file is reported at once: the error joins one
// *scenarios.Error per mistake (scenarios.Errors takes them apart), each
// naming its file and line as the loader does, a mistake of a defaults
// file once however many scenarios inherit it. The scenarios that loaded
// are returned even when others did not. Names must be unique, since
// results are named after them.
func Load(paths []string, defaults string) ([]*scenarios.Scenario, error) {
	if len(paths) == 0 {
		return nil, errors.New("no scenario file or folder named")
	}
	l := loader{defaults: map[string][]byte{}, seen: map[string]bool{}, byName: map[string]string{}}
	if defaults != "" {
		data, err := os.ReadFile(defaults)
		if err != nil {
			return nil, &scenarios.Error{File: defaults, Msg: "the defaults file does not open: " + reason(err)}
		}
		l.defaults[defaults] = data
	}
	var out []*scenarios.Scenario
	loaded := map[string]bool{}
	for _, file := range l.expand(paths) {
		if file.err != nil {
			l.add(file.err)
			continue
		}
		if loaded[filepath.Clean(file.path)] {
			continue
		}
		loaded[filepath.Clean(file.path)] = true
		if sc := l.load(file.path, defaults); sc != nil {
			out = append(out, sc)
		}
	}
	return out, errors.Join(l.errs...)
}

// file is a scenario file to load, or why a path named is none.
type file struct {
	path string
	err  error
}

// loader gathers what Load found.
type loader struct {
	defaults map[string][]byte // read defaults files by path
	errs     []error           // every mistake, in order
	seen     map[string]bool   // mistakes reported, to say each once
	byName   map[string]string // scenario name -> "file:line"
}

func (l *loader) add(err error) {
	for _, e := range scenarios.Errors(err) {
		if key := e.Error(); !l.seen[key] {
			l.seen[key] = true
			l.errs = append(l.errs, e)
		}
	}
	if len(scenarios.Errors(err)) == 0 && err != nil {
		l.errs = append(l.errs, err)
	}
}

// expand turns the paths into scenario files, and the paths that are
// neither into mistakes, in the order given.
func (l *loader) expand(paths []string) []file {
	var files []file
	bad := func(p, msg string) { files = append(files, file{err: &scenarios.Error{File: p, Msg: msg}}) }
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			bad(p, reason(err)+": expected a scenario file or a folder of them")
			continue
		}
		if !st.IsDir() {
			if filepath.Base(p) == scenarios.DefaultsFile {
				bad(p, scenarios.DefaultsFile+" holds the folder's defaults, not a scenario: name the scenario files or their folder")
				continue
			}
			files = append(files, file{path: p})
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			bad(p, reason(err))
			continue
		}
		found := false
		for _, e := range entries {
			name := e.Name()
			switch {
			case e.IsDir() || name == scenarios.DefaultsFile:
			case strings.HasSuffix(name, ".yml"):
				// As the library's loader says: a file the user
				// meant to run must not be left out silently.
				bad(filepath.Join(p, name), "scenario files end in .yaml: rename it, or it is not loaded")
				found = true
			case strings.HasSuffix(name, ".yaml"):
				files = append(files, file{path: filepath.Join(p, name)})
				found = true
			}
		}
		if !found {
			bad(p, "no scenario file (*.yaml but defaults.yaml) in this folder")
		}
	}
	return files
}

// load loads one scenario file with its defaults; nil when it has
// mistakes, which are added.
func (l *loader) load(file, defaults string) *scenarios.Scenario {
	data, err := os.ReadFile(file)
	if err != nil {
		l.add(&scenarios.Error{File: file, Msg: reason(err)})
		return nil
	}
	defaultsFile, defaultsData, err := l.defaultsFor(file, defaults)
	if err != nil {
		l.add(err)
		return nil
	}
	sc, err := scenarios.Parse(file, data, defaultsData)
	// Parse names a mistake in the defaults as the scenario folder's
	// defaults.yaml; when the defaults came from elsewhere (-defaults, the
	// library's), name the file they are in.
	assumed := path.Join(path.Dir(filepath.ToSlash(file)), scenarios.DefaultsFile)
	for _, e := range scenarios.Errors(err) {
		if e.File == assumed && filepath.ToSlash(defaultsFile) != assumed {
			e.File = defaultsFile
		}
	}
	l.add(err)
	if sc == nil {
		return nil
	}
	line := nameLine(data)
	if first, dup := l.byName[sc.Name]; dup {
		l.add(&scenarios.Error{File: file, Line: line, Field: "name",
			Msg: fmt.Sprintf("duplicate name %s: %s has it too (results are named after their scenario)", sc.Name, first)})
		return nil
	}
	l.byName[sc.Name] = fmt.Sprintf("%s:%d", file, line)
	return sc
}

// defaultsFor returns the defaults file of a scenario file and its
// contents: the one named, else the folder's, else the library's.
func (l *loader) defaultsFor(file, named string) (string, []byte, error) {
	if named != "" {
		return named, l.defaults[named], nil
	}
	candidate := filepath.Join(filepath.Dir(file), scenarios.DefaultsFile)
	if data, ok := l.defaults[candidate]; ok {
		return candidate, data, nil
	}
	data, err := os.ReadFile(candidate)
	switch {
	case err == nil:
		l.defaults[candidate] = data
		return candidate, data, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", nil, &scenarios.Error{File: candidate, Msg: reason(err)}
	}
	lib, err := libraryDefaults()
	if errors.Is(err, modroot.ErrNotFound) {
		// Outside the checkout (a lab binary in a team's repository):
		// the copy built into the lab, named as the checkout's file.
		lib = LibraryDefaults
		l.defaults[lib] = scenarios.LibraryDefaults()
	} else if err != nil {
		return "", nil, &scenarios.Error{File: file, Msg: "its folder has no " + scenarios.DefaultsFile + " and the library's does not open: " + err.Error()}
	}
	if data, ok := l.defaults[lib]; ok {
		return lib, data, nil
	}
	data, err = os.ReadFile(lib)
	if err != nil {
		return "", nil, &scenarios.Error{File: file, Msg: "its folder has no " + scenarios.DefaultsFile + " and the library's does not open: " + reason(err)}
	}
	l.defaults[lib] = data
	return lib, data, nil
}

// libraryDefaults is the library's defaults file. It is read from the
// checkout, where lab test and go test run (the exact sessions' guest and
// the worker processes are built from it), so that an edit of it counts
// at once; outside one it is modroot.ErrNotFound, and the copy built into
// the lab (scenarios.LibraryDefaults) counts. The path is made relative to the working
// directory when it can be, so that a message names it as a user would.
func libraryDefaults() (string, error) {
	root, err := modroot.Find()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, filepath.FromSlash(LibraryDefaults))
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil {
			return rel, nil
		}
	}
	return p, nil
}

// reason is an operating-system error without the operation and path the
// message already names.
func reason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or folder"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// nameLine finds the line of a file's name key, for the duplicate-name
// error (the file parsed, so it is there).
func nameLine(data []byte) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) > 0 {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "name" {
				return root.Content[i].Line
			}
		}
	}
	return 1
}
