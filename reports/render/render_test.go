package render

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// pngBytes are a real 1x1 PNG, so HTML can read its size.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")

func sampleDoc() *Doc {
	return &Doc{
		Title: "Nightly <report> & co",
		Intro: []string{"Run `go test ./lab` first.\nThen read **FAIL** rows."},
		Sections: []Section{
			{
				Heading:    "Summary | all",
				Paragraphs: []string{"a|b <script>alert(1)</script> \"quoted\" a_b *c*"},
				Tables: []Table{{
					Caption: "Latency (ms)",
					Header:  []string{"scenario", "median|p95"},
					Rows:    [][]string{{"lan", "12 | 30", "extra"}, {"`a|b`"}},
				}},
				Figures: []Figure{{Name: "latency lan.png", Caption: "Latency [lan]", PNG: pngBytes}},
			},
			{Heading: "Second", Figures: []Figure{{Name: "cdf.png", Caption: "CDF", PNG: append([]byte{}, pngBytes...)}}},
		},
	}
}

func TestMarkdown(t *testing.T) {
	md := Markdown(sampleDoc())
	want := "# Nightly \\<report> & co\n\n" +
		"Run `go test ./lab` first.\\\nThen read **FAIL** rows.\n\n" +
		"## Summary \\| all\n\n" +
		"a\\|b \\<script>alert(1)\\</script> \"quoted\" a\\_b \\*c\\*\n\n" +
		"Latency (ms)\n\n" +
		"| scenario | median\\|p95 |  |\n" +
		"| --- | --- | --- |\n" +
		"| lan | 12 \\| 30 | extra |\n" +
		"| `a\\|b` |  |  |\n\n" +
		"![Latency \\[lan\\]](latency%20lan.png)\n\n" +
		"Latency \\[lan\\]\n\n" +
		"## Second\n\n" +
		"![CDF](cdf.png)\n\n" +
		"CDF\n"
	require.Equal(t, want, md)
}

// Line starts that would make Markdown structure stay text.
func TestMarkdownKeepsPlainTextPlain(t *testing.T) {
	md := Markdown(&Doc{Intro: []string{"# not a heading\n- not a list\n1. not a list\n> not a quote\n    not code", "a & b, &amp; is text, p95 < 1 s, ~x~"}})
	require.Equal(t, "\\# not a heading\\\n\\- not a list\\\n1\\. not a list\\\n\\> not a quote\\\nnot code\n\n"+
		"a & b, \\&amp; is text, p95 < 1 s, \\~x\\~\n", md)
	// Cells and headings are inline: a number or sign at their start is
	// not a list, but a # closing a heading would vanish.
	md = Markdown(&Doc{Sections: []Section{{Heading: "Issue #", Tables: []Table{{Header: []string{"139.0", "-5", "# x"}}}}}})
	require.Equal(t, "## Issue \\#\n\n| 139.0 | -5 | # x |\n| --- | --- | --- |\n", md)
	require.Empty(t, Markdown(nil))
	require.Equal(t, "Caption only\n", Markdown(&Doc{Sections: []Section{{Tables: []Table{{Caption: "Caption only"}}}}}))
}

// checkWellFormed walks the tokens: every element opened is closed in
// order (void elements excepted), so the page is not tag soup a browser
// has to guess at.
func checkWellFormed(t *testing.T, page []byte) {
	t.Helper()
	void := map[string]bool{"meta": true, "img": true, "br": true, "link": true, "hr": true, "input": true}
	z := html.NewTokenizer(bytes.NewReader(page))
	var open []string
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			require.ErrorIs(t, z.Err(), io.EOF)
			require.Empty(t, open, "elements left open")
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !void[string(name)] {
				open = append(open, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			require.NotEmpty(t, open, "</%s> closes nothing", name)
			require.Equal(t, open[len(open)-1], string(name), "</%s> closes <%s>", name, open[len(open)-1])
			open = open[:len(open)-1]
		}
	}
}

