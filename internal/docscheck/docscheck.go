// Package docscheck checks that the project's documentation still says
// everything the project does: every command and make target is shown,
// every link and quoted repository path resolves, every finding is in the
// reproduction table, the README gives both set-up commands and CI runs the
// test one, the generated tables keep their markers, and the pages and
// sections users rely on are still there. It works on the docs as text, so a
// test can remove a section and see the check fail.
//
// The go test commands the docs and the Makefile show are checked against
// the tests themselves (CheckRuns): each -run, -bench and -fuzz pattern
// selects something, and the tests a subtest pattern selects survive the
// filter; so does every test that keeps what its subtests find
// (CheckCollectors).
package docscheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/nuvirahub/latencylab/internal/docregion"
)

// Docs is the documentation as text.
type Docs struct {
	// Files holds each Markdown file by its path from the repository's
	// root (README.md, docs/*.md and the other guides).
	Files map[string]string
	// Exists says whether a path from the root exists; Glob lists what a
	// pattern matches.
	Exists func(path string) bool
	Glob   func(pattern string) []string
}

// Want is what the documentation must hold.
type Want struct {
	// Commands are the lab command's subcommands; each must appear as
	// "lab NAME" (e.g. go run ./cmd/lab NAME).
	Commands []string
	// Targets are the Makefile's targets; each must appear as "make NAME".
	Targets []string
	// FindingIDs must each have a row in Table.
	FindingIDs []string
	// Table is the region that holds the reproduction table.
	Table docregion.Region
	// Regions are the generated regions whose markers must exist.
	Regions []docregion.Region
	// Pages must exist and be linked from the README; Sections lists the
	// headings (without #) each must keep.
	Pages    []string
	Sections map[string][]string
	// SetUp are the README's two set-up commands, the main job's and the
	// tests'; CI is .ci/run's text, which must run SetUp[1] as a line.
	SetUp [2]string
	CI    string
}

// Problem is one thing the docs lack, in a file where one is to blame.
type Problem struct {
	File, Msg string
}

func (p Problem) String() string {
	if p.File == "" {
		return p.Msg
	}
	return p.File + ": " + p.Msg
}

// Check returns every problem found, in a stable order.
func Check(d Docs, w Want) []Problem {
	var ps []Problem
	add := func(file, format string, args ...any) {
		ps = append(ps, Problem{file, fmt.Sprintf(format, args...)})
	}
	files := slices.Sorted(maps.Keys(d.Files))
	all := strings.Join(mapValues(d.Files, files), "\n")

	for _, c := range w.Commands {
		if !regexp.MustCompile(`\blab ` + regexp.QuoteMeta(c) + `\b`).MatchString(all) {
			add("", "the command lab %s appears in no doc (README.md, docs/): show an example a user can paste", c)
		}
	}
	for _, t := range w.Targets {
		if !regexp.MustCompile(`\bmake ` + regexp.QuoteMeta(t) + `\b`).MatchString(all) {
			add("", "the make target %s appears in no doc: show make %s with what it does", t, t)
		}
	}

	for _, f := range files {
		text := d.Files[f]
		for _, l := range links(text) {
			if p := checkLink(d, f, l); p != "" {
				add(f, "%s", p)
			}
		}
		for _, q := range quotedPaths(text) {
			if !q.resolves(d, f) {
				add(f, "quotes the repository path %s, which does not exist", q.path)
			}
		}
	}

	if text, ok := d.Files[w.Table.File]; !ok {
		add(w.Table.File, "missing: it holds the reproduction table")
	} else if i, j, err := w.Table.Find(text); err == nil {
		for _, id := range w.FindingIDs {
			if !strings.Contains(text[i:j], "| "+id+" |") {
				add(w.Table.File, "finding %s has no row in the reproduction table (make readme writes it)", id)
			}
		}
	}
	for _, r := range w.Regions {
		text, ok := d.Files[r.File]
		if !ok {
			add(r.File, "missing: it holds a generated table")
			continue
		}
		if _, _, err := r.Find(text); err != nil {
			add("", "%v", err)
		}
	}

	readme := d.Files["README.md"]
	for _, c := range w.SetUp {
		if !strings.Contains(codeText(readme), c) {
			add("README.md", "does not show the set-up command %q in a code block", c)
		}
	}
	if !slices.Contains(lines(w.CI), w.SetUp[1]) {
		add(".ci/run", "does not run the README's test command %q as a line of its own", w.SetUp[1])
	}

	readmeLinks := map[string]bool{}
	for _, l := range links(readme) {
		readmeLinks[strings.SplitN(l, "#", 2)[0]] = true
	}
	for _, p := range w.Pages {
		text, ok := d.Files[p]
		if !ok {
			add(p, "missing: the docs page is gone")
			continue
		}
		if !readmeLinks[p] {
			add("README.md", "does not link the page %s", p)
		}
		have := headings(text)
		for _, h := range w.Sections[p] {
			if !slices.Contains(have, h) {
				add(p, "the section %q is gone", h)
			}
		}
	}
	return ps
}

// Load reads the documentation of the repository at root: README.md,
// docs/*.md (and docs/own-scenarios/*.md) and the guides beside the code.
func Load(root string) (Docs, error) {
	d := Docs{
		Files: map[string]string{},
		Exists: func(p string) bool {
			_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
			return err == nil
		},
		Glob: func(pattern string) []string {
			m, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
			return m
		},
	}
	names := []string{"README.md", "scenarios/FORMAT.md", "reports/SCHEMA.md", "grafana/README.md"}
	for _, dir := range []string{"docs", "docs/own-scenarios"} {
		docs, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*.md"))
		if err != nil {
			return d, err
		}
		for _, p := range docs {
			names = append(names, dir+"/"+filepath.Base(p))
		}
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
		if err != nil {
			return d, err
		}
		d.Files[n] = string(b)
	}
	return d, nil
}

