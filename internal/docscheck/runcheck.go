package docscheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/build"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Build is what decides a test binary beyond its package: -tags and the
// build's environment (CGO_ENABLED, GOOS, GOARCH, GOEXPERIMENT, GOFLAGS).
type Build struct {
	Tags string
	Env  string // NAME=value words, space-separated, sorted
}

var buildEnv = regexp.MustCompile(`^(CGO_ENABLED|GOOS|GOARCH|GOEXPERIMENT|GOFLAGS)=`)

func (c GoTest) build() Build {
	var env []string
	for _, e := range c.Env {
		if buildEnv.MatchString(e) {
			env = append(env, e)
		}
	}
	slices.Sort(env)
	return Build{Tags: c.Tags, Env: strings.Join(env, " ")}
}

// Runner builds and runs test binaries for CheckRuns.
type Runner interface {
	// Packages expands package patterns (./lab, ./...) to the packages
	// they name, as paths from the repository's root ("./lab").
	Packages(b Build, patterns []string) ([]string, error)
	// List returns the names a package's test binary prints for
	// -test.list pattern: its top-level tests, benchmarks, fuzz tests
	// and examples that pattern matches. A package without tests lists
	// none.
	List(b Build, pkg, pattern string) ([]string, error)
	// Run runs a package's test binary with args, with env added, and
	// returns its output and whether it failed.
	Run(b Build, pkg string, args, env []string) (string, error)
}

// CheckRuns checks each go test command that filters what it runs:
//
//   - its -run pattern selects at least one test, fuzz test or example
//     of each package it names (of the packages together for ./...), -skip
//     taken into account; -run '^$' selects none on purpose, and then its
//     -bench pattern must select a benchmark;
//   - its -bench pattern selects a benchmark, and its -fuzz pattern
//     exactly one fuzz test (go test requires one);
//   - what its -run pattern selects survives being filtered: a pattern
//     with a subtest part (A/B) runs the other top-level tests it selects
//     with none of their subtests, and a test that collects its subtests'
//     results then finds them empty. Each such command's packages run,
//     once per pattern, with the subtest part replaced by one that
//     matches no subtest (A/^$; for A/B/C also A/B/^$), and the package's
//     own flags given (-sessionspeed, ...) but not what follows -args
//     (where the docs name files to write). A crash, a panic or a failure
//     there is a problem. A test run with some of its subtests but not
//     others is not tried: the tests that collect results count what ran
//     (lab/estimate_packets_test.go), which covers both.
//
// Only the selected tests that run subtests are run so (o.Subtests): the
// others run the same whatever the subtest part.
func CheckRuns(cmds []GoTest, r Runner, o RunOptions) []Problem {
	ps, probes := planRuns(cmds, r, o)
	for _, pr := range probes {
		var env []string
		if pr.env != "" {
			env = strings.Split(pr.env, "\x00")
		}
		args := strings.Split(pr.args, "\x00")
		out, err := r.Run(pr.b, pr.pkg, args, env)
		if err == nil {
			continue
		}
		also := ""
		if pr.more > 0 {
			also = fmt.Sprintf(" (and %d more commands like it)", pr.more)
		}
		ps = append(ps, Problem{pr.firstCmd.where(), fmt.Sprintf("%s%s: a test it selects does not survive the filter: %s's tests with %s failed (%v):\n%s",
			pr.firstCmd.Text, also, pr.pkg, strings.Join(args, " "), err, tail(out, 25))})
	}
	return ps
}

// probe is one run of a package's tests with their subtests filtered
// out, for the first command that asks for it and more like it.
type probe struct {
	b        Build
	pkg      string
	args     string // NUL-separated
	env      string
	firstCmd GoTest
	more     int
}

