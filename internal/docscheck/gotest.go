package docscheck

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// GoTest is one go test command the docs or the Makefile show, read the
// way the go command reads it.
type GoTest struct {
	// File and Line say where it is shown; Text is the command as shown,
	// on one line.
	File string
	Line int
	Text string
	// Env holds the NAME=value words before go test.
	Env []string
	// Dir is -C's directory ("" for the repository's root), Tags -tags's
	// value, Pkgs the packages as given ("." when none is).
	Dir, Tags string
	Pkgs      []string
	// Flags holds the filters given: "run", "skip", "bench" and "fuzz",
	// each by the value the go command passes on.
	Flags map[string]string
	// Short is -short.
	Short bool
	// Args are the flags the go command hands the test binary as they
	// are (the package's own, such as -sessionspeed), up to -args.
	Args []string
	// Unresolved names each part (a flag, "packages") that holds a
	// variable neither the shell line nor the Makefile defines.
	Unresolved []string
	// Generated says that a filter or a package comes from the line's own
	// loop (the Makefile's fuzz stage runs each fuzz test it finds in
	// the source): it selects what it was made from.
	Generated bool
}

func (c GoTest) where() string { return fmt.Sprintf("%s:%d", c.File, c.Line) }

// Package returns a package of the command as a path from the
// repository's root ("./lab"), -C's directory taken into account.
func (c GoTest) Package(p string) string {
	if c.Dir == "" || strings.HasPrefix(p, "/") {
		return p
	}
	j := strings.TrimSuffix(c.Dir, "/") + "/" + strings.TrimPrefix(p, "./")
	j = strings.TrimSuffix(strings.TrimSuffix(j, "/."), "/")
	if !strings.HasPrefix(j, "./") && !strings.HasPrefix(j, "../") {
		j = "./" + j
	}
	return j
}

// The go command's own flags: those that take a value, and the others.
// A flag it does not know goes to the test binary, and so does every
// argument after it that is not a flag (cmd/go's testflag.go).
var (
	goValueFlags = set("C", "p", "tags", "ldflags", "gcflags", "asmflags", "gccgoflags", "mod", "modfile",
		"overlay", "pgo", "pkgdir", "toolexec", "exec", "o", "coverpkg", "covermode", "installsuffix",
		"buildmode", "compiler", "vet", "bench", "benchtime", "count", "cpu", "fuzz", "fuzztime",
		"fuzzminimizetime", "list", "parallel", "run", "skip", "timeout", "shuffle", "blockprofile",
		"blockprofilerate", "coverprofile", "cpuprofile", "memprofile", "memprofilerate", "mutexprofile",
		"mutexprofilefraction", "outputdir", "trace")
	goBoolFlags = set("a", "n", "x", "v", "race", "msan", "asan", "trimpath", "work", "linkshared",
		"buildvcs", "cover", "json", "c", "i", "modcacherw", "benchmem", "failfast", "short", "fullpath", "artifacts")
	filterFlags = set("run", "skip", "bench", "fuzz")
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// parseGoTest reads words (a simple shell command) as go test does, or
// returns false if they are not a go test command. Before go test may
// come NAME=value words, sudo, time and the shell's do, then, else and !.
func parseGoTest(words []word) (GoTest, bool) {
	var c GoTest
	i := 0
	for ; i < len(words); i++ {
		w := words[i].s
		switch {
		case envWord.MatchString(w):
			c.Env = append(c.Env, w)
		case w == "sudo" || w == "-E" || w == "time" || w == "do" || w == "then" || w == "else" || w == "!":
		default:
			goto cmd
		}
	}
cmd:
	if i+1 >= len(words) || words[i].s != "go" || words[i+1].s != "test" {
		return c, false
	}
	c.Flags = map[string]string{}
	unresolved := map[string]bool{}
	args := words[i+2:]
	pkgsDone := false
	for j := 0; j < len(args); j++ {
		a := args[j]
		if a.s == "-args" || a.s == "--args" {
			break
		}
		if !strings.HasPrefix(a.s, "-") || a.s == "-" {
			if pkgsDone {
				// After a flag the go command does not know, the rest
				// is the test binary's.
				for _, r := range args[j:] {
					if r.s == "-args" || r.s == "--args" {
						break
					}
					c.Args = append(c.Args, r.s)
				}
				break
			}
			c.Pkgs = append(c.Pkgs, a.s)
			if a.unresolved {
				unresolved["packages"] = true
			}
			c.Generated = c.Generated || a.generated
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a.s, "-"), "=")
		valueWord := a
		switch {
		case goValueFlags[name]:
			if !hasValue {
				if j+1 >= len(args) {
					// "go test -bench" in prose names the flag: no
					// command to run.
					return c, false
				}
				j++
				value, valueWord = args[j].s, args[j]
			}
			switch name {
			case "C":
				c.Dir = value
			case "tags":
				c.Tags = value
			}
			if filterFlags[name] {
				c.Flags[name] = value
				if valueWord.unresolved {
					unresolved["-"+name] = true
				}
				c.Generated = c.Generated || valueWord.generated
			}
		case goBoolFlags[name]:
			if name == "short" && value != "false" {
				c.Short = true
			}
		default:
			pkgsDone = true
			c.Args = append(c.Args, a.s)
		}
	}
	if len(c.Pkgs) == 0 {
		c.Pkgs = []string{"."}
	}
	c.Unresolved = slices.Sorted(maps.Keys(unresolved))
	return c, true
}

