package openh264

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The binding (cgo.go) and the stub a build without cgo takes (nocgo.go)
// declare the same exported API, so that every importer that builds with
// one builds with the other: a machine without a C compiler, and the exact
// mode's WebAssembly guest, build the lab as the others do. It stands for
// vetting the whole tree with CGO_ENABLED=0, which rebuilds every package
// for no other difference: this package is the only one with cgo.
func TestStubDeclaresTheBindingsAPI(t *testing.T) {
	binding, stub := exportedAPI(t, "cgo.go"), exportedAPI(t, "nocgo.go")
	require.NotEmpty(t, binding)
	require.Equal(t, binding, stub, "the exported declarations of cgo.go and nocgo.go")
}

// exportedAPI lists a file's exported top-level declarations, each a
// line: a function or method with its parameters' and results' types
// (their names left out), a type, a variable or a constant.
func exportedAPI(t *testing.T, file string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	expr := func(e ast.Expr) string {
		var b strings.Builder
		require.NoError(t, printer.Fprint(&b, fset, e))
		return b.String()
	}
	types := func(fl *ast.FieldList) string {
		var out []string
		for _, fd := range fl.List {
			for range max(1, len(fd.Names)) {
				out = append(out, expr(fd.Type))
			}
		}
		return strings.Join(out, ", ")
	}
	api := map[string]bool{}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			recv := ""
			if d.Recv != nil {
				recv = "(" + types(d.Recv) + ") "
			}
			sig := "func " + recv + d.Name.Name + "(" + types(d.Type.Params) + ")"
			if d.Type.Results != nil {
				sig += " (" + types(d.Type.Results) + ")"
			}
			api[sig] = true
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						api[d.Tok.String()+" "+s.Name.Name] = true
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							api[d.Tok.String()+" "+n.Name] = true
						}
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(api))
}