// planRuns is CheckRuns up to the runs: the problems the listings find,
// and the runs to make.
func planRuns(cmds []GoTest, r Runner, o RunOptions) ([]Problem, []*probe) {
	var ps []Problem
	add := func(c GoTest, format string, args ...any) {
		ps = append(ps, Problem{c.where(), c.Text + ": " + fmt.Sprintf(format, args...)})
	}
	var probes []*probe
	probeIndex := map[string]*probe{}
	for _, c := range cmds {
		if !c.selects() {
			continue
		}
		run, hasRun := c.Flags["run"]
		bench, hasBench := c.Flags["bench"]
		fuzz, hasFuzz := c.Flags["fuzz"]
		if len(c.Unresolved) > 0 {
			add(c, "cannot be checked: %s holds a variable that neither the line nor the Makefile defines", strings.Join(c.Unresolved, " and "))
			continue
		}
		b := c.build()
		var pkgs []string
		wild := false
		for _, p := range c.Pkgs {
			p = c.Package(p)
			wild = wild || strings.Contains(p, "...")
			pkgs = append(pkgs, p)
		}
		pkgs, err := r.Packages(b, pkgs)
		if err != nil {
			add(c, "its packages do not load: %v", err)
			continue
		}
		listed := map[string][]string{}
		list := func(pkg, pattern string) []string {
			names, err := r.List(b, pkg, pattern)
			if err != nil {
				add(c, "go test %s -list %q: %v", pkg, pattern, err)
			}
			return names
		}
		if hasRun && run != "^$" {
			skip := skipMatcher(c.Flags["skip"])
			total := 0
			for _, pkg := range pkgs {
				var tests []string
				for _, n := range list(pkg, topLevel(run)) {
					if !strings.HasPrefix(n, "Benchmark") && !skip(n) {
						tests = append(tests, n)
					}
				}
				listed[pkg] = tests
				total += len(tests)
				if len(tests) == 0 && !wild {
					add(c, "-run %s selects no test in %s", quote(run), pkg)
				}
			}
			if total == 0 && wild {
				add(c, "-run %s selects no test in %s", quote(run), strings.Join(c.Pkgs, " "))
			}
		}
		if hasBench {
			n := 0
			for _, pkg := range pkgs {
				for _, name := range list(pkg, topLevel(bench)) {
					if strings.HasPrefix(name, "Benchmark") {
						n++
					}
				}
			}
			if n == 0 {
				add(c, "-bench %s selects no benchmark in %s", quote(bench), strings.Join(c.Pkgs, " "))
			}
		}
		if hasFuzz {
			for _, pkg := range pkgs {
				var targets []string
				for _, name := range list(pkg, fuzz) {
					if strings.HasPrefix(name, "Fuzz") {
						targets = append(targets, name)
					}
				}
				if len(targets) != 1 {
					add(c, "-fuzz %s selects %d fuzz tests in %s (%s): go test fuzzes exactly one", quote(fuzz), len(targets), pkg, strings.Join(targets, ", "))
				}
			}
		}
		if !hasRun || run == "^$" {
			continue
		}
		for _, pkg := range pkgs {
			if len(listed[pkg]) == 0 {
				continue
			}
			for _, p := range emptiedFor(run, func(first string) []string {
				var names []string
				left := skipMatcher(o.Leave)
				for _, n := range list(pkg, first) {
					if slices.Contains(listed[pkg], n) && !left(n) && (o.Subtests == nil || o.Subtests(pkg, n)) {
						names = append(names, n)
					}
				}
				return names
			}) {
				args := []string{"-test.run=" + p, "-test.count=1", "-test.timeout=3m"}
				if s := c.Flags["skip"]; s != "" {
					args = append(args, "-test.skip="+s)
				}
				if c.Short {
					args = append(args, "-test.short")
				}
				args = append(args, c.Args...)
				key := fmt.Sprint(b, pkg, args, c.Env)
				if pr := probeIndex[key]; pr != nil {
					pr.more++
					continue
				}
				pr := &probe{b: b, pkg: pkg, args: strings.Join(args, "\x00"), env: strings.Join(c.Env, "\x00"), firstCmd: c}
				probeIndex[key] = pr
				probes = append(probes, pr)
			}
		}
	}
	return ps, probes
}