var envWord = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// word is a shell word after quote removal; unresolved says that it held
// a variable or a command substitution that could not be expanded.
type word struct {
	s          string
	unresolved bool
	// generated says that it held a variable of the line's own loop
	// (for NAME in ...): a value made when the line runs.
	generated bool
}

// shellCommands splits a shell line into its simple commands (at &&, ||,
// |, ; and &) and each into words, as sh would: quotes removed, $NAME,
// ${NAME} and $(NAME) expanded from vars (split into words outside double
// quotes), redirections and comments dropped.
func shellCommands(line string, vars map[string]string) [][]word {
	var cmds [][]word
	var cur []word
	var w strings.Builder
	inWord, unres, gen, skipNext := false, false, false, false
	loops := map[string]bool{}
	for _, m := range loopVar.FindAllStringSubmatch(line, -1) {
		loops[m[1]] = true
	}
	endWord := func() {
		if inWord {
			if skipNext {
				skipNext = false
			} else {
				cur = append(cur, word{w.String(), unres && !gen, gen})
			}
		}
		w.Reset()
		inWord, unres, gen = false, false, false
	}
	endCmd := func() {
		endWord()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	// expand reads a $ expansion at line[i] (the $) and returns its value,
	// whether it resolved, and the index after it.
	expand := func(i int) (string, bool, int, bool) {
		rest := line[i+1:]
		var name string
		var n int
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "", false, len(line), true
			}
			name, n = rest[1:end], end+1
		case strings.HasPrefix(rest, "("):
			// The matching parenthesis, quoted text skipped.
			depth, end, quote := 0, -1, byte(0)
			for k := 0; k < len(rest) && end < 0; k++ {
				switch r := rest[k]; {
				case quote != 0:
					if r == quote {
						quote = 0
					}
				case r == '\'' || r == '"':
					quote = r
				case r == '\\':
					k++
				case r == '(':
					depth++
				case r == ')':
					if depth--; depth == 0 {
						end = k
					}
				}
			}
			if end < 0 {
				return "", false, len(line), true
			}
			name, n = rest[1:end], end+1
		default:
			m := varName.FindString(rest)
			if m == "" {
				return "$", true, i + 1, false // a literal dollar
			}
			name, n = m, len(m)
		}
		if loops[name] {
			gen = true
		}
		v, ok := vars[name]
		return v, ok, i + 1 + n, true
	}
	for i := 0; i < len(line); {
		ch := line[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			endWord()
			i++
		case ch == '#' && !inWord:
			i = len(line)
		case ch == '\'':
			inWord = true
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				end = len(line) - i - 1
			}
			w.WriteString(line[i+1 : i+1+end])
			i += end + 2
		case ch == '"':
			inWord = true
			i++
			for i < len(line) && line[i] != '"' {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
					w.WriteByte(line[i+1])
					i += 2
				case line[i] == '$':
					v, ok, next, isVar := expand(i)
					w.WriteString(v)
					if isVar && !ok {
						unres = true
					}
					i = next
				default:
					w.WriteByte(line[i])
					i++
				}
			}
			i++
		case ch == '\\':
			inWord = true
			if i+1 < len(line) {
				w.WriteByte(line[i+1])
			}
			i += 2
		case ch == '$':
			v, ok, next, isVar := expand(i)
			i = next
			if !isVar {
				inWord = true
				w.WriteString(v)
				break
			}
			if !ok {
				inWord, unres = true, true
				break
			}
			// Unquoted, the value splits into words.
			fields := strings.Fields(v)
			for k, f := range fields {
				if k > 0 {
					endWord()
				}
				inWord = true
				w.WriteString(f)
			}
			if len(fields) > 0 && strings.ContainsAny(v[len(v)-1:], " \t\n") {
				endWord()
			}
		case ch == '&' || ch == '|' || ch == ';':
			endCmd()
			i++
			if i < len(line) && (line[i] == '&' || line[i] == '|') {
				i++
			}
		case ch == '>' || ch == '<':
			// A redirection: a file descriptor's number before it is not
			// a word, and neither is its target.
			if inWord && allDigits(w.String()) {
				w.Reset()
				inWord = false
			}
			endWord()
			i++
			if i < len(line) && line[i] == '>' {
				i++
			}
			if i < len(line) && line[i] == '&' {
				for i++; i < len(line) && (line[i] >= '0' && line[i] <= '9' || line[i] == '-'); i++ {
				}
				break
			}
			skipNext = true
		default:
			inWord = true
			w.WriteByte(ch)
			i++
		}
	}
	endCmd()
	return cmds
}

