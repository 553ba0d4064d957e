package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const traceHead = "name: t\ndescription: d\nduration: 20s\n" // lines 1-3

// writeFile writes data at dir/name, making the folders.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	return p
}

// The library's files keep their rule: a path from the repository's root,
// never absolute, whether the file is embedded (named library/NAME.yaml)
// or read from scenarios/library on disk.
func TestLibraryTracePaths(t *testing.T) {
	root := filepath.Dir(absPath(t, "."))
	s, err := Parse("library/f.yaml", []byte(traceHead+"network: {down: {trace: testdata/traces/cellular-steady.down}}\n"), nil)
	require.NoError(t, err)
	require.Equal(t, &Trace{File: "testdata/traces/cellular-steady.down"}, s.Network.Down[0].Trace, "written as it is: the results name it so")
	p, err := TracePath(s.File, s.Network.Down[0].Trace.File)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "testdata", "traces", "cellular-steady.down"), p)

	for _, tc := range []struct{ body, want string }{
		{"network: {down: {trace: /tmp/x.down}}",
			`library/f.yaml:4: network.down.trace: "/tmp/x.down" is an absolute path: expected a path from the repository's root, or shared:NAME`},
		{"network: {down: {trace: testdata/traces/none.down}}",
			"library/f.yaml:4: network.down.trace: no trace file at " + filepath.Join(root, "testdata", "traces", "none.down") + ": a library file's paths count from the repository's root"},
		{"network: {down: {trace: ../traces/cellular-a.down}}", // from its own folder, it would be there
			"library/f.yaml:4: network.down.trace: no trace file at " + filepath.Join(filepath.Dir(root), "traces", "cellular-a.down") + ": a library file's paths count from the repository's root"},
	} {
		_, err := Parse("library/f.yaml", []byte(traceHead+tc.body+"\n"), nil)
		require.EqualError(t, err, tc.want)
	}

	// On disk, from anywhere: the file tells where the repository is.
	lib := absPath(t, "library")
	t.Chdir(t.TempDir())
	s, err = LoadFile(filepath.Join(lib, "cellular-steady.yaml"))
	require.NoError(t, err)
	require.Equal(t, "testdata/traces/cellular-steady.down", s.Network.Down[0].Trace.File)
	p, err = TracePath(s.File, s.Network.Down[0].Trace.File)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "testdata", "traces", "cellular-steady.down"), p)
}

// Outside the library a path counts from the scenario file's folder, or
// is absolute; the loader writes it absolute, so that the scenario names
// the same file from any working directory.
func TestOwnTracePaths(t *testing.T) {
	dir := t.TempDir()
	trace := writeFile(t, dir, "traces/a.down", "0\n10\n20\n1000\n")
	writeFile(t, dir, "s/a.yaml", traceHead+"network:\n  down: {trace: ../traces/a.down}\n  up: {trace: {file: "+trace+", offset: 500ms}}\n")
	// A folder of the user's own named library is not the library.
	writeFile(t, dir, "library/b.yaml", traceHead+"network: {down: {trace: {file: ../traces/a.down, loop: false}}}\n")
	writeFile(t, dir, "library/c.yaml", traceHead+"network: {down: {trace: traces/a.down}}\n")

	t.Chdir(dir)
	s, err := LoadFile(filepath.Join("s", "a.yaml"))
	require.NoError(t, err)
	require.Equal(t, &Trace{File: trace}, s.Network.Down[0].Trace)
	require.Equal(t, &Trace{File: trace, Offset: 500 * time.Millisecond}, s.Network.Up[0].Trace)
	s, err = LoadFile(filepath.Join("library", "b.yaml"))
	require.NoError(t, err)
	require.Equal(t, &Trace{File: trace, NoLoop: true}, s.Network.Down[0].Trace)
	_, err = LoadFile(filepath.Join("library", "c.yaml"))
	require.EqualError(t, err, filepath.Join("library", "c.yaml")+":4: network.down.trace: no trace file at "+
		filepath.Join(dir, "library", "traces", "a.down")+": a relative path counts from the scenario file's folder")

	// Elsewhere, the same file loads the same, and its written-back form
	// reads back anywhere.
	t.Chdir(filepath.Join(dir, "traces"))
	s, err = LoadFile(filepath.Join(dir, "s", "a.yaml"))
	require.NoError(t, err)
	require.Equal(t, trace, s.Network.Down[0].Trace.File)
	requireRoundTrip(t, s)

	// What is not a trace file.
	for _, tc := range []struct{ trace, want string }{
		{"traces", dir + "/traces is not a file: expected a mahimahi trace file"},
		{"/no/such/trace.down", "no trace file at /no/such/trace.down"},
		{"{file: traces/a.down, offset: 1s}", "1s out of range: expected an offset below the trace's length, 1s"},
		{"{file: traces/a.down, offset: -1s}", "-1s out of range: expected a duration of 0s or more"},
		{"{offset: 1s}", "missing required field: expected the trace file's path, or shared:NAME"},
		{`""`, "empty trace: expected a trace file's path, or shared:NAME, or a mapping like {file: traces/x.down, offset: 120s, loop: false}"},
		{"{file: traces/a.down, loop: no}", "no is not a boolean: expected true or false"},
	} {
		_, err := Parse(filepath.Join(dir, "f.yaml"), []byte(traceHead+"network: {down: {trace: "+tc.trace+"}}\n"), nil)
		require.ErrorContains(t, err, tc.want, tc.trace)
		require.Len(t, Errors(err), 1, "%s: %v", tc.trace, err)
	}
}