// RunOptions says which tests CheckRuns and CheckCollectors run.
type RunOptions struct {
	// Leave (a -skip pattern) matches the top-level tests left out of the
	// runs: the tests that judge real time, whose parents first measure
	// how late the machine's timers are and fail a busy machine, which
	// would blame the docs for the load.
	Leave string
	// Subtests says whether a package's top-level test runs subtests
	// (nil: assume every test does).
	Subtests func(pkg, test string) bool
}

// emptiedFor is emptied with each alternative's first element replaced by
// the names tests(first) returns, anchored (none: the alternative is not
// run).
func emptiedFor(pattern string, tests func(first string) []string) []string {
	var out []string
	for _, alt := range splitPattern(pattern) {
		if len(alt) < 2 {
			continue
		}
		names := tests(alt[0])
		if len(names) == 0 {
			continue
		}
		for k := 1; k < len(alt); k++ {
			elems := append([]string{"^(" + strings.Join(names, "|") + ")$"}, alt[1:k]...)
			out = append(out, strings.Join(append(elems, "^$"), "/"))
		}
	}
	return out
}

// skipMatcher says whether a -skip pattern skips a top-level test
// whole: an alternative of one element that matches its name.
func skipMatcher(skip string) func(string) bool {
	if skip == "" {
		return func(string) bool { return false }
	}
	var res []*regexp.Regexp
	for _, alt := range splitPattern(skip) {
		if len(alt) == 1 {
			if re, err := regexp.Compile(alt[0]); err == nil {
				res = append(res, re)
			}
		}
	}
	return func(name string) bool {
		for _, re := range res {
			if re.MatchString(name) {
				return true
			}
		}
		return false
	}
}

func quote(s string) string { return "'" + s + "'" }

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// selects says whether the command picks tests, benchmarks or a fuzz
// test by a pattern the docs wrote; -run '^$' alone compiles the tests
// and runs none.
func (c GoTest) selects() bool {
	if c.Generated {
		return false // made from what it selects
	}
	run, hasRun := c.Flags["run"]
	_, hasBench := c.Flags["bench"]
	_, hasFuzz := c.Flags["fuzz"]
	return hasRun && run != "^$" || hasBench || hasFuzz
}

// GoTool is the Runner that follows the go command: it lists a package's
// tests from its source, and builds a test binary only for a package
// whose tests it runs.
//
// Listings are most of what CheckRuns asks, over most of the module's
// packages, and a test binary built only to print -test.list costs a
// link each. Reading the test files the go command would compile for the
// build (go/build, with the build's tags and the CGO_ENABLED, GOOS and
// GOARCH go env gives under the build's environment) answers the same
// without building: testNames says how, and a test holds it to what the
// binaries print. A build that sets GOEXPERIMENT, or -tags or -overlay
// through GOFLAGS, picks files in ways go/build does not see: its
// packages are listed by their binaries. A package that no longer
// compiles goes unseen here unless its tests are run; its own go vet and
// go test say so.
//
// A binary is built once per build and package with go test -c, and
// runs as go test would run it, in the package's folder.
type GoTool struct {
	// Root is the repository's root; Dir a scratch folder for binaries.
	Root, Dir string

	mu    sync.Mutex
	bins  map[string]string   // build and package -> binary ("" if none)
	lists map[string][]string // build and pattern -> packages; build, package and pattern -> names; ...
}

// Prepare builds, side by side, the test binaries CheckRuns and
// CheckCollectors will run with o: those of the packages whose tests a
// command's subtest pattern runs with their subtests filtered out
// (found as CheckRuns finds them, from the listings), and those of the
// collecting tests o does not leave out. A binary that either of them
// runs and Prepare did not build is built when first run.
func (g *GoTool) Prepare(cmds []GoTest, cs []Collector, o RunOptions) error {
	want := map[Build][]string{}
	left := skipMatcher(o.Leave)
	for _, c := range cs {
		if !left(c.Name) {
			b := Build{Tags: c.Tags}
			want[b] = append(want[b], c.Pkg)
		}
	}
	_, probes := planRuns(cmds, g, o) // its problems: CheckRuns reports them
	for _, pr := range probes {
		want[pr.b] = append(want[pr.b], pr.pkg)
	}
	var errs []error
	for b, pkgs := range want {
		slices.Sort(pkgs)
		errs = append(errs, g.build(b, slices.Compact(pkgs)))
	}
	return errors.Join(errs...)
}