func TestHTMLIsSelfContainedAndEscaped(t *testing.T) {
	d := sampleDoc()
	page := HTML(d)
	checkWellFormed(t, page)
	require.Equal(t, page, HTML(d), "deterministic")
	require.True(t, bytes.HasPrefix(page, []byte("<!DOCTYPE html>")))

	// Nothing outside the file: no scheme, no protocol-relative URL, no
	// CSS url(). Base64 has runs of "/", so look outside the data: URIs.
	outside := stripDataURIs(strings.ToLower(string(page)))
	for _, s := range []string{"http:", "https:", "//", "url(", "@import", "<script", "<link", "<iframe", "<object", "<embed"} {
		require.NotContains(t, outside, s)
	}

	doc, err := html.Parse(bytes.NewReader(page))
	require.NoError(t, err)
	var imgs [][]byte
	var texts []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			require.NotEqual(t, atom.Script, n.DataAtom, "no script")
			for _, a := range n.Attr {
				if a.Key == "src" || a.Key == "href" {
					ok := strings.HasPrefix(a.Val, "data:image/png;base64,") || (a.Key == "href" && strings.HasPrefix(a.Val, "#"))
					require.True(t, ok, "%s=%q refers outside the file", a.Key, a.Val)
				}
			}
			if n.DataAtom == atom.Img {
				for _, a := range n.Attr {
					if a.Key == "src" {
						data, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a.Val, "data:image/png;base64,"))
						require.NoError(t, err)
						imgs = append(imgs, data)
					}
				}
				require.Contains(t, n.Attr, html.Attribute{Key: "width", Val: "1"})
			}
		}
		if n.Type == html.TextNode {
			texts = append(texts, n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	require.Equal(t, [][]byte{pngBytes, pngBytes}, imgs, "every figure, inline")
	all := strings.Join(texts, "")
	// The text reads as written: escaped, not interpreted.
	require.Contains(t, all, "Nightly <report> & co")
	require.Contains(t, all, `a|b <script>alert(1)</script> "quoted" a_b *c*`)
	require.Contains(t, all, "12 | 30")
	require.Contains(t, string(page), "<code>go test ./lab</code>")
	require.Contains(t, string(page), "<strong>FAIL</strong>")
	require.Contains(t, string(page), "<caption>Latency (ms)</caption>")
	require.Contains(t, string(page), "<figcaption>Latency [lan]</figcaption>")
	require.Contains(t, string(page), "<th>median|p95</th><th></th>", "ragged rows padded")
}

func stripDataURIs(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "data:image/png;base64,")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexByte(s, '"')
		if j < 0 {
			return b.String()
		}
		s = s[j:]
	}
}

func TestHTMLOfAnEmptyDoc(t *testing.T) {
	checkWellFormed(t, HTML(nil))
	checkWellFormed(t, HTML(&Doc{}))
	// A long report gets a table of contents linking the sections.
	d := &Doc{Title: "t"}
	for range navMin {
		d.Sections = append(d.Sections, Section{Heading: "h"})
	}
	page := HTML(d)
	checkWellFormed(t, page)
	require.Contains(t, string(page), `<li><a href="#s4">h</a></li>`)
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	d := sampleDoc()
	require.NoError(t, Write(dir, "report", d))
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	require.Equal(t, Markdown(d), string(md))
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	require.Equal(t, HTML(d), page)
	for _, name := range []string{"latency lan.png", "cdf.png"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, pngBytes, data)
	}
}

// A bad figure name is refused before anything is written.
func TestWriteRefusesBadNames(t *testing.T) {
	for name, want := range map[string]string{
		"../escape.png": "not a plain file name",
		"a/b.png":       "not a plain file name",
		"":              "has no file name",
		"report.md":     "already the Markdown document",
		"cdf.png":       `already a figure of section "Second"`,
	} {
		dir := filepath.Join(t.TempDir(), "out")
		d := sampleDoc()
		d.Sections = append(d.Sections, Section{Heading: "Bad", Figures: []Figure{{Name: name, PNG: pngBytes}}})
		err := Write(dir, "report", d)
		require.ErrorContains(t, err, want, name)
		_, statErr := os.Stat(dir)
		require.True(t, errors.Is(statErr, os.ErrNotExist), "nothing written for %q", name)
	}
	require.ErrorContains(t, Write(t.TempDir(), "a/b", &Doc{}), "not a plain file name")
	require.Error(t, Write(t.TempDir(), "r", nil))
}
