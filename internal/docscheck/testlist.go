package docscheck

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// testNames returns what the test binary of the package in dir prints
// for -test.list '.', in its order, read from the source as the go
// command reads it to write the binary's main (cmd/go/internal/load's
// loadTestFuncs): the package's test files ctxt selects, in-package
// ones first, each file's tests, benchmarks, fuzz tests and examples in
// the order they are declared; then the binary prints every test, then
// every benchmark, fuzz test and example. A top-level function is a
// test, benchmark or fuzz test by its name alone (Test, Benchmark or
// Fuzz, then nothing or a rune that is not lower case; TestMain is one
// only if it takes a *testing.T), and then it must take a *testing.T, B
// or F and nothing else: the go command refuses to build the binary
// otherwise, and so this is an error. An example is what go/doc says
// (Example..., no parameters, no results), and is listed, as it is run,
// only with an output comment ("// Output:" even empty, or "// Unordered
// output:"). A package without test files has no binary: nil; one with
// test files but none of these lists nothing: an empty slice.
func testNames(ctxt *build.Context, dir string) ([]string, error) {
	p, err := ctxt.ImportDir(dir, 0)
	var noGo *build.NoGoError
	if errors.As(err, &noGo) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	files := slices.Concat(p.TestGoFiles, p.XTestGoFiles)
	if len(files) == 0 {
		return nil, nil
	}
	tests, benchmarks, fuzz, examples := []string{}, []string{}, []string{}, []string{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil {
				continue
			}
			name := fd.Name.Name
			var list *[]string
			var arg string
			switch {
			case name == "TestMain":
				if takesPointerTo(fd, "T") {
					tests = append(tests, name)
					continue
				}
				list, arg = nil, "M" // the binary's main, not listed
			case isTest(name, "Test"):
				list, arg = &tests, "T"
			case isTest(name, "Benchmark"):
				list, arg = &benchmarks, "B"
			case isTest(name, "Fuzz"):
				list, arg = &fuzz, "F"
			default:
				continue
			}
			why := ""
			if !takesPointerTo(fd, arg) {
				why = fmt.Sprintf("must be: func %s(%s *testing.%s)", name, strings.ToLower(arg), arg)
			}
			if fd.Type.TypeParams.NumFields() > 0 {
				why = "test functions cannot have type parameters"
			}
			if why != "" {
				return nil, fmt.Errorf("%s: wrong signature for %s, %s", fset.Position(fd.Pos()), name, why)
			}
			if list != nil {
				*list = append(*list, name)
			}
		}
		ex := doc.Examples(f)
		slices.SortFunc(ex, func(a, b *doc.Example) int { return cmp.Compare(a.Order, b.Order) })
		for _, e := range ex {
			if e.Output != "" || e.EmptyOutput {
				examples = append(examples, "Example"+e.Name)
			}
		}
	}
	return slices.Concat(tests, benchmarks, fuzz, examples), nil
}

// isTest says whether name is a test's (benchmark's, ...) by the go
// command's rule: prefix, then nothing or a rune that is not lower case
// (TestX, Test_x, Test, not Testify).
func isTest(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(rest)
	return !unicode.IsLower(r)
}

// takesPointerTo says whether fd takes one *arg or *pkg.arg (testing
// may be imported under another name) and returns nothing.
func takesPointerTo(fd *ast.FuncDecl, arg string) bool {
	t := fd.Type
	if t.Results != nil && len(t.Results.List) > 0 || t.Params == nil || len(t.Params.List) != 1 || len(t.Params.List[0].Names) > 1 {
		return false
	}
	ptr, ok := t.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := ptr.X.(type) {
	case *ast.Ident:
		return x.Name == arg
	case *ast.SelectorExpr:
		return x.Sel.Name == arg
	}
	return false
}