// build builds the test binaries of pkgs, in as few go test -c calls as
// their names allow (binaries of one call are named by the package's last
// element, which must differ).
func (g *GoTool) build(b Build, pkgs []string) error {
	g.mu.Lock()
	if g.bins == nil {
		g.bins = map[string]string{}
	}
	var todo []string
	for _, p := range pkgs {
		if _, ok := g.bins[binKey(b, p)]; !ok {
			todo = append(todo, p)
		}
	}
	g.mu.Unlock()
	var groups [][]string
	for _, p := range todo {
		placed := false
		for k, grp := range groups {
			if !slices.ContainsFunc(grp, func(q string) bool { return path.Base(q) == path.Base(p) }) {
				groups[k] = append(grp, p)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []string{p})
		}
	}
	// The groups build side by side: the go command shares its cache
	// between them, and one group's links overlap another's.
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for k, grp := range groups {
		wg.Go(func() { errs[k] = g.buildGroup(b, grp) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (g *GoTool) buildGroup(b Build, grp []string) error {
	dir, err := os.MkdirTemp(g.Dir, "bin")
	if err != nil {
		return err
	}
	// -ldflags=-w: no DWARF, which only a debugger reads, and a third of
	// the link's time; the packages compile as go test compiles them, from
	// the same cache. -vet=off: go vet has checked them (make vet).
	args := []string{"test", "-c", "-vet=off", "-ldflags=-w", "-o", dir + string(filepath.Separator)}
	if b.Tags != "" {
		args = append(args, "-tags", b.Tags)
	}
	cmd := exec.Command("go", append(args, grp...)...)
	cmd.Dir = g.Root
	cmd.Env = append(os.Environ(), strings.Fields(b.Env)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range grp {
		bin := filepath.Join(dir, path.Base(p)+".test")
		if _, err := os.Stat(bin); err != nil {
			bin = "" // no test files
		}
		g.bins[binKey(b, p)] = bin
	}
	return nil
}

// memo returns what compute gave for key the first time it succeeded:
// go list, go env and listings are asked once per build and pattern.
func (g *GoTool) memo(key string, compute func() ([]string, error)) ([]string, error) {
	g.mu.Lock()
	v, ok := g.lists[key]
	g.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := compute()
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lists == nil {
		g.lists = map[string][]string{}
	}
	g.lists[key] = v
	return v, nil
}

func binKey(b Build, pkg string) string { return b.Tags + "\x00" + b.Env + "\x00" + pkg }

func (g *GoTool) binary(b Build, pkg string) (string, error) {
	if err := g.build(b, []string{pkg}); err != nil {
		return "", err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.bins[binKey(b, pkg)], nil
}

// Packages implements Runner: a folder is its package, and go list
// expands the patterns with "..." (once per build and patterns).
func (g *GoTool) Packages(b Build, patterns []string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		if strings.Contains(p, "...") {
			pkgs, err := g.expand(b, p)
			if err != nil {
				return nil, err
			}
			out = append(out, pkgs...)
			continue
		}
		p = "./" + path.Clean(strings.TrimPrefix(p, "./"))
		files, _ := filepath.Glob(filepath.Join(g.Root, filepath.FromSlash(p), "*.go"))
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no Go files in the folder", p)
		}
		out = append(out, p)
	}
	return out, nil
}

func (g *GoTool) expand(b Build, pattern string) ([]string, error) {
	return g.memo(binKey(b, pattern), func() ([]string, error) { return g.goList(b, pattern) })
}

// goOutput runs the go command with args in the repository's root under
// b's environment and returns what it printed; a failure's error holds
// what it said on stderr.
func (g *GoTool) goOutput(b Build, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = g.Root
	cmd.Env = append(os.Environ(), strings.Fields(b.Env)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func (g *GoTool) goList(b Build, patterns ...string) ([]string, error) {
	args := []string{"list", "-f", "{{.Dir}}"}
	if b.Tags != "" {
		args = append(args, "-tags", b.Tags)
	}
	out, err := g.goOutput(b, append(args, patterns...)...)
	if err != nil {
		return nil, err
	}
	var pkgs []string
	for _, d := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(g.Root, d)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
	}
	return pkgs, nil
}

// List implements Runner: from the package's source (testNames), or for
// a build go/build cannot follow from the binary's -test.list; once per
// build, package and pattern.
func (g *GoTool) List(b Build, pkg, pattern string) ([]string, error) {
	return g.memo(binKey(b, pkg)+"\x00"+pattern, func() ([]string, error) {
		ctxt, err := g.context(b)
		if err != nil {
			return nil, err
		}
		if ctxt == nil {
			return g.listBinary(b, pkg, pattern)
		}
		names, err := g.memo(binKey(b, pkg)+"\x01", func() ([]string, error) {
			return testNames(ctxt, filepath.Join(g.Root, filepath.FromSlash(pkg)))
		})
		if err != nil || names == nil {
			return nil, err // no test files: no binary to list
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, fmt.Errorf("testing: invalid regexp in -test.list (%q): %s", pattern, err)
		}
		var out []string
		for _, n := range names {
			if re.MatchString(n) {
				out = append(out, n)
			}
		}
		return out, nil
	})
}

// context returns the go/build context the go command selects b's files
// with: go env's CGO_ENABLED, GOOS and GOARCH under b's environment (it
// knows the defaults: no cgo when cross-compiling or without a C
// compiler), and b's tags. Nil for a build whose files go/build cannot
// tell (GOEXPERIMENT, GOFLAGS with -tags or -overlay).
func (g *GoTool) context(b Build) (*build.Context, error) {
	env, err := g.memo(binKey(b, "")+"\x00go env", func() ([]string, error) {
		out, err := g.goOutput(b, "env", "CGO_ENABLED", "GOOS", "GOARCH", "GOFLAGS")
		if err != nil {
			return nil, fmt.Errorf("go env: %w", err)
		}
		v := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		if len(v) != 4 {
			return nil, fmt.Errorf("go env printed %q", out)
		}
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	if strings.Contains(b.Env, "GOEXPERIMENT=") || strings.Contains(env[3], "-tags") || strings.Contains(env[3], "-overlay") {
		return nil, nil
	}
	ctxt := build.Default
	ctxt.CgoEnabled = env[0] == "1"
	ctxt.GOOS, ctxt.GOARCH = env[1], env[2]
	if ctxt.GOARCH != build.Default.GOARCH {
		// amd64.v1 and the like are the machine's architecture's levels.
		ctxt.ToolTags = slices.DeleteFunc(slices.Clone(ctxt.ToolTags), func(t string) bool { return strings.HasPrefix(t, build.Default.GOARCH+".") })
	}
	// -tags takes a comma-separated list, or the older space-separated.
	ctxt.BuildTags = strings.FieldsFunc(b.Tags, func(r rune) bool { return r == ',' || r == ' ' })
	return &ctxt, nil
}

// listBinary lists with the package's test binary, built for it.
func (g *GoTool) listBinary(b Build, pkg, pattern string) ([]string, error) {
	bin, err := g.binary(b, pkg)
	if err != nil || bin == "" {
		return nil, err
	}
	out, err := g.Run(b, pkg, []string{"-test.list", pattern}, nil)
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, tail(out, 10))
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if testName.MatchString(l) {
			names = append(names, l)
		}
	}
	return names, nil
}

// testName is a line of -test.list's that names a test: a Go identifier
// (TestÄrger is one), not what the package's init or TestMain prints.
var testName = regexp.MustCompile(`^(Test|Benchmark|Fuzz|Example)[\p{L}\p{Nd}_]*$`)

// Run implements Runner: the binary in the package's folder, as go test
// runs it.
func (g *GoTool) Run(b Build, pkg string, args, env []string) (string, error) {
	bin, err := g.binary(b, pkg)
	if err != nil {
		return "", err
	}
	if bin == "" {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = filepath.Join(g.Root, filepath.FromSlash(pkg))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
