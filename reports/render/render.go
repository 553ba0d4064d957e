// Package render owns the lab's documents: a report is built once as a Doc
// (title, sections of paragraphs, tables and PNG figures) and rendered as
// GitHub Markdown for the repository and as one self-contained HTML file
// for a browser, so the nightly report, the compare command and the ABR
// sweep look alike and none of them writes markup by hand.
//
// Text in a Doc is plain text with two inline forms that both renderings
// understand, `code` and **strong**; nothing else is markup. HTML escapes
// every character that means something to a browser (html/template), and
// Markdown escapes what would otherwise turn into structure (a | in a
// table cell, a line break in a cell or heading, a "- " or "1. " starting
// a line, a < that would open a tag). Both renderings are deterministic:
// the same Doc gives the same bytes.
package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Doc is a report: a title, an introduction and sections in order.
type Doc struct {
	Title    string
	Intro    []string // paragraphs under the title
	Sections []Section
}

// Section is a heading followed by its paragraphs, then its tables, then
// its figures, in that order in both renderings.
type Section struct {
	Heading    string
	Paragraphs []string
	Tables     []Table
	Figures    []Figure
}

// Table is a table of text cells. Rows shorter than the header are
// padded with empty cells; a row longer than the header widens the table
// (the extra header cells are empty), because Markdown tables need every
// row to have as many cells as the header.
type Table struct {
	Caption string
	Header  []string
	Rows    [][]string
}

// Figure is a PNG image. Name is the file name Write gives it beside the
// documents and the link Markdown makes to it ("latency.png"); HTML
// carries the image itself and needs no file.
type Figure struct {
	Name    string
	Caption string
	PNG     []byte
}

// width is the table's column count: the longest of header and rows.
func (t Table) width() int {
	n := len(t.Header)
	for _, r := range t.Rows {
		n = max(n, len(r))
	}
	return n
}

// padded returns the header and rows all t.width() cells wide.
func (t Table) padded() (header []string, rows [][]string) {
	n := t.width()
	pad := func(r []string) []string {
		out := make([]string, n)
		copy(out, r)
		return out
	}
	header = pad(t.Header)
	for _, r := range t.Rows {
		rows = append(rows, pad(r))
	}
	return header, rows
}

// Write writes dir/base.md, dir/base.html and every figure's PNG, under
// its Name, beside them (the Markdown links to those files). It refuses a
// figure name that is not a plain file name, or that two figures share,
// before writing anything, so a bad Doc leaves no half-written report.
func Write(dir, base string, d *Doc) error {
	if d == nil {
		return errors.New("render: no document")
	}
	if base == "" || filepath.Base(base) != base || base == "." || base == ".." {
		return fmt.Errorf("render: document name %q is not a plain file name", base)
	}
	if err := checkFigureNames(d, base); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range d.Sections {
		for _, f := range s.Figures {
			if err := os.WriteFile(filepath.Join(dir, f.Name), f.PNG, 0o644); err != nil {
				return err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, base+".md"), []byte(Markdown(d)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, base+".html"), HTML(d), 0o644)
}

// checkFigureNames refuses names that would land outside the folder,
// overwrite each other or overwrite the documents themselves.
func checkFigureNames(d *Doc, base string) error {
	seen := map[string]string{base + ".md": "the Markdown document", base + ".html": "the HTML document"}
	for _, s := range d.Sections {
		for _, f := range s.Figures {
			switch {
			case f.Name == "" || f.Name == "." || f.Name == "..":
				return fmt.Errorf("render: section %q: figure %q has no file name", s.Heading, f.Caption)
			case strings.ContainsAny(f.Name, `/\`) || filepath.Base(f.Name) != f.Name:
				return fmt.Errorf("render: section %q: figure name %q is not a plain file name", s.Heading, f.Name)
			}
			if other, ok := seen[f.Name]; ok {
				return fmt.Errorf("render: section %q: figure name %q is already %s", s.Heading, f.Name, other)
			}
			seen[f.Name] = fmt.Sprintf("a figure of section %q", s.Heading)
		}
	}
	return nil
}
