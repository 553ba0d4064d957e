package docscheck

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/docregion"
	"github.com/nuvirahub/latencylab/internal/modroot"
	"github.com/nuvirahub/latencylab/lab"
)

// sections are the docs pages users rely on and the sections each must
// keep. Removing one is a decision to make here, in the open, not a side
// effect of rewriting a page.
var sections = map[string][]string{
	"docs/scenarios.md":     {"Units and defaults", "Strict loading", "The library and its groups", "Traces"},
	"docs/own-scenarios.md": {"Write a scenario file", "Run it: `lab test`", "Exact by default", "The exit status", "Mistakes in a file", "Read the report", "JUnit in CI", "From go test", "In a team's own repository", "From another module's go test"},
	"docs/netem.md":         {"Impairments", "The order a packet meets them", "Timeline", "Seeding", "Real time and virtual time"},
	"docs/kernel.md":        {"The congestion-controller grid", "N11 half reproduces", "Media with the ABR", "Against a competing flow"},
	"docs/codecs.md":        {"Running it", "The reference run", "Where the lab's figures differ, and why", "Lossless support mode", "The model calibrated against OpenH264"},
	"docs/observability.md": {"A scenario in real time: `lab run`", "Grafana", "Metrics", "A past run in Grafana: `lab openmetrics`", "Packets", "Any program's UDP traffic: `lab proxy`"},
	"docs/reports.md":       {"Nightly and accept", "When is it a regression?", "Compare", "Sweep", "Report"},
	"docs/determinism.md":   {"What a seed fixes", "Worker processes", "Exact sessions"},
	"docs/performance.md":   {"The impairment network and QUIC", "Sessions, the suite and the jobs", "The codec lab"},
	"docs/architecture.md":  {"The packages as layers", "One session, end to end", "Sessions without the go command", "Where to add things", "An impairment", "A scenario field", "A measurement", "A bitrate controller"},
	"docs/reproduction.md":  {"Classes", "How the table is made"},
	"docs/testing.md":       {"The test command", "Tests that need Debian packages, or root", "Fuzz tests", "How the library's bounds were set"},
	"docs/abr.md":           {"NuviraHub's ABR", "The switches", "GCC beside it"},
	"docs/paths.md":         {"How the PCs connect", "Which path each pairing of routers takes", "Time to the first frame per fallback step"},
	"docs/security.md":      {"What listens, and where", "The proxy's API", "What the relay admits, and what it sees", "The shell: a lab, not a way out", "What needs root, and why"},
	"docs/rmcat.md":         {"The cases", "Where the lab differs from the RFC's set-up", "Criteria and the ABR's expected failures", "The two controllers side by side", "Comparing them over seeds"},
	"docs/traffic.md":       {"The kinds", "The TCP-like model", "Measurements", "A worked example: a download at home", "In the kernel mode", "Captures", "RFC 8867's test cases"},
	"docs/cluster.md":       {"The image", "The manifests", "A sweep", "A tune: ask and tell", "GitHub Actions", "What the tests check", "What was run, and what was not"},
	"docs/recording.md":     {"What it does", "The kinds", "The corpus", "Replaying a recording", "Detail to complexity", "What the tests check"},
	"docs/shell.md":         {"A worked example", "What the shell can reach", "How cleanup works", "What needs root", "Compared with mahimahi", "What the tests measure"},
}

// repo loads the repository's docs and what they must hold.
func repo(t *testing.T) (Docs, Want) {
	t.Helper()
	root, err := modroot.Find()
	require.NoError(t, err)
	d, err := Load(root)
	require.NoError(t, err)
	cmds, err := Commands(filepath.Join(root, "cmd", "lab", "main.go"))
	require.NoError(t, err)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	require.NoError(t, err)
	findings, err := lab.Findings()
	require.NoError(t, err)
	w := Want{
		Commands: cmds, Targets: Targets(string(makefile)),
		Table: docregion.Reproduction, Regions: docregion.All,
		Sections: sections, Pages: sortedKeys(sections),
		SetUp: [2]string{"make suite", "make test"},
		CI:    string(ci),
	}
	for _, f := range findings {
		w.FindingIDs = append(w.FindingIDs, f.ID)
	}
	return d, w
}

