package render

import (
	"net/url"
	"strings"
)

// Markdown renders d as GitHub Markdown: the title as the one level-1
// heading, sections as level-2 headings, tables as pipe tables with the
// caption as a paragraph above, and figures as image links to their file
// names (Write puts the files there) with the caption below, since the
// alternative text is only shown when the image is missing.
func Markdown(d *Doc) string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	block := func(s string) {
		if s == "" {
			return
		}
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	if d.Title != "" {
		block("# " + mdSpans(parseSpans(d.Title, false), mdHeading))
	}
	for _, p := range d.Intro {
		block(mdParagraph(p))
	}
	for _, s := range d.Sections {
		if s.Heading != "" {
			block("## " + mdSpans(parseSpans(s.Heading, false), mdHeading))
		}
		for _, p := range s.Paragraphs {
			block(mdParagraph(p))
		}
		for _, t := range s.Tables {
			block(mdTable(t))
		}
		for _, f := range s.Figures {
			block(mdFigure(f))
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// mdParagraph renders a paragraph, its blank lines collapsed: a blank line
// would end the paragraph in Markdown but not in HTML.
func mdParagraph(p string) string {
	var lines []string
	for l := range strings.SplitSeq(strings.ReplaceAll(p, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return mdSpans(parseSpans(strings.Join(lines, "\n"), true), mdBlock)
}

// mdTable renders a pipe table; a table without cells is only its caption.
func mdTable(t Table) string {
	var b strings.Builder
	if t.Caption != "" {
		b.WriteString(mdSpans(parseSpans(t.Caption, false), mdBlock))
	}
	if t.width() == 0 {
		return b.String()
	}
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	header, rows := t.padded()
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + mdSpans(parseSpans(c, false), mdCell) + " |")
		}
		b.WriteString("\n")
	}
	row(header)
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	for _, r := range rows {
		row(r)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// mdFigure links the figure's file. The name is percent-escaped so a
// space or parenthesis cannot end the link early.
func mdFigure(f Figure) string {
	alt := plain(parseSpans(f.Caption, false))
	if alt == "" {
		alt = f.Name
	}
	link := strings.NewReplacer("(", "%28", ")", "%29").Replace(url.PathEscape(f.Name))
	s := "![" + mdEscape(alt, false) + "](" + link + ")"
	if f.Caption != "" {
		s += "\n\n" + mdSpans(parseSpans(f.Caption, false), mdBlock)
	}
	return s
}
