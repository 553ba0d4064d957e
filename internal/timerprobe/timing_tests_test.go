package timerprobe

import (
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
		files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
		require.NoError(t, err)
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
	}
	for _, name := range want {
		called, ok := calls[name]
		require.True(t, ok, "%s: no such test in %v", name, dirs)
		require.True(t, called, "%s is a real-time test: it calls timerprobe.Require first, with the timer lateness it tolerates", name)
	}
}