var (
	varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)
	loopVar = regexp.MustCompile(`\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b`)
)

func allDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// codeLine is a piece of code the docs show, with the line it starts on.
type codeLine struct {
	line int
	text string
}

var fenceLine = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([A-Za-z0-9_+-]*)")

// shellCode returns what a Markdown page shows as shell: each logical
// line of its fenced blocks (continued lines joined, a "$ " prompt
// removed), less blocks in another language (go, yaml, ...), and each
// inline code span, a span over several lines made one and a table's
// escaped \| unescaped.
func shellCode(text string) []codeLine {
	var out []codeLine
	lines := strings.Split(text, "\n")
	var prose []codeLine // the lines outside fenced blocks
	for i := 0; i < len(lines); i++ {
		m := fenceLine.FindStringSubmatch(lines[i])
		if m == nil {
			prose = append(prose, codeLine{i + 1, lines[i]})
			continue
		}
		fence, lang := m[1], m[2]
		shell := lang == "" || lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
		var pending *codeLine
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimSpace(l); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				break
			}
			if !shell {
				continue
			}
			if pending != nil {
				pending.text += " " + strings.TrimSpace(l)
			} else {
				t := strings.TrimSpace(l)
				t = strings.TrimPrefix(t, "$ ")
				pending = &codeLine{i + 1, t}
			}
			if strings.HasSuffix(pending.text, "\\") {
				pending.text = strings.TrimSuffix(pending.text, "\\")
				continue
			}
			out = append(out, *pending)
			pending = nil
		}
		if pending != nil {
			out = append(out, *pending)
		}
		prose = append(prose, codeLine{i + 1, ""}) // the fence ends a paragraph
	}
	// Inline code: a span lies within a paragraph (no blank line), and
	// within one row of a table.
	var block []codeLine
	flush := func() {
		out = append(out, codeSpans(block)...)
		block = nil
	}
	for _, l := range prose {
		t := strings.TrimSpace(l.text)
		switch {
		case t == "":
			flush()
		case strings.HasPrefix(t, "|"):
			flush()
			block = []codeLine{l}
			flush()
		default:
			block = append(block, l)
		}
	}
	flush()
	return out
}

// codeSpans returns the code spans of a paragraph's lines, as CommonMark
// reads them: a run of backticks opens a span that the next run of as
// many closes; line ends in it are spaces.
func codeSpans(block []codeLine) []codeLine {
	if len(block) == 0 {
		return nil
	}
	var text strings.Builder
	var starts []int // the offset at which each line starts
	for k, l := range block {
		if k > 0 {
			text.WriteByte('\n')
		}
		starts = append(starts, text.Len())
		text.WriteString(l.text)
	}
	s := text.String()
	table := strings.HasPrefix(strings.TrimSpace(s), "|")
	lineAt := func(off int) int {
		k, _ := slices.BinarySearch(starts, off+1)
		return block[k-1].line
	}
	var out []codeLine
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		open := i
		i += n
		closed := -1
		for j := i; j < len(s); {
			if s[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(s) && s[j+m] == '`' {
				m++
			}
			if m == n {
				closed = j
				break
			}
			j += m
		}
		if closed < 0 {
			continue // a literal run of backticks
		}
		code := strings.ReplaceAll(s[i:closed], "\n", " ")
		if table {
			code = strings.ReplaceAll(code, `\|`, "|")
		}
		out = append(out, codeLine{lineAt(open), strings.TrimSpace(code)})
		i = closed + n
	}
	return out
}

// GoTests returns the go test commands a Markdown page shows (in shell
// blocks and in inline code), their variables taken from vars (the
// Makefile's, which the docs quote as $NAME).
func GoTests(file, text string, vars map[string]string) []GoTest {
	var out []GoTest
	for _, cl := range shellCode(text) {
		if !strings.Contains(cl.text, "go test") {
			continue
		}
		for _, words := range shellCommands(cl.text, vars) {
			if c, ok := parseGoTest(words); ok {
				c.File, c.Line, c.Text = file, cl.line, cl.text
				out = append(out, c)
			}
		}
	}
	return out
}