// Commands lists the lab command's subcommands: the cases of the switch on
// os.Args[1] in its main.go, less the ones that ask for help.
func Commands(mainGo string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), mainGo, nil, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		cc, ok := n.(*ast.CaseClause)
		if !ok {
			return true
		}
		for _, e := range cc.List {
			lit, ok := e.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && !strings.HasPrefix(s, "-") && s != "help" {
				out = append(out, s)
			}
		}
		return true
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no subcommand found in a switch", mainGo)
	}
	return out, nil
}

var makeTarget = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):(?:[^=]|$)`)

// Targets lists a Makefile's targets.
func Targets(makefile string) []string {
	var out []string
	for _, m := range makeTarget.FindAllStringSubmatch(makefile, -1) {
		out = append(out, m[1])
	}
	return out
}

var (
	fence      = regexp.MustCompile("(?ms)^```.*?^```")
	inlineCode = regexp.MustCompile("`([^`\n]+)`")
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	dotPath    = regexp.MustCompile(`(?:^|\s)(\./[A-Za-z0-9_./-]+)`)
)

// links returns the targets of the Markdown links and images in text,
// outside code.
func links(text string) []string {
	var out []string
	prose := inlineCode.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
	for _, m := range link.FindAllStringSubmatch(prose, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkLink says what is wrong with a link from file, or "".
func checkLink(d Docs, file, l string) string {
	if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
		return ""
	}
	target, anchor, _ := strings.Cut(l, "#")
	p := file
	if target != "" {
		p = path.Clean(path.Join(path.Dir(file), target))
		if strings.HasPrefix(p, "../") {
			return "" // beside the repository (../shared): not ours to check
		}
		if !d.Exists(p) {
			return fmt.Sprintf("links %s, which does not exist", l)
		}
	}
	if anchor == "" || !strings.HasSuffix(p, ".md") {
		return ""
	}
	text, ok := d.Files[p]
	if !ok {
		return ""
	}
	for _, h := range headings(text) {
		if slug(h) == anchor {
			return ""
		}
	}
	return fmt.Sprintf("links %s, but %s has no heading #%s", l, p, anchor)
}

// quoted is a repository path quoted in the docs. A loose one is inline
// code that merely looks like a path: it counts only when its first element
// is in the repository (testing/synctest is a Go package, not ours).
type quoted struct {
	path  string
	loose bool
}

// quotedPaths returns the repository paths quoted in code: inline code
// that is one path, and the ./paths of commands. What commands write
// (out/, make dist's dist/) is not the repository's.
func quotedPaths(text string) []quoted {
	var out []quoted
	for _, m := range inlineCode.FindAllStringSubmatch(text, -1) {
		s := m[1]
		if !strings.ContainsAny(s, " \t$<>{}=:") && strings.Contains(s, "/") &&
			!strings.HasPrefix(s, "out/") && !strings.HasPrefix(s, "dist/") && !strings.HasPrefix(s, "../") {
			out = append(out, quoted{strings.TrimSuffix(s, "/"), true})
		}
	}
	for _, code := range append(fence.FindAllString(text, -1), inlineCodes(text)...) {
		for _, m := range dotPath.FindAllStringSubmatch(code, -1) {
			p := strings.TrimSuffix(strings.TrimSuffix(m[1], "..."), "/")
			if p != "." && p != "" {
				out = append(out, quoted{strings.TrimPrefix(p, "./"), false})
			}
		}
	}
	return out
}

func inlineCodes(text string) []string {
	var out []string
	for _, m := range inlineCode.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		out = append(out, m[1])
	}
	return out
}

// resolves says whether the path exists, from the repository's root or
// from the quoting file's folder; a pattern must match something.
func (q quoted) resolves(d Docs, file string) bool {
	if strings.HasPrefix(q.path, "/") {
		return true // a URL path (/metrics), not a file
	}
	for _, p := range []string{q.path, path.Join(path.Dir(file), q.path)} {
		if first, _, _ := strings.Cut(p, "/"); q.loose && !d.Exists(first) {
			continue
		}
		if strings.ContainsAny(p, "*?[") {
			if len(d.Glob(p)) > 0 {
				return true
			}
		} else if d.Exists(p) {
			return true
		}
	}
	// A loose path whose first element is nowhere in the repository is
	// not a repository path at all.
	first, _, _ := strings.Cut(q.path, "/")
	return q.loose && !d.Exists(first) && !d.Exists(path.Join(path.Dir(file), first))
}

// headings returns the Markdown headings' texts, outside code blocks.
func headings(text string) []string {
	var out []string
	for _, l := range lines(fence.ReplaceAllString(text, "")) {
		if h, ok := strings.CutPrefix(l, "#"); ok {
			out = append(out, strings.TrimSpace(strings.TrimLeft(h, "#")))
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, spaces to hyphens,
// punctuation other than hyphens and underscores dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// codeText is what text shows as code: its fenced blocks.
func codeText(text string) string { return strings.Join(fence.FindAllString(text, -1), "\n") }

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

func mapValues(m map[string]string, keys []string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}
