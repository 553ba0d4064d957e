package record

import (
	"bytes"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// runTool runs a program that makes a kind's files (ffmpeg), with the end
// of its standard error in the error when it fails.
func runTool(e *env, name string, args ...string) error {
	var stderr tail
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	cmd.Dir = e.dir
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("record: %s %s: %w; its standard error ends:\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

// pageStyle is the pages' shared look: a system sans-serif on white, as
// most of what is read on a remote desktop is.
const pageStyle = `body{margin:0;font-family:"DejaVu Sans",sans-serif;color:#222;background:#fff}
h1,h2{font-family:"DejaVu Serif",serif;color:#124}`

// documentHTML is a long text document: a title, sections of seeded
// paragraphs, a few lists and a table, in a reading column.
func documentHTML(rng *rand.Rand) []byte {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=utf-8><title>Report</title><style>" + pageStyle +
		`article{max-width:780px;margin:40px auto;line-height:1.55;font-size:16px} table{border-collapse:collapse} td,th{border:1px solid #999;padding:4px 10px}</style></head><body><article>`)
	fmt.Fprintf(&b, "<h1>%s</h1>", html.EscapeString(sentence(rng, 6)))
	for sec := range 24 {
		fmt.Fprintf(&b, "<h2>%d. %s</h2>", sec+1, html.EscapeString(sentence(rng, 4)))
		for range 3 + rng.IntN(3) {
			b.WriteString("<p>")
			for range 4 + rng.IntN(5) {
				b.WriteString(html.EscapeString(sentence(rng, 8+rng.IntN(12))) + ". ")
			}
			b.WriteString("</p>")
		}
		switch rng.IntN(4) {
		case 0:
			b.WriteString("<ul>")
			for range 3 + rng.IntN(4) {
				fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(sentence(rng, 5+rng.IntN(6))))
			}
			b.WriteString("</ul>")
		case 1:
			b.WriteString("<table><tr><th>Item</th><th>Q1</th><th>Q2</th><th>Q3</th></tr>")
			for range 4 + rng.IntN(4) {
				fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%d</td><td>%d</td></tr>", vocabulary[rng.IntN(len(vocabulary))],
					rng.IntN(1000), rng.IntN(1000), rng.IntN(1000))
			}
			b.WriteString("</table>")
		}
	}
	b.WriteString("</article></body></html>")
	return []byte(b.String())
}