var (
	makeVar    = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|:=|=)\s*(.*)$`)
	makeRef    = regexp.MustCompile(`\$[({]([^(){}]*)[)}]`)
	makeAbsArg = regexp.MustCompile(`^abspath\s+(.*)$`)
)

// MakeVars returns a Makefile's variables, each expanded as make would
// and then as the shell receives it ($$ made $).
func MakeVars(makefile string) map[string]string {
	raw := map[string]string{}
	for _, m := range makeVar.FindAllStringSubmatch(makefile, -1) {
		raw[m[1]] = strings.TrimSpace(m[3])
	}
	out := map[string]string{}
	for k := range raw {
		out[k] = strings.ReplaceAll(expandMake(raw[k], raw, 0), "$$", "$")
	}
	return out
}

// expandMake expands a Makefile's $(NAME) and ${NAME} references and
// $(abspath X), keeping $$ and what it cannot expand.
func expandMake(s string, raw map[string]string, depth int) string {
	if depth > 20 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$$") {
			b.WriteString("$$")
			i += 2
			continue
		}
		if s[i] != '$' || i+1 >= len(s) || (s[i+1] != '(' && s[i+1] != '{') {
			b.WriteByte(s[i])
			i++
			continue
		}
		// Find the matching close, references inside included.
		open, close := s[i+1], byte(')')
		if open == '{' {
			close = '}'
		}
		depthP, end := 0, -1
		for k := i + 1; k < len(s); k++ {
			if s[k] == open {
				depthP++
			} else if s[k] == close {
				if depthP--; depthP == 0 {
					end = k
					break
				}
			}
		}
		if end < 0 {
			b.WriteString(s[i:])
			break
		}
		inner := expandMake(s[i+2:end], raw, depth+1)
		switch v, ok := raw[inner]; {
		case ok:
			b.WriteString(expandMake(v, raw, depth+1))
		case makeAbsArg.MatchString(inner):
			b.WriteString(makeAbsArg.FindStringSubmatch(inner)[1])
		default:
			b.WriteString("$(" + inner + ")")
		}
		i = end + 1
	}
	return b.String()
}

// MakeGoTests returns the go test commands of a Makefile's recipes, each
// expanded as make would run it.
func MakeGoTests(file, makefile string) []GoTest {
	raw := map[string]string{}
	for _, m := range makeVar.FindAllStringSubmatch(makefile, -1) {
		raw[m[1]] = strings.TrimSpace(m[3])
	}
	var out []GoTest
	lines := strings.Split(makefile, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "\t") {
			continue
		}
		start, text := i+1, strings.TrimSpace(lines[i])
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, "\\") + " " + strings.TrimSpace(lines[i])
		}
		text = strings.TrimLeft(text, "@-+")
		if !strings.Contains(text, "go test") {
			continue
		}
		shown := text
		text = strings.ReplaceAll(expandMake(text, raw, 0), "$$", "$")
		for _, words := range shellCommands(text, nil) {
			if c, ok := parseGoTest(words); ok {
				c.File, c.Line, c.Text = file, start, shown
				out = append(out, c)
			}
		}
	}
	return out
}

// splitPattern splits a -run, -skip or -bench pattern the way the testing
// package does: into alternatives at each | outside brackets and
// parentheses, and each into its elements at each / (one per level of
// subtests).
func splitPattern(s string) [][]string {
	var alts [][]string
	var elems []string
	brackets, parens := 0, 0
	for i := 0; i < len(s); {
		switch s[i] {
		case '[':
			brackets++
		case ']':
			if brackets--; brackets < 0 {
				brackets = 0
			}
		case '(':
			if brackets == 0 {
				parens++
			}
		case ')':
			if brackets == 0 {
				parens--
			}
		case '\\':
			i++
		case '/', '|':
			if brackets == 0 && parens == 0 {
				elems = append(elems, s[:i])
				if s[i] == '|' {
					alts = append(alts, elems)
					elems = nil
				}
				s = s[i+1:]
				i = 0
				continue
			}
		}
		i++
	}
	return append(alts, append(elems, s))
}

// topLevel is the pattern that selects the top-level tests a -run pattern
// runs: the first element of each alternative, for -list, which matches
// its whole pattern against top-level names.
func topLevel(pattern string) string {
	var firsts []string
	for _, alt := range splitPattern(pattern) {
		firsts = append(firsts, "(?:"+alt[0]+")")
	}
	return strings.Join(firsts, "|")
}
