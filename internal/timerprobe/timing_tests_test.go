package timerprobe

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every real-time test the Makefile runs apart (TIMING_NAMES, in
// TIMING_PKGS), and the real-time tests with bounds beside them, measures
// the machine's timers first: each calls Require.
func TestRealTimeTestsRequireTheirTimers(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	names := regexp.MustCompile(`(?m)^TIMING_NAMES = (.+)$`).FindSubmatch(mk)
	pkgs := regexp.MustCompile(`(?m)^TIMING_PKGS = (.+)$`).FindSubmatch(mk)
	require.NotNil(t, names, "the Makefile's TIMING_NAMES")
	require.NotNil(t, pkgs, "the Makefile's TIMING_PKGS")
	want := strings.Split(string(names[1]), "|")
	dirs := strings.Fields(string(pkgs[1]))
	// Real-time tests with bounds that run with the rest.
	want = append(want, "TestRealTimeSession", "TestKernelTraffic", "TestShellTraffic")

	calls := map[string]bool{} // test name -> calls Require
	for _, dir := range dirs {
		for name, called := range testFuncs(t, filepath.Join(root, dir)) {
			calls[name] = calls[name] || called
		}
	}
	for _, name := range want {
		called, ok := calls[name]
		require.True(t, ok, "%s: no such test in %v", name, dirs)
		require.True(t, called, "%s is a real-time test: it calls timerprobe.Require first, with the timer lateness it tolerates", name)
	}
}

// testFuncs returns the functions of the test files in dir, each with
// whether it calls timerprobe.Require.
func testFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	require.NoError(t, err)
	calls := map[string]bool{}
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Body == nil {
				continue
			}
			found := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Require" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "timerprobe" {
						found = true
					}
				}
				return !found
			})
			calls[fn.Name.Name] = calls[fn.Name.Name] || found
		}
	}
	return calls
}

// The Makefile's schedule of the timing tests (TIMING_FIRST, then TIMING_A,
// TIMING_B and TIMING_C side by side: package:Test,Test entries) runs each
// test of TIMING_TESTS once, from the package that defines it. make
// timing-runs fails an entry whose binary finds none of its tests, but a
// test added to TIMING_NAMES and to no entry would run nowhere, unit-shared
// and race skipping it too.
func TestTimingScheduleRunsEveryTimingTest(t *testing.T) {
	root := filepath.Join("..", "..")
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(TIMING_[A-Z_]+) = (.+)$`).FindAllSubmatch(mk, -1) {
		vars[string(m[1])] = string(m[2])
	}
	schedule := []string{"TIMING_FIRST", "TIMING_A", "TIMING_B", "TIMING_C"}
	for _, v := range append([]string{"TIMING_NAMES", "TIMING_TESTS", "TIMING_PKGS"}, schedule...) {
		require.NotEmpty(t, vars[v], "the Makefile's %s", v)
	}
	tests := strings.NewReplacer("$(TIMING_NAMES)", vars["TIMING_NAMES"], "^(", "", ")$$", "").Replace(vars["TIMING_TESTS"])
	want := strings.Split(tests, "|")
	require.Contains(t, want, "TestEnginesAgree", "TIMING_TESTS is read, with TIMING_NAMES in it")
	require.Contains(t, want, "TestShellTraffic")

	pkgs := strings.Fields(vars["TIMING_PKGS"])
	scheduled := map[string]string{} // test -> its entry
	for _, v := range schedule {
		for _, entry := range strings.Fields(vars[v]) {
			pkg, names, ok := strings.Cut(entry, ":")
			require.True(t, ok, "%s: %q is package:Test,Test", v, entry)
			require.Contains(t, pkgs, pkg, "%s: %s's binary is built (TIMING_PKGS)", v, pkg)
			defined := testFuncs(t, filepath.Join(root, pkg))
			for _, name := range strings.Split(names, ",") {
				_, ok := defined[name]
				require.True(t, ok, "%s: %s defines no %s", v, pkg, name)
				require.NotContains(t, scheduled, name, "%s: %s runs twice (%s)", v, name, scheduled[name])
				scheduled[name] = entry
			}
		}
	}
	// make unit-alone runs each list: TIMING_FIRST itself, the others
	// through their targets (timing-a for TIMING_A), side by side.
	recipe := regexp.MustCompile(`(?m)^unit-alone:.*\n((?:\t.*\n)+)`).FindSubmatch(mk)
	require.NotNil(t, recipe, "the Makefile's unit-alone")
	require.Contains(t, string(recipe[1]), "RUNS='$(TIMING_FIRST)'")
	for _, v := range schedule[1:] {
		target := "timing-" + strings.ToLower(strings.TrimPrefix(v, "TIMING_"))
		require.Regexp(t, `-j`+fmt.Sprint(len(schedule)-1)+` [a-z -]*\b`+target+`\b`, string(recipe[1]), "unit-alone runs %s beside the others", target)
		require.Regexp(t, `(?m)^`+target+`:\n\t@\$\(MAKE\) --no-print-directory timing-runs RUNS='\$\(`+v+`\)'$`, string(mk), "%s runs %s", target, v)
	}
	for _, name := range want {
		require.Contains(t, scheduled, name, "%s is a timing test (TIMING_TESTS) the schedule never runs", name)
	}
	require.Len(t, scheduled, len(want), "the schedule runs only TIMING_TESTS's tests: %v", scheduled)
}
