package render

import "strings"

// Text may carry two inline forms that both renderings understand, because
// reports need them and Markdown and HTML must agree on what they mean:
// `code` (a command, a flag, a file) and **strong** (a failure that must
// stand out). Anything else is literal: an unmatched backtick or pair of
// asterisks, or one whose content is empty or starts or ends with a space
// (which Markdown would not read as markup either), is plain text.

// spanKind says how a span renders.
type spanKind int

const (
	spanText spanKind = iota
	spanCode
	spanStrong
	spanBreak // a line break inside a paragraph
)

// span is a run of text of one kind.
type span struct {
	Kind spanKind
	Text string
}

// IsCode, IsStrong and IsBreak let the HTML template branch on the kind.
func (s span) IsCode() bool   { return s.Kind == spanCode }
func (s span) IsStrong() bool { return s.Kind == spanStrong }
func (s span) IsBreak() bool  { return s.Kind == spanBreak }

// parseSpans splits text into spans. With breaks, each line break becomes
// a spanBreak (paragraphs keep their lines); without, line breaks become
// spaces (a table cell or a heading is one line in Markdown).
func parseSpans(s string, breaks bool) []span {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if !breaks {
		s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
	}
	var out []span
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			out = append(out, span{Kind: spanText, Text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case s[i] == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j > 0 && !strings.Contains(s[i+1:i+1+j], "\n") {
				flush()
				out = append(out, span{Kind: spanCode, Text: s[i+1 : i+1+j]})
				i += j + 2
				continue
			}
		case strings.HasPrefix(s[i:], "**"):
			if j := strings.Index(s[i+2:], "**"); j > 0 {
				inner := s[i+2 : i+2+j]
				if strings.TrimSpace(inner) == inner && !strings.Contains(inner, "\n") {
					flush()
					out = append(out, span{Kind: spanStrong, Text: inner})
					i += j + 4
					continue
				}
			}
		case s[i] == '\n':
			flush()
			out = append(out, span{Kind: spanBreak})
			i++
			continue
		}
		text.WriteByte(s[i])
		i++
	}
	flush()
	return out
}

// plain is the text of spans without markup, for places that take no
// markup at all (an HTML title, an image's alternative text).
func plain(spans []span) string {
	var b strings.Builder
	for _, sp := range spans {
		if sp.Kind == spanBreak {
			b.WriteByte(' ')
			continue
		}
		b.WriteString(sp.Text)
	}
	return b.String()
}

// mdContext is where Markdown text stands, which decides what needs
// escaping.
type mdContext int

const (
	// mdBlock is a paragraph or a caption: the start of each line could
	// open a heading, list or quote.
	mdBlock mdContext = iota
	// mdCell is a table cell: one line of inline text, in which a | must
	// be escaped even inside a code span (GitHub splits cells before it
	// reads code spans).
	mdCell
	// mdHeading is a heading's text: inline, but a # at its end would be
	// read as the heading's closing sequence.
	mdHeading
)

// mdSpans renders spans as Markdown standing in ctx.
func mdSpans(spans []span, ctx mdContext) string {
	var b strings.Builder
	lineStart := ctx == mdBlock
	cell := ctx == mdCell
	for _, sp := range spans {
		switch sp.Kind {
		case spanText:
			b.WriteString(mdEscape(sp.Text, lineStart))
		case spanCode:
			code := sp.Text
			if cell {
				code = strings.ReplaceAll(code, "|", `\|`)
			}
			b.WriteString("`" + code + "`")
		case spanStrong:
			b.WriteString("**" + mdEscape(sp.Text, false) + "**")
		case spanBreak:
			// A backslash before the line break is CommonMark's hard
			// break, which keeps the line as the writer broke it.
			b.WriteString("\\\n")
			lineStart = true
			continue
		}
		lineStart = false
	}
	out := b.String()
	if ctx == mdHeading && strings.HasSuffix(out, "#") {
		out = out[:len(out)-1] + `\#`
	}
	return out
}

// mdEscape escapes plain text so Markdown shows it as written: the
// characters that open inline markup everywhere, and at the start of a
// line the ones that would turn it into a heading, quote, list or fence.
// It leaves alone what is literal where it stands ("p95 < 1 s", "a & b"),
// so the Markdown file stays readable as text.
func mdEscape(s string, lineStart bool) string {
	var b strings.Builder
	if lineStart {
		trimmed := strings.TrimLeft(s, " \t")
		if trimmed != s {
			// Leading spaces would make an indented code block.
			s = trimmed
		}
		if s != "" {
			switch s[0] {
			case '#', '>', '-', '+', '=':
				b.WriteByte('\\')
			}
			// "1. x" and "1) x" start ordered lists.
			if k := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); k > 0 && (s[k] == '.' || s[k] == ')') {
				b.WriteString(s[:k])
				b.WriteByte('\\')
				s = s[k:]
			}
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '*', '_', '`', '[', ']', '|', '~':
			b.WriteByte('\\')
		case '<':
			// Only a < that could open a tag, comment or autolink.
			if i+1 < len(s) && (isLetter(s[i+1]) || strings.IndexByte("/!?", s[i+1]) >= 0) {
				b.WriteByte('\\')
			}
		case '&':
			// Only an & that could start an entity ("&amp;", "&#38;").
			if j := strings.IndexByte(s[i:], ';'); j > 1 && isEntityName(s[i+1:i+j]) {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isEntityName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && (c < '0' || c > '9') && !(i == 0 && c == '#') {
			return false
		}
	}
	return true
}
