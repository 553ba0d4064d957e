// Package plots draws the lab's report figures as PNG (gonum/plot):
// latency and bitrate over time against the network's capacity, latency
// distributions, where a frame's time goes stage by stage (as medians over
// the session, and over time), and Pareto fronts for sweeps. Every figure
// is deterministic (same input, same bytes), has its legend beside the data
// rather than over it, and turns empty input into an error or an empty plot
// that says so, never a panic.
package plots

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/nuvirahub/latencylab/lab/result"
)

// ErrNoData is returned when there is nothing at all to plot (no result,
// no series, no point), as opposed to inputs that are present but empty,
// which draw an empty plot saying "(no data)".
var ErrNoData = errors.New("plots: nothing to plot")

// Sizes: the codec bench's, so figures sit alike in a report.
const (
	dpi       = 110
	width     = 16 * vg.Centimeter
	height    = 10 * vg.Centimeter
	maxLegend = 32 // runes of a label in a legend; longer ones are cut
)

// palette gives series their colours in order (colour-blind-friendly
// Tableau 10); after ten, colours repeat with a dash pattern.
var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, // grey
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
}

var (
	grey      = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	lightGrey = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
	darkGrey  = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

// seriesStyle is the line of the i-th series.
func seriesStyle(i int) draw.LineStyle {
	st := draw.LineStyle{Color: palette[i%len(palette)], Width: vg.Points(1.5)}
	switch (i / len(palette)) % 3 {
	case 1:
		st.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	case 2:
		st.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return st
}

// lineStyle is a line of colour c, w points wide, dashed when dashes
// are given.
func lineStyle(c color.Color, w float64, dashes []vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(w), Dashes: dashes}
}

// withAlpha is c made translucent (color.RGBA is premultiplied, so the
// straight-alpha form carries the change).
func withAlpha(c color.RGBA, a uint8) color.NRGBA {
	return color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
}

// newPlot makes a plot with the report's fonts and a grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(10)
		a.Tick.Label.Font.Size = vg.Points(9)
	}
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.ThumbnailWidth = vg.Points(18)
	p.Legend.Padding = vg.Points(3)
	p.X.Tick.Marker, p.Y.Tick.Marker = niceTicks{}, niceTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = color.Gray{Y: 0xe4}, color.Gray{Y: 0xe4}
	p.Add(g)
	return p
}

// noData marks a plot that has axes but nothing drawn on them; an axis
// that no data set keeps a range from 0 to 1 rather than gonum's -1 to 1.
func noData(p *plot.Plot) {
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		if a.Min > a.Max {
			a.Min, a.Max = 0, 1
		}
	}
	if p.Title.Text == "" {
		p.Title.Text = "(no data)"
		return
	}
	p.Title.Text += " (no data)"
}

// legendText cuts an entry so the legend strip stays a strip.
func legendText(s string) string {
	r := []rune(s)
	if len(r) <= maxLegend {
		return s
	}
	return string(r[:maxLegend-1]) + "…"
}

// figure draws panels stacked in one column, each panelH tall plus its
// title, their data areas' left and right edges lined up so a shared x
// axis reads straight down, and each panel's legend in a strip to the
// right of it, where no entry can cover data. A panel grows when its
// legend is taller than it.
//
// plot.Align would line the panels up too, but it makes every data area
// the same height, which leaves a gap above an upper panel whose time
// axis carries no labels.
func figure(panels []*plot.Plot, w, panelH vg.Length) ([]byte, error) {
	if len(panels) == 0 {
		return nil, ErrNoData
	}
	const pad, margin = 3 * vg.Millimeter, 2 * vg.Millimeter
	legends := make([]plot.Legend, len(panels))
	heights := make([]vg.Length, len(panels))
	var stripW, total vg.Length
	for i, p := range panels {
		legends[i] = p.Legend
		legends[i].Left, legends[i].Top = true, true
		// Drawn by us beside the panel, not by Draw over the data.
		p.Legend = plot.NewLegend()
		heights[i] = panelH
		r := legends[i].Rectangle(draw.Canvas{})
		if r.Size().X > 0 {
			stripW = max(stripW, r.Size().X+2*pad)
			// The time axis and its label take about 2 cm of a panel.
			heights[i] = max(heights[i], r.Size().Y+20*vg.Millimeter)
		}
		if p.Title.Text != "" {
			heights[i] += p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		}
		total += heights[i]
	}
	img := vgimg.NewWith(vgimg.UseWH(w+stripW, total+2*margin), vgimg.UseDPI(dpi),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	area := draw.Crop(dc, margin, -stripW, margin, -margin)
	canvases := make([]draw.Canvas, len(panels))
	top := area.Max.Y
	for i := range panels {
		canvases[i] = draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: area.Min.X, Y: top - heights[i]},
			Max: vg.Point{X: area.Max.X, Y: top},
		}}
		top -= heights[i]
	}
	// Line up the data areas: the widest y axis and right overhang set
	// the edges for all.
	var left, right vg.Length
	for i, p := range panels {
		d := p.DataCanvas(canvases[i])
		left = max(left, d.Min.X-canvases[i].Min.X)
		right = max(right, canvases[i].Max.X-d.Max.X)
	}
	for i, p := range panels {
		d := p.DataCanvas(canvases[i])
		canvases[i].Min.X += left - (d.Min.X - canvases[i].Min.X)
		canvases[i].Max.X -= right - (canvases[i].Max.X - d.Max.X)
	}
	for i, p := range panels {
		p.Draw(canvases[i])
		data := p.DataCanvas(canvases[i])
		legends[i].Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: area.Max.X + pad, Y: data.Min.Y},
			Max: vg.Point{X: dc.Max.X - pad, Y: data.Max.Y},
		}})
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plots: encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// unlabelled keeps an axis's ticks (and so its grid) but not their
// labels: the upper panel of a shared time axis.
type unlabelled struct{ plot.Ticker }