func sortedKeys(m map[string][]string) []string { return slices.Sorted(maps.Keys(m)) }

// The docs say everything the project does.
func TestDocsAreComplete(t *testing.T) {
	d, w := repo(t)
	require.Contains(t, w.Commands, "ccgrid", "the lab command's subcommands are read from cmd/lab/main.go")
	require.Contains(t, w.Targets, "suite", "the targets are read from the Makefile")
	require.Len(t, w.FindingIDs, 34)
	for _, p := range Check(d, w) {
		t.Error(p)
	}
}

// Each kind of loss is caught: take the real docs, remove one thing, and
// the check names it.
func TestDocsCheckCatchesWhatIsRemoved(t *testing.T) {
	d, w := repo(t)
	require.Empty(t, Check(d, w), "the docs must pass before anything is removed")
	edit := func(file string, f func(string) string) Docs {
		c := d
		c.Files = maps.Clone(d.Files)
		before := c.Files[file]
		c.Files[file] = f(before)
		require.NotEqual(t, before, c.Files[file], "the edit changed nothing in %s", file)
		return c
	}
	cut := func(text, from, to string) string {
		i := strings.Index(text, from)
		j := strings.Index(text[i+1:], to)
		require.True(t, i >= 0 && j >= 0, "%q ... %q", from, to)
		return text[:i] + text[i+1+j:]
	}
	for _, tc := range []struct {
		name, want string
		docs       Docs
		want2      func(Want) Want
	}{
		{name: "a section", want: `docs/kernel.md: the section "N11 half reproduces" is gone`,
			docs: edit("docs/kernel.md", func(s string) string { return cut(s, "## N11 half reproduces", "## Media with the ABR") })},
		{name: "a page", want: "docs/paths.md: missing: the docs page is gone",
			docs: func() Docs { c := d; c.Files = maps.Clone(d.Files); delete(c.Files, "docs/paths.md"); return c }()},
		{name: "a command", want: "the command lab ccgrid appears in no doc",
			docs: editAll(d, func(s string) string { return strings.ReplaceAll(s, "lab ccgrid", "lab") })},
		{name: "a make target", want: "the make target accept-baseline appears in no doc",
			docs: editAll(d, func(s string) string { return strings.ReplaceAll(s, "make accept-baseline", "") })},
		{name: "a link", want: "README.md: links docs/kernel-mode.md, which does not exist",
			docs: edit("README.md", func(s string) string { return strings.Replace(s, "(docs/kernel.md)", "(docs/kernel-mode.md)", 1) })},
		{name: "an anchor", want: "but docs/reports.md has no heading #sweeps",
			docs: edit("README.md", func(s string) string {
				return strings.Replace(s, "docs/reports.md#sweep)", "docs/reports.md#sweeps)", 1)
			})},
		{name: "a quoted path", want: "docs/netem.md: quotes the repository path netem/tracegenerator, which does not exist",
			docs: edit("docs/netem.md", func(s string) string { return s + "\nTraces: `netem/tracegenerator`.\n" })},
		{name: "a package in a command", want: "docs/netem.md: quotes the repository path netem/tracegenerator, which does not exist",
			docs: edit("docs/netem.md", func(s string) string { return s + "\n```sh\ngo test ./netem/tracegenerator -update\n```\n" })},
		{name: "a marker", want: "docs/codecs.md: marker \"<!-- codecs:end -->\" appears 0 times",
			docs: edit("docs/codecs.md", func(s string) string { return strings.Replace(s, docregion.Codecs.End, "", 1) })},
		{name: "a finding's row", want: "finding N13 has no row in the reproduction table",
			docs: edit("docs/reproduction.md", func(s string) string {
				i := strings.Index(s, "| N13 |")
				return s[:i] + s[i+strings.Index(s[i:], "\n")+1:]
			})},
		{name: "a set-up command", want: `README.md: does not show the set-up command "make suite"`,
			docs: edit("README.md", func(s string) string { return strings.ReplaceAll(s, "make suite ", "make all ") })},
		{name: "CI's test command", want: `.ci/run: does not run the README's test command`, docs: d,
			want2: func(w Want) Want {
				w.CI = strings.ReplaceAll(w.CI, "make test", "go test ./lab")
				return w
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := w
			if tc.want2 != nil {
				w = tc.want2(w)
			}
			var got []string
			for _, p := range Check(tc.docs, w) {
				got = append(got, p.String())
			}
			require.NotEmpty(t, got, "removing %s went unnoticed", tc.name)
			require.Contains(t, strings.Join(got, "\n"), tc.want)
		})
	}
}

