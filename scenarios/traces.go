package scenarios

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/netem"
)

// The trace files a scenario replays: where a trace's path counts from,
// and the check that every trace a scenario names is there and parses.

// SharedPrefix marks a trace of the shared folder: shared:NAME is the file
// NAME in ../shared/traces/mahimahi, beside the repository.
const SharedPrefix = "shared:"

// ErrSharedAbsent is why a shared trace cannot be found when the shared
// folder itself is absent. It holds recordings that are not the project's
// to ship, so a checkout may lack it: the loader then leaves shared traces
// unchecked, and the lab reports a run that needs one as skipped.
var ErrSharedAbsent = errors.New("shared trace folder absent")

// baseKind is the rule a scenario's trace paths follow.
type baseKind int

const (
	// fromRoot: a scenario built in Go, without a File. Paths count from
	// the repository's root, as the library's, and may be absolute.
	fromRoot baseKind = iota
	// fromLibrary: one of the library's files. Paths count from the
	// repository's root, so that an embedded file reads the same as the
	// file on disk, and are never absolute.
	fromLibrary
	// fromFile: any other file. Paths count from the file's own folder,
	// or are absolute.
	fromFile
)

// traceBase is where the trace paths of one scenario file count from.
type traceBase struct {
	kind baseKind
	// dir is the folder relative paths count from, absolute ("" when it
	// is the repository's root and that was not found).
	dir string
	// root is the repository's root, for shared traces, and rootErr why
	// it was not found.
	root    string
	rootErr error
}

// baseOf tells the rule for the scenario file named file (Scenario.File).
// A file is the library's when it lies in the repository's
// scenarios/library folder, or when it is named library/NAME.yaml, as
// Library names the embedded files (and the trip to a worker or an exact
// instance keeps the name), and no such file is on disk: a user's own
// library/NAME.yaml, relative to the working directory, is a file of
// theirs.
func baseOf(file string) traceBase {
	root, rootErr := modroot.Find()
	if file == "" {
		return traceBase{kind: fromRoot, dir: root, root: root, rootErr: rootErr}
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		dir = filepath.Dir(file)
	}
	if r, ok := libraryRoot(dir); ok {
		return traceBase{kind: fromLibrary, dir: r, root: r}
	}
	if path.Dir(filepath.ToSlash(file)) == "library" {
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return traceBase{kind: fromLibrary, dir: root, root: root, rootErr: rootErr}
		}
	}
	return traceBase{kind: fromFile, dir: dir, root: root, rootErr: rootErr}
}

// libraryRoot returns the repository's root when dir (absolute) is its
// scenarios/library folder: found from the file itself, so that a library
// file read from disk keeps its rule whatever the working directory.
func libraryRoot(dir string) (string, bool) {
	if filepath.Base(dir) != "library" || filepath.Base(filepath.Dir(dir)) != "scenarios" {
		return "", false
	}
	root := filepath.Dir(filepath.Dir(dir))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", false
	}
	return root, true
}

// rule says where a relative path counts from, for the message on a
// missing file.
func (b traceBase) rule() string {
	switch b.kind {
	case fromFile:
		return "a relative path counts from the scenario file's folder"
	case fromLibrary:
		return "a library file's paths count from the repository's root"
	}
	return "a relative path counts from the repository's root"
}

// TracePath finds the file of the trace ref (a trace's File) that the
// scenario file file (its Scenario.File, "" for one built in Go) names:
// shared:NAME in the shared folder, beside the repository's root found
// from the working directory (or, for a library file on disk, from the
// file); a path in a library file from the repository's root; a path in
// any other file from the file's own folder, or as it is when absolute. A
// scenario built in Go counts its paths from the repository's root, as
// the library does, and may give absolute ones.
//
// When the shared folder is absent, the error wraps ErrSharedAbsent. It
// checks only that a shared trace is there: the loader also checks that
// the file parses.
func TracePath(file, ref string) (string, error) {
	return baseOf(file).locate(ref)
}

