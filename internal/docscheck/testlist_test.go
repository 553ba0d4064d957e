package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/modroot"
)

// GoTool lists a package's tests from its source as its test binary's
// -test.list would (TestDocumentedTestCommandsRun builds no binary to
// list): the same names, in the same order, for a few patterns, over a
// made-up module that holds the go command's edge cases (names with a
// lower-case rune after the prefix, a non-ASCII one, TestMain taking a
// *testing.T, a method, testing imported under another name, an external
// test package, examples with, with empty and without output, files a
// build tag or cgo selects) and three of the repository's packages with
// tests, benchmarks, fuzz tests and an example; a test with the wrong
// signature, which the go command refuses to build, is an error naming
// it. Each pattern costs the binary a run and each package a link.
func TestSourceListingMatchesTestList(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds test binaries to compare their -test.list with the source's (run without -short, as CI does)")
	}
	mod := t.TempDir()
	write := func(name, src string) {
		p := filepath.Join(mod, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	// What the examples are of, for go vet (go test -c runs it).
	write("p/p.go", "package p\n\nfunc WithOutput() {}\nfunc NoOutput()   {}\nfunc Empty()      {}\nfunc ish()        {}\n")
	// The file of edge cases is kept in testdata, not in a string here:
	// make fuzz finds fuzz targets by their "func Fuzz" lines, and its
	// FuzzF (not a fuzz target of this package) would be fuzzed.
	edges, err := os.ReadFile(filepath.Join("testdata", "madeup", "p", "a_test.go"))
	require.NoError(t, err)
	write("p/a_test.go", string(edges))
	write("p/main_test.go", `package p

import "testing"

func TestMain(t *testing.T) {}
`)
	write("p/alias_test.go", `package p

import tt "testing"

func TestAlias(t *tt.T)       {}
func BenchmarkAlias(b *tt.B) {}
`)
	write("p/x_test.go", `package p_test

import (
	"fmt"
	"testing"
)

func TestX(t *testing.T)      {}
func BenchmarkX(b *testing.B) {}

func Example() {
	fmt.Println("p")
	// Output: p
}
`)
	write("p/extra_test.go", "//go:build extra\n\npackage p\n\nimport \"testing\"\n\nfunc TestExtra(t *testing.T) {}\n")
	write("p/cgo_test.go", "//go:build cgo\n\npackage p\n\nimport \"testing\"\n\nfunc TestCgo(t *testing.T) {}\n")
	write("p/nocgo_test.go", "//go:build !cgo\n\npackage p\n\nimport \"testing\"\n\nfunc TestNoCgo(t *testing.T) {}\n")
	write("p/other_windows_test.go", "package p\n\nimport \"testing\"\n\nfunc TestWindows(t *testing.T) {}\n")
	write("notests/n.go", "package notests\n")
	write("wrongtest/w_test.go", "package wrongtest\n\nimport \"testing\"\n\nfunc TestW(b *testing.B) {}\n")
	write("wrongbench/w_test.go", "package wrongbench\n\nimport \"testing\"\n\nfunc BenchmarkW(t *testing.T, n int) {}\n")
	write("generic/g_test.go", "package generic\n\nimport \"testing\"\n\nfunc TestG[T any](t *testing.T) {}\n")
	write("wrongmain/m_test.go", "package wrongmain\n\nimport \"testing\"\n\nfunc TestMain(m *testing.T, n int) {}\n")

	root, err := modroot.Find()
	require.NoError(t, err)
	type pkgCase struct {
		g        *GoTool
		b        Build
		pkg      string
		patterns []string
	}
	made := &GoTool{Root: mod, Dir: t.TempDir()}
	repo := &GoTool{Root: root, Dir: t.TempDir()}
	some := []string{".", "^(TestA|Test1|TestMain)$|Fuzz|Example_", "Bench|Alias", "^$", "("}
	cases := []pkgCase{
		{made, Build{}, "./p", some},
		{made, Build{Tags: "extra"}, "./p", []string{".", "Extra"}},
		{made, Build{Env: "CGO_ENABLED=0"}, "./p", []string{".", "Cgo"}},
		{made, Build{}, "./notests", []string{".", "("}},
		{repo, Build{}, "./internal/wire", []string{".", "^Fuzz|Round"}},
		{repo, Build{}, "./agent/codec/dirty", []string{".", "^Benchmark|^Test[A-M]"}},
		{repo, Build{}, "./scenarios", []string{".", "^(TestLoad|Example)|Fuzz", "("}},
	}
	// The binaries build side by side first (listBinary reports a failure).
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Go(func() { _ = c.g.build(c.b, []string{c.pkg}) })
	}
	wg.Wait()
	for _, c := range cases {
		ctxt, err := c.g.context(c.b)
		require.NoError(t, err)
		require.NotNil(t, ctxt, "%v is listed from source", c.b)
		for _, pat := range c.patterns {
			want, wantErr := c.g.listBinary(c.b, c.pkg, pat)
			got, gotErr := c.g.List(c.b, c.pkg, pat)
			require.Equal(t, wantErr != nil, gotErr != nil, "%s %v -test.list %q: the binary's error %v, the source's %v", c.pkg, c.b, pat, wantErr, gotErr)
			require.Equal(t, want, got, "%s %v -test.list %q", c.pkg, c.b, pat)
		}
	}
	// The edge cases are there to be seen: a listing that matched only
	// because both sides were empty would prove nothing.
	ctxt, err := made.context(Build{})
	require.NoError(t, err)
	cgo := "TestNoCgo" // a machine without a C compiler builds without cgo
	if ctxt.CgoEnabled {
		cgo = "TestCgo"
	}
	all, err := made.List(Build{}, "./p", ".")
	require.NoError(t, err)
	require.Equal(t, []string{"TestA", "Test", "Test_under", "Test1", "TestÄrger", "TestAlias", cgo, "TestMain", "TestX", "BenchmarkB", "BenchmarkAlias", "BenchmarkX", "FuzzF", "ExampleWithOutput", "ExampleEmpty", "Example_unordered", "Example"}, all)

	wrong := regexp.MustCompile(`wrong signature for \w+, [^\n]*`)
	for _, pkg := range []string{"./wrongtest", "./wrongbench", "./generic", "./wrongmain"} {
		_, binErr := made.listBinary(Build{}, pkg, ".")
		require.Error(t, binErr, "go test -c %s", pkg)
		_, srcErr := made.List(Build{}, pkg, ".")
		require.Error(t, srcErr, "%s's source", pkg)
		why := wrong.FindString(binErr.Error())
		require.NotEmpty(t, why, "%s: the go command says why: %v", pkg, binErr)
		require.Contains(t, srcErr.Error(), why, pkg)
	}
}