// writeWebPage writes a web page in three columns of cards, each with a
// photo-like picture, a headline and a teaser, beside a sidebar of links.
func writeWebPage(e *env) error {
	const pictures = 12
	for i := range pictures {
		if err := writePNG(filepath.Join(e.dir, fmt.Sprintf("pic-%d.png", i+1)), photo(e.rng, 320, 180, 0)); err != nil {
			return err
		}
	}
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=utf-8><title>News</title><style>" + pageStyle + `
header{background:#1d3557;color:#fff;padding:18px 32px;font-size:26px;font-weight:bold}
nav{background:#e9eef5;padding:10px 32px;font-size:15px} nav a{margin-right:22px;color:#1d3557}
main{display:flex;gap:24px;padding:24px 32px} .grid{flex:3;display:grid;grid-template-columns:repeat(3,1fr);gap:20px}
.card{border:1px solid #ddd;border-radius:6px;overflow:hidden;background:#fafafa} .card img{width:100%;display:block}
.card h3{font-size:17px;margin:10px 12px 4px} .card p{font-size:14px;line-height:1.45;margin:0 12px 12px;color:#444}
aside{flex:1;font-size:14px;line-height:1.7} aside h4{margin:0 0 8px;border-bottom:2px solid #1d3557}
footer{background:#222;color:#bbb;padding:30px 32px;font-size:13px}</style></head><body>`)
	fmt.Fprintf(&b, "<header>%s</header><nav>", html.EscapeString(sentence(e.rng, 3)))
	for range 7 {
		fmt.Fprintf(&b, "<a href=#>%s</a>", vocabulary[e.rng.IntN(len(vocabulary))])
	}
	b.WriteString("</nav><main><div class=grid>")
	// A picture on every other card, as a news page's teasers go.
	for i := range 2 * pictures {
		img := ""
		if i%2 == 0 {
			img = fmt.Sprintf("<img src=pic-%d.png>", i/2+1)
		}
		fmt.Fprintf(&b, "<div class=card>%s<h3>%s</h3><p>%s. %s.</p></div>", img,
			html.EscapeString(sentence(e.rng, 5)), html.EscapeString(sentence(e.rng, 14)), html.EscapeString(sentence(e.rng, 10)))
	}
	b.WriteString("</div><aside>")
	for range 6 {
		fmt.Fprintf(&b, "<h4>%s</h4>", html.EscapeString(sentence(e.rng, 2)))
		for range 6 {
			fmt.Fprintf(&b, "<div><a href=#>%s</a></div>", html.EscapeString(sentence(e.rng, 4)))
		}
	}
	fmt.Fprintf(&b, "</aside></main><footer>%s</footer></body></html>", html.EscapeString(sentence(e.rng, 20)))
	return os.WriteFile(filepath.Join(e.dir, "web.html"), []byte(b.String()), 0o644)
}

// formColumns are the form's columns; cellValue types a value for each in
// turn.
var formColumns = []string{"Name", "City", "Date", "Quantity", "Unit price", "Account", "Note"}

var (
	firstNames = strings.Fields("Ada Ben Chloe Dev Elena Farid Grace Hiro Ines Jonas Kira Luca Maya Noor Omar Priya")
	cities     = strings.Fields("Lisbon Oslo Lyon Porto Graz Turin Leeds Ghent Bergen Malmo Bilbao Krakow")
)

// cellValue is a seeded value for the form's cell in column col.
func cellValue(rng *rand.Rand, col int) string {
	switch col % len(formColumns) {
	case 0:
		return firstNames[rng.IntN(len(firstNames))] + " " + strings.ToUpper(string(rune('A'+rng.IntN(26)))) + "."
	case 1:
		return cities[rng.IntN(len(cities))]
	case 2:
		return fmt.Sprintf("2026-%02d-%02d", 1+rng.IntN(12), 1+rng.IntN(28))
	case 3:
		return fmt.Sprint(1 + rng.IntN(250))
	case 4:
		return fmt.Sprintf("%d.%02d", rng.IntN(900), rng.IntN(100))
	case 5:
		return fmt.Sprintf("AC-%05d", rng.IntN(100000))
	}
	return vocabulary[rng.IntN(len(vocabulary))]
}

// formHTML is a spreadsheet-like table of text inputs, the first focused.
func formHTML(rng *rand.Rand) []byte {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><meta charset=utf-8><title>Orders</title><style>" + pageStyle + `
h1{font-size:22px;margin:20px 24px} table{border-collapse:collapse;margin:0 24px}
th{background:#dde6f0;font-size:13px;padding:6px;border:1px solid #9ab;text-align:left}
td{border:1px solid #bcc;padding:0} td.n{background:#f0f3f6;font-size:12px;padding:0 6px;color:#667}
input{border:0;font-size:14px;padding:5px 6px;width:150px;font-family:inherit} input:focus{outline:2px solid #2a6fdb;background:#eef5ff}
</style></head><body>`)
	fmt.Fprintf(&b, "<h1>%s</h1><table><tr><th></th>", html.EscapeString(sentence(rng, 3)))
	for _, c := range formColumns {
		fmt.Fprintf(&b, "<th>%s</th>", c)
	}
	b.WriteString("</tr>")
	for r := range 22 {
		fmt.Fprintf(&b, "<tr><td class=n>%d</td>", r+1)
		for c := range formColumns {
			af := ""
			if r == 0 && c == 0 {
				af = " autofocus"
			}
			fmt.Fprintf(&b, "<td><input%s></td>", af)
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table></body></html>")
	return []byte(b.String())
}

// writePhotos writes n photo-like pictures of the screen's size.
func writePhotos(e *env, n int) error {
	for i := range n {
		if err := writePNG(filepath.Join(e.dir, fmt.Sprintf("photo-%d.png", i+1)), photo(e.rng, e.w, e.h, 0.006)); err != nil {
			return err
		}
	}
	return nil
}

func writePNG(path string, img image.Image) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// photo is a seeded landscape with a photograph's statistics where a
// remote desktop's encoder feels them: smooth gradients (sky, haze), hard
// irregular edges (ridges), texture (fractal noise on the hills) and a
// grain of the given strength (a fraction of full scale) everywhere, as
// in a camera's picture; the web page's pictures have none, as a
// compressed web image has little.
func photo(rng *rand.Rand, w, h int, grain float64) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	seed := rng.Uint64()
	hue := rng.Float64()
	sky0 := hsv(0.55+0.1*hue, 0.55, 0.85)  // zenith
	sky1 := hsv(0.08+0.05*hue, 0.35, 1.00) // horizon glow
	sunX, sunY, sunR := rng.Float64()*float64(w), (0.15+0.25*rng.Float64())*float64(h), float64(h)*(0.04+0.03*rng.Float64())
	const layers = 4
	var base [layers]float64
	var tint [layers][3]float64
	for l := range layers {
		base[l] = (0.45 + 0.12*float64(l) + 0.05*rng.Float64()) * float64(h)
		tint[l] = hsv(0.25+0.15*rng.Float64()+0.05*float64(l), 0.35+0.12*float64(l), 0.75-0.15*float64(l))
	}
	noise := rand.New(rand.NewPCG(seed, 7))
	for y := range h {
		for x := range w {
			fy := float64(y) / float64(h)
			c := mix(sky0, sky1, math.Pow(fy, 0.8))
			if d := math.Hypot(float64(x)-sunX, float64(y)-sunY); d < sunR*6 {
				glow := math.Exp(-d / sunR / 1.5)
				if d < sunR {
					glow = 1
				}
				c = mix(c, [3]float64{1, 0.97, 0.85}, glow)
			}
			for l := range layers {
				ridge := base[l] - float64(h)*0.18*fbm(seed+uint64(l), float64(x)/float64(w)*(2+float64(l)), 4)
				if float64(y) >= ridge {
					depth := (float64(y) - ridge) / float64(h)
					tex := fbm(seed+uint64(l)+100, float64(x)/18+float64(y)/31, 3)
					t := tint[l]
					shade := 0.85 + 0.3*tex - 0.5*depth
					c = [3]float64{t[0] * shade, t[1] * shade, t[2] * shade}
					// Haze: the far layers fade towards the horizon's colour.
					c = mix(c, sky1, 0.45*float64(layers-1-l)/layers)
				}
			}
			g := (noise.Float64()*2 - 1) * grain
			img.SetRGBA(x, y, color.RGBA{R: u8(c[0] + g), G: u8(c[1] + g), B: u8(c[2] + g), A: 255})
		}
	}
	return img
}

// fbm is fractal value noise along one axis: octaves of smoothly
// interpolated seeded values, in [0, 1).
func fbm(seed uint64, x float64, octaves int) float64 {
	var sum, amp, norm float64 = 0, 1, 0
	for o := range octaves {
		i := math.Floor(x)
		f := x - i
		f = f * f * (3 - 2*f)
		a, b := lattice(seed+uint64(o)*977, int64(i)), lattice(seed+uint64(o)*977, int64(i)+1)
		sum += amp * (a + (b-a)*f)
		norm += amp
		amp /= 2
		x *= 2.03
	}
	return sum / norm
}

// lattice is a seeded value in [0, 1) for an integer point.
func lattice(seed uint64, i int64) float64 {
	v := seed ^ uint64(i)*0x9E3779B97F4A7C15
	v ^= v >> 30
	v *= 0xBF58476D1CE4E5B9
	v ^= v >> 27
	v *= 0x94D049BB133111EB
	v ^= v >> 31
	return float64(v>>11) / (1 << 53)
}

func mix(a, b [3]float64, t float64) [3]float64 {
	t = max(0, min(1, t))
	return [3]float64{a[0] + (b[0]-a[0])*t, a[1] + (b[1]-a[1])*t, a[2] + (b[2]-a[2])*t}
}

func hsv(h, s, v float64) [3]float64 {
	h = math.Mod(h, 1) * 6
	i := math.Floor(h)
	f := h - i
	p, q, t := v*(1-s), v*(1-s*f), v*(1-s*(1-f))
	switch int(i) {
	case 0:
		return [3]float64{v, t, p}
	case 1:
		return [3]float64{q, v, p}
	case 2:
		return [3]float64{p, v, t}
	case 3:
		return [3]float64{p, q, v}
	case 4:
		return [3]float64{t, p, v}
	}
	return [3]float64{v, p, q}
}

func u8(v float64) uint8 { return uint8(max(0, min(255, math.Round(v*255)))) }