// locate is TracePath for a file whose rule is b.
func (b traceBase) locate(ref string) (string, error) {
	if msg := b.checkRef(ref); msg != "" {
		return "", errors.New(msg)
	}
	if name, ok := strings.CutPrefix(ref, SharedPrefix); ok {
		if b.rootErr != nil {
			return "", fmt.Errorf("the shared folder beside the repository: %w", b.rootErr)
		}
		dir := filepath.Join(filepath.Dir(b.root), "shared", "traces", "mahimahi")
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s does not exist (the shared folder sits beside the repository)", ErrSharedAbsent, dir)
		}
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return "", errors.New(noSharedTrace(dir, name))
		}
		return p, nil
	}
	if filepath.IsAbs(ref) {
		return ref, nil
	}
	if b.dir == "" {
		return "", fmt.Errorf("trace %s counts from the repository's root: %w", ref, b.rootErr)
	}
	return filepath.Join(b.dir, filepath.FromSlash(ref)), nil
}

// checkRef says what is wrong with the way a trace is written, whatever
// the files on disk: a shared name that is not a file name, an absolute
// path in a library file.
func (b traceBase) checkRef(ref string) string {
	if name, ok := strings.CutPrefix(ref, SharedPrefix); ok {
		if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
			return fmtf("%q is not a shared trace: expected shared:NAME, a file name in ../shared/traces/mahimahi", ref)
		}
		return ""
	}
	if b.kind == fromLibrary && (filepath.IsAbs(ref) || path.IsAbs(ref) || strings.HasPrefix(ref, `\`)) {
		return fmtf("%q is an absolute path: expected a path from the repository's root, or shared:NAME", ref)
	}
	return ""
}

// noSharedTrace is the message for a shared trace that is not in the
// shared folder, which is there: a misspelled name, with the names near
// it.
func noSharedTrace(dir, name string) string {
	msg := fmtf("no shared trace %q in %s", name, dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return msg
	}
	type near struct {
		name string
		d    int
	}
	var names []string
	var close []near
	limit := max(2, len(name)/5)
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "README") || strings.HasSuffix(n, ".md") {
			continue
		}
		names = append(names, n)
		if d := editDistance(strings.ToLower(name), strings.ToLower(n)); d <= limit {
			close = append(close, near{n, d})
		}
	}
	slices.SortStableFunc(close, func(a, b near) int { return cmp.Compare(a.d, b.d) })
	switch {
	case len(close) > 0:
		var guesses []string
		for _, c := range close[:min(3, len(close))] {
			guesses = append(guesses, c.name)
		}
		return msg + ": did you mean " + orList(guesses) + "?"
	case len(names) == 0:
		return msg + " (it holds no trace)"
	case len(names) <= 12:
		return msg + " (it holds " + list(names) + ")"
	}
	return fmtf("%s (it holds %d traces)", msg, len(names))
}

// traceCheck loads the traces of one scenario once each, for validate.
//
// It does nothing until the scenario names a trace: an exact session's
// result depends on what its instance did before it, down to the maps
// made (each draws from the runtime's fixed random stream, which select
// statements share) and the garbage collector's timing (see
// docs/determinism.md), so a scenario without traces is loaded with the
// work it was loaded with before traces were checked.
type traceCheck struct {
	file   string
	base   *traceBase
	loaded map[string]loadedTrace
}

// loadedTrace is a trace the check loaded: its length, or what is wrong
// with it; neither when it could not be checked (the shared folder or the
// repository's root is not there: the run says so).
type loadedTrace struct {
	length time.Duration
	msg    string
}

func newTraceCheck(file string) *traceCheck { return &traceCheck{file: file} }

// rule is the scenario's rule for its trace paths, found on first use.
func (c *traceCheck) rule() traceBase {
	if c.base == nil {
		b := baseOf(c.file)
		c.base = &b
	}
	return *c.base
}

// load finds and parses the trace ref with netem's parser, the one the run
// uses.
func (c *traceCheck) load(ref string) loadedTrace {
	if l, ok := c.loaded[ref]; ok {
		return l
	}
	l := c.open(ref)
	if c.loaded == nil {
		c.loaded = map[string]loadedTrace{}
	}
	c.loaded[ref] = l
	return l
}

// parsed keeps what parsing each trace file gave, by path, while the file
// is unchanged (same size and modification time): every Library call
// checks the library's traces, a quarter of a million lines.
var parsed sync.Map // path -> parsedTrace

type parsedTrace struct {
	size int64
	mod  time.Time
	l    loadedTrace
}

func (c *traceCheck) open(ref string) loadedTrace {
	p, err := c.rule().locate(ref)
	switch {
	case errors.Is(err, ErrSharedAbsent), errors.Is(err, modroot.ErrNotFound):
		return loadedTrace{}
	case err != nil:
		return loadedTrace{msg: err.Error()}
	}
	// A device or a pipe would block the read: only a regular file is a
	// trace.
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) && filepath.IsAbs(ref):
		return loadedTrace{msg: "no trace file at " + p}
	case errors.Is(err, fs.ErrNotExist):
		return loadedTrace{msg: fmtf("no trace file at %s: %s", p, c.rule().rule())}
	case err != nil:
		return loadedTrace{msg: "cannot read the trace: " + err.Error()}
	case !fi.Mode().IsRegular():
		return loadedTrace{msg: fmtf("%s is not a file: expected a mahimahi trace file", p)}
	}
	if v, ok := parsed.Load(p); ok {
		if pt := v.(parsedTrace); pt.size == fi.Size() && pt.mod.Equal(fi.ModTime()) {
			return pt.l
		}
	}
	var l loadedTrace
	tr, err := netem.LoadTrace(p)
	var te *netem.TraceError
	var pe *fs.PathError
	switch {
	case errors.As(err, &te):
		l.msg = "malformed trace: " + te.Error()
	case errors.As(err, &pe):
		l.msg = "cannot read the trace: " + pe.Error()
	case err != nil:
		l.msg = "cannot read the trace: " + err.Error()
	default:
		l.length = tr.Period()
	}
	parsed.Store(p, parsedTrace{fi.Size(), fi.ModTime(), l})
	return l
}

// check reports what is wrong with the trace t written at p: its path,
// its file, and an offset not below the trace's length.
func (c *traceCheck) check(v validator, p string, t *Trace) {
	v.nonNeg(p+".offset", t.Offset)
	if t.File == "" {
		v.rep(p+".file", nil, missing("trace", "file"))
		return
	}
	if msg := c.rule().checkRef(t.File); msg != "" {
		v.rep(p+".file", nil, msg)
		return
	}
	l := c.load(t.File)
	switch {
	case l.msg != "":
		v.rep(p+".file", nil, l.msg)
	case l.length > 0 && t.Offset >= l.length:
		v.errf(p+".offset", []string{p + ".file"}, "%s out of range: expected an offset below the trace's length, %s",
			FormatDuration(t.Offset), FormatDuration(l.length))
	}
}

// absoluteTraces writes the relative trace paths of a scenario loaded from
// a file outside the library as absolute ones. The scenario travels as
// YAML to worker processes and to exact (WebAssembly) instances, whose
// working directory may differ from the loader's (a test may change it
// after the instance's host opened): an absolute path names the same file
// in all of them, with nothing else to carry. The library's paths stay as
// written (from the repository's root, the same in every process of the
// checkout), so that its results name them as its files do.
func absoluteTraces(s *Scenario) {
	absolute := absoluteIn(s)
	for _, phases := range [][]Phase{s.Network.Up, s.Network.Down} {
		for _, ph := range phases {
			if ph.Trace != nil {
				ph.Trace.File = absolute(ph.Trace.File)
			}
		}
	}
}

// absoluteIn returns what a file's path ref, as the scenario s writes it,
// is absolutely: from the folder of a file outside the library; as written
// when it is absolute, shared: or empty, or when s is a library file (whose
// paths count from the repository's root) or built in Go. The scenario's
// base is found on first use, as traceCheck's.
func absoluteIn(s *Scenario) func(ref string) string {
	var b *traceBase
	return func(ref string) string {
		if ref == "" || strings.HasPrefix(ref, SharedPrefix) || filepath.IsAbs(ref) {
			return ref
		}
		if b == nil {
			base := baseOf(s.File)
			b = &base
		}
		if b.kind != fromFile {
			return ref
		}
		return filepath.Join(b.dir, filepath.FromSlash(ref))
	}
}
