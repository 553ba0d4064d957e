package docscheck

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Collector is a top-level test that keeps what its subtests find: a
// closure given to t.Run writes a variable the test declares outside it.
// Filtered with go test -run 'NAME/SUB', the subtests the filter leaves
// out never write theirs, and the test must then skip or fail clearly
// rather than use what is empty.
type Collector struct {
	// Pkg is the package as a path from the repository's root ("./lab"),
	// File and Line where the test is, Name the test's.
	Pkg, File, Name string
	Line            int
	// Tags is the build tag the test's file needs ("" for none).
	Tags string
	// Vars are the variables its subtests write.
	Vars []string
}

// Collectors returns the repository's collecting tests, read from the
// source of every _test.go file under root (testdata, out and hidden
// folders aside).
func Collectors(root string) ([]Collector, error) {
	var out []Collector
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "out") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tags, ok := fileTags(src)
		if !ok {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || fd.Body == nil || !isTestName(fd.Name.Name) {
				continue
			}
			if vars := writtenBySubtests(fd); len(vars) > 0 {
				out = append(out, Collector{
					Pkg: "./" + filepath.ToSlash(filepath.Dir(rel)), File: rel, Name: fd.Name.Name,
					Line: fset.Position(fd.Pos()).Line, Tags: tags, Vars: vars,
				})
			}
		}
		return nil
	})
	return out, err
}

// fileTags returns the tag a file's //go:build line needs: "" when the
// default build has it, "jobs" (or another single tag) when that tag
// alone adds it; false when neither does (another OS, cgo off, ...).
func fileTags(src []byte) (string, bool) {
	for _, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "package ") {
			break
		}
		if !constraint.IsGoBuild(l) {
			continue
		}
		expr, err := constraint.Parse(l)
		if err != nil {
			return "", false
		}
		base := func(tag string) bool {
			return tag == "linux" || tag == "amd64" || tag == "unix" || tag == "cgo" || strings.HasPrefix(tag, "go1.")
		}
		if expr.Eval(base) {
			return "", true
		}
		var tags []string
		expr.Eval(func(tag string) bool { tags = append(tags, tag); return false })
		for _, tag := range tags {
			if !base(tag) && expr.Eval(func(t string) bool { return base(t) || t == tag }) {
				return tag, true
			}
		}
		return "", false
	}
	return "", true
}

// isTestName says whether n names a test go test runs with -run (TestMain
// aside: a test only if it takes a *testing.T, which no test here does).
func isTestName(n string) bool { return isTest(n, "Test") && n != "TestMain" }

// writtenBySubtests returns the variables of fd, declared outside any
// closure given to a Run call, that such a closure assigns, increments or
// stores into (x = ..., x[i] = ..., x.f = ..., x++).
func writtenBySubtests(fd *ast.FuncDecl) []string {
	type decl struct {
		name string
		pos  token.Pos
	}
	var decls []decl // every variable fd declares, closures' included
	ast.Inspect(fd, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						decls = append(decls, decl{id.Name, id.Pos()})
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				decls = append(decls, decl{id.Name, id.Pos()})
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						decls = append(decls, decl{id.Name, id.Pos()})
					}
				}
			}
		}
		return true
	})
	// outside says whether name, used at pos inside lit, names a variable
	// declared in fd before lit and outside it (the nearest declaration
	// before pos wins).
	outside := func(name string, pos token.Pos, lit *ast.FuncLit) bool {
		best := token.NoPos
		for _, d := range decls {
			if d.name == name && d.pos < pos && d.pos > best {
				best = d.pos
			}
		}
		return best.IsValid() && (best < lit.Pos() || best > lit.End())
	}
	root := func(e ast.Expr) *ast.Ident {
		for {
			switch x := e.(type) {
			case *ast.Ident:
				return x
			case *ast.IndexExpr:
				e = x.X
			case *ast.SelectorExpr:
				e = x.X
			case *ast.StarExpr:
				e = x.X
			case *ast.ParenExpr:
				e = x.X
			default:
				return nil
			}
		}
	}
	written := map[string]bool{}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Run" || len(call.Args) != 2 {
			return true
		}
		lit, ok := call.Args[1].(*ast.FuncLit)
		if !ok {
			return true
		}
		ast.Inspect(lit.Body, func(m ast.Node) bool {
			var targets []ast.Expr
			switch s := m.(type) {
			case *ast.AssignStmt:
				if s.Tok != token.DEFINE {
					targets = s.Lhs
				}
			case *ast.IncDecStmt:
				targets = []ast.Expr{s.X}
			}
			for _, t := range targets {
				if id := root(t); id != nil && id.Name != "_" && outside(id.Name, id.Pos(), lit) {
					written[id.Name] = true
				}
			}
			return true
		})
		return true
	})
	return slices.Sorted(maps.Keys(written))
}

// CheckCollectors runs each collecting test with its subtests filtered
// out (-run '^NAME$/^$'), the state a filter for another test's subtests
// leaves it in, and returns a problem for each that fails or takes its
// binary down. The ones that count what ran pass by skipping. The tests
// o.Leave matches are not run (see RunOptions).
func CheckCollectors(cs []Collector, r Runner, o RunOptions) []Problem {
	var ps []Problem
	left := skipMatcher(o.Leave)
	for _, c := range cs {
		if left(c.Name) {
			continue
		}
		b := Build{Tags: c.Tags}
		args := []string{"-test.run=^" + c.Name + "$/^$", "-test.count=1", "-test.timeout=3m"}
		out, err := r.Run(b, c.Pkg, args, nil)
		if err != nil {
			ps = append(ps, Problem{fmt.Sprintf("%s:%d", c.File, c.Line), fmt.Sprintf("%s keeps what its subtests find (%s), and with its subtests filtered out (%s) it failed (%v): count what ran, and skip or fail saying what the filter left out:\n%s",
				c.Name, strings.Join(c.Vars, ", "), strings.Join(args, " "), err, tail(out, 25))})
		}
	}
	return ps
}

// SubtestRunners returns the top-level tests of the package in dir that
// run subtests: whose body calls a Run method with a name and a function
// literal, itself or through the functions of the package's test files
// (runGroup in lab), by name.
func SubtestRunners(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	bodies := map[string]*ast.BlockStmt{}
	for _, p := range files {
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil {
				bodies[fd.Name.Name] = fd.Body
			}
		}
	}
	calls := map[string][]string{} // the package's functions each calls
	runs := map[string]bool{}
	for name, body := range bodies {
		ast.Inspect(body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				if _, lit := call.Args[len(call.Args)-1].(*ast.FuncLit); fn.Sel.Name == "Run" && len(call.Args) == 2 && lit {
					runs[name] = true
				}
			case *ast.Ident:
				if bodies[fn.Name] != nil {
					calls[name] = append(calls[name], fn.Name)
				}
			}
			return true
		})
	}
	for changed := true; changed; {
		changed = false
		for name, callees := range calls {
			if !runs[name] && slices.ContainsFunc(callees, func(c string) bool { return runs[c] }) {
				runs[name], changed = true, true
			}
		}
	}
	out := map[string]bool{}
	for name := range runs {
		if isTestName(name) {
			out[name] = true
		}
	}
	return out, nil
}
