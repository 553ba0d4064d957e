package docscheck

import (
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
	"docs/own-scenarios.md": {"Write a scenario file", "Run it: `lab test`", "Exact by default", "The exit status", "Mistakes in a file", "Read the report", "JUnit in CI", "From go test"},
	"docs/netem.md":         {"Impairments", "The order a packet meets them", "Timeline", "Seeding", "Real time and virtual time"},
	"docs/kernel.md":        {"The congestion-controller grid", "N11 half reproduces", "Media with the ABR", "Against a competing flow"},
	"docs/codecs.md":        {"Running it", "The reference run", "Where the lab's figures differ, and why", "Lossless support mode", "The model calibrated against OpenH264"},
	"docs/observability.md": {"A scenario in real time: `lab run`", "Grafana", "Metrics", "A past run in Grafana: `lab openmetrics`", "Packets", "Any program's UDP traffic: `lab proxy`"},
	"docs/reports.md":       {"Nightly and accept", "When is it a regression?", "Compare", "Sweep", "Report"},
	"docs/determinism.md":   {"What a seed fixes", "Worker processes", "Exact sessions"},
	"docs/performance.md":   {"The impairment network and QUIC", "Sessions, the suite and the jobs", "The codec lab"},
	"docs/architecture.md":  {"The packages as layers", "One session, end to end", "Where to add things", "An impairment", "A scenario field", "A measurement", "A bitrate controller"},
	"docs/reproduction.md":  {"Classes", "How the table is made"},
	"docs/testing.md":       {"The test command", "Tests that need Debian packages, or root", "Fuzz tests", "How the library's bounds were set"},
	"docs/abr.md":           {"NuviraHub's ABR", "The switches", "GCC beside it"},
	"docs/paths.md":         {"How the PCs connect", "Which path each pairing of routers takes", "Time to the first frame per fallback step"},
	"docs/security.md":      {"What listens, and where", "The proxy's API", "What the relay admits, and what it sees", "The shell: a lab, not a way out", "What needs root, and why"},
	"docs/rmcat.md":         {"The cases", "Where the lab differs from the RFC's set-up", "Criteria and the ABR's expected failures", "The two controllers side by side", "Comparing them over seeds"},
	"docs/traffic.md":       {"The kinds", "The TCP-like model", "Measurements", "A worked example: a download at home", "In the kernel mode", "Captures", "RFC 8867's test cases"},
	"docs/cluster.md":       {"The image", "The manifests", "A sweep", "A tune: ask and tell", "GitHub Actions", "What the tests check", "What was run, and what was not"},
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
