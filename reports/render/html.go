package render

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"html/template"
	"image/png"
)

// HTML renders d as one self-contained HTML file: the style sheet is
// inline, every figure is a data: URI, and there is no script and no
// reference to anything outside the file, so a report can be mailed,
// archived as a CI artifact or opened offline and look the same.
// Text goes through html/template, which escapes it for where it stands.
func HTML(d *Doc) []byte {
	if d == nil {
		d = &Doc{}
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, newHTMLDoc(d)); err != nil {
		// Only a bug in the template can get here (the buffer does not
		// fail); say so in the page rather than return half of it.
		return []byte("<!DOCTYPE html>\n<meta charset=\"utf-8\"><title>render error</title><p>render: " + html.EscapeString(err.Error()) + "</p>\n")
	}
	return buf.Bytes()
}

// navMin is the number of sections from which the page gets a table of
// contents: a long report (a section per scenario) needs one, a short one
// reads better without.
const navMin = 4

type htmlDoc struct {
	Title    []span
	Plain    string // the title without markup, for <title>
	Intro    [][]span
	Nav      bool
	Sections []htmlSection
}

type htmlSection struct {
	ID         string
	Heading    []span
	Paragraphs [][]span
	Tables     []htmlTable
	Figures    []htmlFigure
}

type htmlTable struct {
	Caption []span
	Header  [][]span
	Rows    [][][]span
}

type htmlFigure struct {
	Src     template.URL
	Alt     string
	Caption []span
	// Width and Height are the image's pixels, 0 when the PNG cannot be
	// read; with them the browser lays the page out before decoding.
	Width, Height int
}

func newHTMLDoc(d *Doc) htmlDoc {
	hd := htmlDoc{Title: parseSpans(d.Title, false), Nav: len(d.Sections) >= navMin}
	hd.Plain = plain(hd.Title)
	for _, p := range d.Intro {
		hd.Intro = append(hd.Intro, parseSpans(p, true))
	}
	for i, s := range d.Sections {
		hs := htmlSection{ID: fmt.Sprintf("s%d", i+1), Heading: parseSpans(s.Heading, false)}
		for _, p := range s.Paragraphs {
			hs.Paragraphs = append(hs.Paragraphs, parseSpans(p, true))
		}
		for _, t := range s.Tables {
			ht := htmlTable{Caption: parseSpans(t.Caption, false)}
			header, rows := t.padded()
			if t.width() == 0 {
				header = nil
			}
			for _, c := range header {
				ht.Header = append(ht.Header, parseSpans(c, false))
			}
			for _, r := range rows {
				var cells [][]span
				for _, c := range r {
					cells = append(cells, parseSpans(c, false))
				}
				ht.Rows = append(ht.Rows, cells)
			}
			hs.Tables = append(hs.Tables, ht)
		}
		for _, f := range s.Figures {
			hs.Figures = append(hs.Figures, newHTMLFigure(f))
		}
		hd.Sections = append(hd.Sections, hs)
	}
	return hd
}

func newHTMLFigure(f Figure) htmlFigure {
	caption := parseSpans(f.Caption, false)
	hf := htmlFigure{
		// The URI is built here from base64, whose alphabet needs no
		// escaping in an attribute; html/template would otherwise refuse
		// a data: URL as unsafe.
		Src:     template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(f.PNG)),
		Alt:     plain(caption),
		Caption: caption,
	}
	if hf.Alt == "" {
		hf.Alt = f.Name
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(f.PNG)); err == nil {
		hf.Width, hf.Height = cfg.Width, cfg.Height
	}
	return hf
}

// The style sheet: a readable column, tables that scroll sideways rather
// than overflow, figures that shrink to the window.
const css = `
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1f2328;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 1.8em; margin: 0.2em 0 0.6em; }
h2 { font-size: 1.35em; margin: 2em 0 0.6em; padding-bottom: 0.2em; border-bottom: 1px solid #d0d7de; }
p { margin: 0.5em 0; }
code { font: 0.9em ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  background: #f3f4f6; padding: 0.1em 0.3em; border-radius: 3px; }
nav ul { columns: 3 14em; padding-left: 1.2em; }
.table { overflow-x: auto; margin: 1em 0; }
table { border-collapse: collapse; font-size: 0.92em; font-variant-numeric: tabular-nums; }
caption { caption-side: top; text-align: left; font-weight: 600; padding: 0.3em 0; }
th, td { border: 1px solid #d0d7de; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
thead th { background: #f6f8fa; }
tbody tr:nth-child(even) { background: #fafbfc; }
figure { margin: 1.2em 0; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #e5e7eb; }
figcaption { color: #59636e; font-size: 0.92em; margin-top: 0.3em; }
@media print { main { max-width: none; padding: 0; } figure, table { break-inside: avoid; } }
`

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Plain}}</title>
<style>` + css + `</style>
</head>
<body>
<main>
{{if .Title}}<h1>{{template "spans" .Title}}</h1>
{{end}}{{range .Intro}}<p>{{template "spans" .}}</p>
{{end}}{{if .Nav}}<nav><ul>
{{range .Sections}}<li><a href="#{{.ID}}">{{template "spans" .Heading}}</a></li>
{{end}}</ul></nav>
{{end}}{{range .Sections}}<section id="{{.ID}}">
{{if .Heading}}<h2>{{template "spans" .Heading}}</h2>
{{end}}{{range .Paragraphs}}<p>{{template "spans" .}}</p>
{{end}}{{range .Tables}}<div class="table"><table>
{{if .Caption}}<caption>{{template "spans" .Caption}}</caption>
{{end}}{{if .Header}}<thead><tr>{{range .Header}}<th>{{template "spans" .}}</th>{{end}}</tr></thead>
{{end}}{{if .Rows}}<tbody>
{{range .Rows}}<tr>{{range .}}<td>{{template "spans" .}}</td>{{end}}</tr>
{{end}}</tbody>
{{end}}</table></div>
{{end}}{{range .Figures}}<figure>
<img src="{{.Src}}" alt="{{.Alt}}"{{if .Width}} width="{{.Width}}" height="{{.Height}}"{{end}}>
{{if .Caption}}<figcaption>{{template "spans" .Caption}}</figcaption>
{{end}}</figure>
{{end}}</section>
{{end}}</main>
</body>
</html>
{{define "spans"}}{{range .}}{{if .IsCode}}<code>{{.Text}}</code>{{else if .IsStrong}}<strong>{{.Text}}</strong>{{else if .IsBreak}}<br>{{else}}{{.Text}}{{end}}{{end}}{{end}}`))