// docTests returns every go test command the docs and the Makefile show.
func docTests(t *testing.T, d Docs) []GoTest {
	t.Helper()
	root, err := modroot.Find()
	require.NoError(t, err)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	vars := MakeVars(string(makefile))
	var cmds []GoTest
	for _, f := range slices.Sorted(maps.Keys(d.Files)) {
		cmds = append(cmds, GoTests(f, d.Files[f], vars)...)
	}
	return append(cmds, MakeGoTests("Makefile", string(makefile))...)
}

// Every go test command in the docs and the Makefile that filters what
// it runs (-run, -bench, -fuzz) selects something in each package it
// names, and the tests a -run pattern with a subtest part selects survive
// having their subtests filtered out (CheckRuns says how); so does every
// test that keeps what its subtests find (Collectors). What a pattern
// selects is listed from the packages' test files, as the go command
// reads them (GoTool, held to the binaries' -test.list by
// TestSourceListingMatchesTestList): no binary is built to list. Only the
// packages whose tests run are built, once, side by side: each subtest
// pattern and collecting test costs one run with no subtest.
func TestDocumentedTestCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping: builds and runs the test binaries of the packages whose tests the docs' subtest patterns select, and of the collecting tests (run without -short, as CI does)")
	}
	d, _ := repo(t)
	cmds := docTests(t, d)
	perFile := map[string]int{}
	probes := map[string]bool{}
	for _, c := range cmds {
		if c.selects() {
			perFile[c.File]++
			for _, alt := range splitPattern(c.Flags["run"]) {
				if len(alt) > 1 {
					probes[fmt.Sprint(c.Pkgs, alt[:len(alt)-1])] = true
				}
			}
		}
	}
	require.NotZero(t, perFile["docs/reproduction.md"], "the reproduction table's commands are found")
	require.NotZero(t, perFile["Makefile"], "the Makefile's commands are found")
	root, err := modroot.Find()
	require.NoError(t, err)
	collectors, err := Collectors(root)
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(collectors, func(c Collector) bool { return c.Name == "TestEstimateCountsTheLibrarysPackets" }),
		"the estimate's test keeps its subtests' sessions: it is found")
	// go test caches this test's result by the files it opens: stat the
	// module's Go files, whose tests it runs, so that a change to any of
	// them runs it again.
	require.NoError(t, filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".go") {
			_, err = os.Stat(p)
		}
		return err
	}))
	// The tests that judge real time run on their own in CI (the
	// Makefile's TIMING_TESTS), not beside this one.
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	require.NoError(t, err)
	timing := MakeVars(string(makefile))["TIMING_TESTS"]
	require.Contains(t, timing, "TestEnginesAgree", "the Makefile's timing tests are read")
	subtests := map[string]map[string]bool{}
	o := RunOptions{Leave: timing, Subtests: func(pkg, test string) bool {
		if subtests[pkg] == nil {
			var err error
			subtests[pkg], err = SubtestRunners(filepath.Join(root, filepath.FromSlash(pkg)))
			require.NoError(t, err)
		}
		return subtests[pkg][test]
	}}
	g := &GoTool{Root: root, Dir: t.TempDir()}
	require.NoError(t, g.Prepare(cmds, collectors, o))
	for _, p := range CheckRuns(cmds, g, o) {
		t.Error(p)
	}
	require.True(t, subtests["./lab"]["TestLibrary"], "TestLibrary runs subtests through runGroup: it is found")
	require.False(t, subtests["./lab"]["TestKernelTraffic"], "TestKernelTraffic runs none")
	// Every test that keeps what its subtests find, documented or not,
	// survives a filter that leaves its subtests out.
	for _, p := range CheckCollectors(collectors, g, o) {
		t.Error(p)
	}
	run := 0
	for _, c := range collectors {
		if !skipMatcher(timing)(c.Name) {
			run++
		}
	}
	listed, built := 0, 0
	for k := range g.lists {
		if strings.HasSuffix(k, "\x01") {
			listed++
		}
	}
	for _, bin := range g.bins {
		if bin != "" {
			built++
		}
	}
	t.Logf("%d commands that select by pattern, in %d files; %d subtest patterns run with their subtests filtered out; %d collecting tests found, %d run so (the others judge real time); %d packages listed from source, %d test binaries built",
		sum(perFile), len(perFile), len(probes), len(collectors), run, listed, built)

	// A pattern broken in a page is caught, naming the page, the line and
	// the pattern (a listing from source: nothing is built).
	t.Run("a pattern that selects nothing", func(t *testing.T) {
		text := d.Files["docs/reproduction.md"]
		i := strings.Index(text, "-run 'Library/")
		require.GreaterOrEqual(t, i, 0)
		line := strings.Count(text[:i], "\n") + 1
		broken := text[:i] + "-run 'Librari/" + text[i+len("-run 'Library/"):]
		var got []string
		for _, c := range GoTests("docs/reproduction.md", broken, nil) {
			if strings.Contains(c.Flags["run"], "Librari/") {
				for _, p := range CheckRuns([]GoTest{c}, g, RunOptions{}) {
					got = append(got, p.String())
				}
			}
		}
		require.Len(t, got, 1)
		require.Contains(t, got[0], fmt.Sprintf("docs/reproduction.md:%d: ", line))
		require.Contains(t, got[0], "-run 'Librari/")
		require.Contains(t, got[0], "selects no test in ./lab")
	})
	// The Makefile's jobs commands find their tests with -tags jobs (and
	// -C lab/jobs), and would not without it.
	t.Run("a command's tags", func(t *testing.T) {
		i := slices.IndexFunc(cmds, func(c GoTest) bool { return c.File == "Makefile" && c.Tags == "jobs" && c.Dir == "lab/jobs" })
		require.GreaterOrEqual(t, i, 0, "the Makefile runs a jobs-tagged test in lab/jobs")
		c := cmds[i]
		require.Empty(t, CheckRuns([]GoTest{c}, g, RunOptions{}))
		c.Tags = ""
		ps := CheckRuns([]GoTest{c}, g, RunOptions{})
		require.Len(t, ps, 1)
		require.Contains(t, ps[0].String(), "selects no test in ./lab/jobs")
	})
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func editAll(d Docs, f func(string) string) Docs {
	c := d
	c.Files = map[string]string{}
	for k, v := range d.Files {
		c.Files[k] = f(v)
	}
	return c
}