// Ticks implements plot.Ticker.
func (u unlabelled) Ticks(lo, hi float64) []plot.Tick {
	ts := u.Ticker.Ticks(lo, hi)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}

// niceTicks label steps of 1, 2, 2.5 or 5 times a power of ten, five to
// ten of them, with as many decimals as the step needs: gonum's default
// gives three labels with a fixed precision ("25.00") on these ranges.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, minors, decimals := 10*mag, 5, max(0, -int(math.Floor(math.Log10(mag)))-1)
	for _, c := range []struct {
		m      float64
		minors int
		extra  int
	}{{1, 5, 0}, {2, 4, 0}, {2.5, 5, 1}, {5, 5, 0}} {
		if c.m*mag >= raw*(1-1e-9) {
			step, minors, decimals = c.m*mag, c.minors, max(0, -int(math.Floor(math.Log10(mag)))+c.extra)
			break
		}
	}
	minor := step / float64(minors)
	var ts []plot.Tick
	for k := math.Ceil(lo/minor - 1e-9); k*minor <= hi+minor*1e-9; k++ {
		t := plot.Tick{Value: k * minor}
		if math.Mod(k, float64(minors)) == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', decimals, 64)
			if t.Label == "-0" {
				t.Label = "0"
			}
		}
		ts = append(ts, t)
	}
	return ts
}

// logTicks label 1, 2 and 5 of each decade (and 3 on a short axis), the
// others unlabelled: gonum's log ticks label only powers of ten, too few
// for latencies that span 20 ms to 2 s.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	if lo <= 0 || hi <= lo {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	// Within two decades there is room to label 3 too.
	narrow := hi/lo < 100
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1.0; m <= 9; m++ {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 || (m == 3 && narrow) {
				t.Label = fmt.Sprintf("%g", v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// logWorthIt tells whether values (positive ones only) span enough to
// need a log axis: over a factor of 20, a linear axis flattens the
// baseline to a line at the bottom under the spikes.
func logWorthIt(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return hi > 0 && hi/lo > 20
}

// A log axis here is a linear axis of log10 of the values, ticks
// labelled with the values: gonum's LogScale places an axis's label by the
// arithmetic middle of its range, which on a log axis is near one end, and
// the plot then shrinks its data area to make room for a label that is
// not there.

// useLog makes a's ticks those of a log axis; the caller plots log10 of
// its values (logValue).
func useLog(a *plot.Axis) { a.Tick.Marker = log10Ticks{} }

// logValue is where v goes on an axis made by useLog.
func logValue(v float64) float64 { return math.Log10(v) }

// log10Ticks are logTicks on an axis of log10 values.
type log10Ticks struct{}

// Ticks implements plot.Ticker.
func (log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := logTicks{}.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
	}
	return ts
}

// vlines marks instants across a panel (network phase changes). It has
// no data range, so it never widens the axes.
type vlines struct {
	xs []float64
	draw.LineStyle
}

// Plot implements plot.Plotter.
func (v vlines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, x := range v.xs {
		if x < p.X.Min || x > p.X.Max {
			continue
		}
		c.StrokeLine2(v.LineStyle, trX(x), c.Min.Y, trX(x), c.Max.Y)
	}
}

// Thumbnail implements plot.Thumbnailer.
func (v vlines) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(v.LineStyle, x, c.Min.Y, x, c.Max.Y)
}

// finite drops NaN and infinities, which gonum refuses to plot.
func finite(vs []float64) []float64 {
	out := make([]float64, 0, len(vs))
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// sortedLabels are the map's labels in order, so colours and stacking do
// not depend on map iteration; a nil result is an error.
func sortedLabels(results map[string]*result.Run) ([]string, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: no result", ErrNoData)
	}
	labels := make([]string, 0, len(results))
	for l, r := range results {
		if r == nil {
			return nil, fmt.Errorf("plots: result %q is nil", l)
		}
		labels = append(labels, l)
	}
	slices.Sort(labels)
	return labels, nil
}