// A scenario built in Go counts its paths from the repository's root, as
// the library does, and Validate checks its traces as the loader does.
func TestTracesOfAScenarioBuiltInGo(t *testing.T) {
	s := &Scenario{Name: "go", Description: "d", Duration: time.Second, Network: Network{Down: []Phase{
		{Trace: &Trace{File: "testdata/traces/cellular-steady.down", Offset: 59 * time.Second}},
	}}}
	require.NoError(t, s.Validate())
	s.Network.Down[0].Trace.Offset = time.Minute
	require.ErrorContains(t, s.Validate(), "network.down[0].trace.offset: 1m out of range: expected an offset below the trace's length, 1m")
	s.Network.Down[0].Trace = &Trace{File: "testdata/traces/none.down"}
	require.ErrorContains(t, s.Validate(), "network.down[0].trace.file: no trace file at ")
	s.Network.Down[0].Trace = &Trace{}
	require.ErrorContains(t, s.Validate(), "network.down[0].trace.file: missing required field: expected the trace file's path, or shared:NAME")

	p, err := TracePath("", "/abs/x.down")
	require.NoError(t, err)
	require.Equal(t, "/abs/x.down", p)
	_, err = TracePath("", "shared:../x")
	require.EqualError(t, err, `"shared:../x" is not a shared trace: expected shared:NAME, a file name in ../shared/traces/mahimahi`)
}

// Shared traces are checked when the shared folder is there, in a module
// arranged for the test; without the folder the scenario loads, and the
// run says the folder is absent.
func TestSharedTraces(t *testing.T) {
	top := t.TempDir()
	mod := filepath.Join(top, "mod")
	writeFile(t, mod, "go.mod", "module x\n")
	t.Chdir(mod)
	load := func(name string) error {
		_, err := Parse("f.yaml", []byte(traceHead+"network: {down: {trace: shared:"+name+"}}\n"), nil)
		return err
	}

	require.NoError(t, load("Verizon-LTE-short.down"), "no shared folder: nothing to check")
	_, err := TracePath("f.yaml", "shared:Verizon-LTE-short.down")
	require.ErrorIs(t, err, ErrSharedAbsent)
	dir := filepath.Join(top, "shared", "traces", "mahimahi")
	require.ErrorContains(t, err, dir+" does not exist (the shared folder sits beside the repository)")

	writeFile(t, dir, "Verizon-LTE-short.down", "0\n5\n10\n")
	writeFile(t, dir, "Verizon-LTE-short.up", "0\n10\n")
	writeFile(t, dir, "README", "not a trace\n")
	writeFile(t, dir, "broken.down", "1\n-2\n")
	require.NoError(t, load("Verizon-LTE-short.down"))
	p, err := TracePath("f.yaml", "shared:Verizon-LTE-short.down")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "Verizon-LTE-short.down"), p)

	require.EqualError(t, load("Verizon-LTE-shrot.down"),
		`f.yaml:4: network.down.trace: no shared trace "Verizon-LTE-shrot.down" in `+dir+": did you mean Verizon-LTE-short.down?")
	require.EqualError(t, load("Verizon-LTE-short.do"),
		`f.yaml:4: network.down.trace: no shared trace "Verizon-LTE-short.do" in `+dir+": did you mean Verizon-LTE-short.down or Verizon-LTE-short.up?")
	require.EqualError(t, load("att.down"),
		`f.yaml:4: network.down.trace: no shared trace "att.down" in `+dir+" (it holds Verizon-LTE-short.down, Verizon-LTE-short.up, broken.down)")
	require.EqualError(t, load("broken.down"),
		"f.yaml:4: network.down.trace: malformed trace: "+filepath.Join(dir, "broken.down")+
			":2: timestamp -2 is negative; expected one timestamp per line: a non-negative whole number of milliseconds")
	_, err = TracePath("f.yaml", "shared:Verizon-LTE-shrot.down")
	require.False(t, errors.Is(err, ErrSharedAbsent), "a misspelled name is not an absent folder")

	// A shared trace is not written absolute: it names the folder beside
	// whichever checkout runs it.
	s, err := Parse("f.yaml", []byte(traceHead+"network: {down: {trace: {file: shared:Verizon-LTE-short.down, offset: 7ms}}}\n"), nil)
	require.NoError(t, err)
	require.Equal(t, &Trace{File: "shared:Verizon-LTE-short.down", Offset: 7 * time.Millisecond}, s.Network.Down[0].Trace)
}