func TestSlug(t *testing.T) {
	require.Equal(t, "how-the-librarys-bounds-were-set", slug("How the library's bounds were set"))
	require.Equal(t, "a-scenario-in-real-time-lab-run", slug("A scenario in real time: `lab run`"))
	require.Equal(t, "when-is-it-a-regression", slug("When is it a regression?"))
}

func TestTargetsAndCommands(t *testing.T) {
	require.Equal(t, []string{"suite", "readme"}, Targets(".PHONY: suite\nX ?= 1\nsuite:\n\tgo test\nreadme: suite\nY := 2\n"))
	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(main, []byte(`package main
func main() { switch x { case "run": ; case "nightly", "accept": ; case "-h", "help": } }`), 0o644))
	cmds, err := Commands(main)
	require.NoError(t, err)
	require.Equal(t, []string{"run", "nightly", "accept"}, cmds)
}

// Code, help texts and docs say what a thing is, never which issue of a
// tracker asked for it: users have no tracker to look numbers up in.
func TestNoTrackerReferences(t *testing.T) {
	root, err := modroot.Find()
	require.NoError(t, err)
	ref := regexp.MustCompile(`(?i)\bissues? #?[0-9]+\b|\ba later issue\b`)
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == "out") {
			return filepath.SkipDir
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".yaml", ".json", ".sh":
		default:
			if e.Name() != "Makefile" && e.Name() != "run" {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := ref.FindString(line); m != "" {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: %q: say what the thing is, not which issue asked for it", rel, i+1, m)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// The commands are read as a shell and the go command read them: quotes,
// a command over several lines in a block or in inline code, a table's
// escaped pipe, NAME=value and sudo before go test, -C and -tags, chains,
// redirections and comments, a flag of the package's own, -args.
func TestGoTestsParse(t *testing.T) {
	page := strings.Join([]string{
		"Run `go test ./lab -run 'Library/mobile-spikes$' -v`, or `go test ./lab",
		"-run \"^TestSessionSpeed$\" -sessionspeed -v` over two lines.",
		"",
		"```sh",
		"LAB_N11_SECONDS=20 sudo go test ./netem/kernel \\",
		"    -run 'N11|Iperf3' -v   # a comment",
		"go test -C lab -tags jobs -run ^TestNightly$ -count=1 -args -seeds 1 -out x",
		"$ go test ./a ./b -run X && go test ./c -run=Y | tee out > log 2>&1",
		"```",
		"",
		"```go",
		"// go test ./notshell -run Z",
		"```",
		"",
		"| what | command |",
		"|---|---|",
		"| rates | `go test ./netem -run '^$' -bench '^Benchmark(Rate\\|Trace)$'` |",
		"",
		"A mention of `go test -bench` is no command; `go test ./x -run \"$NAMES\"` takes $NAMES from the Makefile.",
	}, "\n")
	var got []string
	for _, c := range GoTests("p.md", page, map[string]string{"NAMES": "^(A|B)$"}) {
		got = append(got, fmt.Sprintf("%d env=%v dir=%s tags=%s pkgs=%v run=%q bench=%q args=%v", c.Line, c.Env, c.Dir, c.Tags, c.Pkgs, c.Flags["run"], c.Flags["bench"], c.Args))
	}
	require.Equal(t, []string{
		`5 env=[LAB_N11_SECONDS=20] dir= tags= pkgs=[./netem/kernel] run="N11|Iperf3" bench="" args=[]`,
		`7 env=[] dir=lab tags=jobs pkgs=[.] run="^TestNightly$" bench="" args=[]`,
		`8 env=[] dir= tags= pkgs=[./a ./b] run="X" bench="" args=[]`,
		`8 env=[] dir= tags= pkgs=[./c] run="Y" bench="" args=[]`,
		`1 env=[] dir= tags= pkgs=[./lab] run="Library/mobile-spikes$" bench="" args=[]`,
		`1 env=[] dir= tags= pkgs=[./lab] run="^TestSessionSpeed$" bench="" args=[-sessionspeed]`,
		`17 env=[] dir= tags= pkgs=[./netem] run="^$" bench="^Benchmark(Rate|Trace)$" args=[]`,
		`19 env=[] dir= tags= pkgs=[./x] run="^(A|B)$" bench="" args=[]`,
	}, got)
	require.Equal(t, "./lab", GoTest{Dir: "lab"}.Package("."))
	require.Equal(t, "./lab/jobs", GoTest{Dir: "lab"}.Package("./jobs"))

	unknown := GoTests("p.md", "`go test ./x -run \"$UNSET\"`", nil)
	require.Len(t, unknown, 1)
	require.Equal(t, []string{"-run"}, unknown[0].Unresolved)

	makefile := "NAMES = A|B\nPATTERN = ^($(NAMES))$$\nOUT ?= out/x\nt:\n\tgo test -C lab -run '$(PATTERN)' \\\n\t  -count=1 -args -out $(abspath $(OUT))\n"
	mk := MakeGoTests("Makefile", makefile)
	require.Len(t, mk, 1)
	require.Equal(t, 5, mk[0].Line)
	require.Equal(t, "^(A|B)$", mk[0].Flags["run"])
	require.Equal(t, "lab", mk[0].Dir)
	require.Equal(t, "^(A|B)$", MakeVars(makefile)["PATTERN"])

	// A loop's pattern, made from the source (the Makefile's fuzz stage),
	// is read past a sed script's parentheses and marked as made.
	loop := "fuzz:\n\t@for file in $$(grep -rl '^func Fuzz' .); do \\\n\t  for target in $$(sed -n 's/^func \\(Fuzz[A-Za-z0-9_]*\\)(.*/\\1/p' $$file); do \\\n\t    go test -run '^$$' -fuzz \"^$$target$$\" $$(dirname $$file); \\\n\t  done; \\\n\tdone\n"
	fz := MakeGoTests("Makefile", loop)
	require.Len(t, fz, 1)
	require.True(t, fz[0].Generated)
	require.Equal(t, "^$", fz[0].Flags["run"])
}

// Patterns split as the testing package splits them, and the patterns
// derived from them select what CheckRuns says.
func TestPatterns(t *testing.T) {
	require.Equal(t, [][]string{{"Library", "mobile-spikes$"}}, splitPattern("Library/mobile-spikes$"))
	require.Equal(t, [][]string{{"A"}, {"B", "c"}}, splitPattern("A|B/c"))
	require.Equal(t, [][]string{{"Test(Session|Library)Speed$"}}, splitPattern("Test(Session|Library)Speed$"))
	require.Equal(t, [][]string{{"[/|]x", "y"}}, splitPattern("[/|]x/y"))
	require.Equal(t, "(?:A)|(?:B)", topLevel("A|B/c"))
	tests := func(first string) []string {
		return map[string][]string{"B": {"TestB"}, "C": {"TestC1", "TestC2"}}[first]
	}
	require.Nil(t, emptiedFor("A|B", tests))
	require.Nil(t, emptiedFor("X/y", tests), "no test runs subtests: nothing to run")
	require.Equal(t, []string{"^(TestB)$/^$", "^(TestC1|TestC2)$/^$", "^(TestC1|TestC2)$/d/^$"}, emptiedFor("A|B/c|C/d/e", tests))
}

// fakeRunner lists fixed names and fails the runs a test sets.
type fakeRunner struct {
	names map[string][]string // by package
	fail  func(pkg string, args []string) bool
	runs  []string
}

func (f *fakeRunner) Packages(_ Build, pats []string) ([]string, error) { return pats, nil }
func (f *fakeRunner) List(_ Build, pkg, pattern string) ([]string, error) {
	re := regexp.MustCompile(pattern)
	var out []string
	for _, n := range f.names[pkg] {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	return out, nil
}
func (f *fakeRunner) Run(_ Build, pkg string, args, _ []string) (string, error) {
	f.runs = append(f.runs, pkg+" "+strings.Join(args, " "))
	if f.fail(pkg, args) {
		return "panic: runtime error: invalid memory address or nil pointer dereference", errors.New("exit status 2")
	}
	return "PASS", nil
}

// CheckRuns names the command whose pattern selects nothing, and the one
// whose selected tests crash with their subtests filtered out; a pattern
// without a subtest part is not run, a subtest pattern is run once for
// all the commands that share it, and of the tests it selects only those
// that run subtests and are not left out.
func TestCheckRuns(t *testing.T) {
	page := strings.Join([]string{
		"`go test ./lab -run 'Library/a$' -v`",
		"`go test ./lab -run 'Library/b$' -v`",
		"`go test ./lab -run Nothing`",
		"`go test ./lab -run Mobile`",
		"`go test ./lab -run '^$' -bench Speed`",
		"`go test ./lab -fuzz Parse`",
		"`go test ./lab ./netem -run Mobile`",
	}, "\n\n")
	f := &fakeRunner{
		names: map[string][]string{
			"./lab":   {"TestLibrary", "TestEstimateCountsTheLibrarysPackets", "TestLibraryPlain", "TestLibrarySlow", "TestMobile", "BenchmarkSession", "FuzzParseA", "FuzzParseB"},
			"./netem": {"TestRate"},
		},
		fail: func(_ string, args []string) bool {
			return slices.Contains(args, "-test.run=^(TestLibrary|TestEstimateCountsTheLibrarysPackets)$/^$")
		},
	}
	var got []string
	for _, p := range CheckRuns(GoTests("p.md", page, nil), f, RunOptions{Leave: "^TestLibrarySlow$", Subtests: func(_, test string) bool { return test != "TestLibraryPlain" }}) {
		got = append(got, strings.SplitN(p.String(), "\n", 2)[0])
	}
	require.Equal(t, []string{
		"p.md:5: go test ./lab -run Nothing: -run 'Nothing' selects no test in ./lab",
		"p.md:9: go test ./lab -run '^$' -bench Speed: -bench 'Speed' selects no benchmark in ./lab",
		"p.md:11: go test ./lab -fuzz Parse: -fuzz 'Parse' selects 2 fuzz tests in ./lab (FuzzParseA, FuzzParseB): go test fuzzes exactly one",
		"p.md:13: go test ./lab ./netem -run Mobile: -run 'Mobile' selects no test in ./netem",
		"p.md:1: go test ./lab -run 'Library/a$' -v (and 1 more commands like it): a test it selects does not survive the filter: ./lab's tests with -test.run=^(TestLibrary|TestEstimateCountsTheLibrarysPackets)$/^$ -test.count=1 -test.timeout=3m failed (exit status 2):",
	}, got)
	// One run for both commands, of the tests with subtests, the timing
	// one left out.
	require.Equal(t, []string{"./lab -test.run=^(TestLibrary|TestEstimateCountsTheLibrarysPackets)$/^$ -test.count=1 -test.timeout=3m"}, f.runs)
}

// A test whose subtests write a variable it declares outside them is a
// collector, whatever the write (assignment, index, field, increment);
// one whose subtests only write their own is not; a file for another
// build tag is found with its tag.
func TestCollectors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "p"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p", "a_test.go"), []byte(`package p

import "testing"

func TestKeeps(t *testing.T) {
	got := map[string]int{}
	n := 0
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) { got[name] = 1; n++ })
	}
	_ = got["a"] + n
}

func TestOwn(t *testing.T) {
	t.Run("x", func(t *testing.T) {
		v := 0
		v = 1
		_ = v
	})
}
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p", "b_test.go"), []byte(`//go:build jobs

package p

import "testing"

func TestTagged(t *testing.T) {
	var r *int
	t.Run("x", func(t *testing.T) { r = new(int) })
	_ = *r
}
`), 0o644))
	cs, err := Collectors(dir)
	require.NoError(t, err)
	require.Equal(t, []Collector{
		{Pkg: "./p", File: "p/a_test.go", Name: "TestKeeps", Line: 5, Vars: []string{"got", "n"}},
		{Pkg: "./p", File: "p/b_test.go", Name: "TestTagged", Line: 7, Tags: "jobs", Vars: []string{"r"}},
	}, cs)

	f := &fakeRunner{fail: func(_ string, args []string) bool { return slices.Contains(args, "-test.run=^TestTagged$/^$") }}
	var got []string
	for _, p := range CheckCollectors(append(cs, Collector{Pkg: "./p", Name: "TestSlow"}), f, RunOptions{Leave: "^TestSlow$"}) {
		got = append(got, strings.SplitN(p.String(), "\n", 2)[0])
	}
	require.Equal(t, []string{"p/b_test.go:7: TestTagged keeps what its subtests find (r), and with its subtests filtered out (-test.run=^TestTagged$/^$ -test.count=1 -test.timeout=3m) it failed (exit status 2): count what ran, and skip or fail saying what the filter left out:"}, got)
	require.Len(t, f.runs, 2)
}
