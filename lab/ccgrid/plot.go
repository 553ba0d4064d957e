package ccgrid

import (
	"bytes"
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

	"github.com/nuvirahub/latencylab/reports/render"
)

// The figures follow reports/plots' look (sizes, Tableau colours, legend
// in a strip beside the data) but are drawn here: its helpers are
// unexported and made for time series, not a measure against a category.
const (
	dpi    = 110
	panelW = 10 * vg.Centimeter
	plotH  = 9 * vg.Centimeter
	stripW = 3 * vg.Centimeter
)

// palette: Tableau 10, in reports/plots' order, so a controller keeps its
// colour across the plots of one report.
var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

// plotted are the measures drawn, by Measures' key: the three
// (goodput is utilisation times a fixed rate, so it would repeat it).
var plotted = []string{"utilisation", "queueing", "retransmissions"}

// Figures draws each plotted measure against the loss rate: one panel per
// one-way delay, a line per controller. Trace columns have no loss rate
// and are left out. The figures are deterministic.
func (r *Report) Figures() ([]render.Figure, error) {
	var figs []render.Figure
	for _, key := range plotted {
		i := slices.IndexFunc(Measures, func(m Measure) bool { return m.Key == key })
		m := Measures[i]
		png, err := r.measurePlot(m)
		if err != nil {
			return nil, fmt.Errorf("ccgrid: plot %s: %w", key, err)
		}
		figs = append(figs, render.Figure{
			Name:    "ccgrid-" + key + ".png",
			Caption: m.Title + " against random loss, per controller; a panel per one-way delay.",
			PNG:     png,
		})
	}
	return figs, nil
}

// delayGroups are the fixed-rate columns grouped by one-way delay, in the
// grid's order.
func (r *Report) delayGroups() (delays []float64, groups [][]Column) {
	for _, c := range r.Grid.Columns {
		if c.IsTrace() {
			continue
		}
		i := slices.Index(delays, c.DelayMS)
		if i < 0 {
			delays = append(delays, c.DelayMS)
			groups = append(groups, nil)
			i = len(delays) - 1
		}
		groups[i] = append(groups[i], c)
	}
	return delays, groups
}

// measurePlot draws one measure's figure.
func (r *Report) measurePlot(m Measure) ([]byte, error) {
	delays, groups := r.delayGroups()
	if len(delays) == 0 {
		delays, groups = []float64{0}, [][]Column{nil} // one empty panel that says so
	}
	// One y range for every panel, so the delays compare at a glance.
	top := 0.0
	for _, c := range r.Cells {
		if v := m.Value(c); !math.IsNaN(v) && !math.IsInf(v, 0) {
			top = max(top, v)
		}
	}
	if m.Unit == "%" && m.Key == "utilisation" {
		top = max(top, 100)
	}
	if top == 0 {
		top = 1
	}
	legend := plot.NewLegend()
	legend.TextStyle.Font.Size = vg.Points(9)
	legend.Top, legend.Left = true, true
	panels := make([]*plot.Plot, len(delays))
	for pi, cols := range groups {
		p := plot.New()
		p.Title.Text = strconv.FormatFloat(delays[pi], 'f', -1, 64) + " ms one way"
		if len(cols) == 0 {
			p.Title.Text = "(no data)"
		}
		p.Title.TextStyle.Font.Size = vg.Points(11)
		p.X.Label.Text = "random loss, each direction"
		p.Y.Label.Text = m.Key + " (" + m.Unit + ")"
		for _, a := range []*plot.Axis{&p.X, &p.Y} {
			a.Label.TextStyle.Font.Size = vg.Points(10)
			a.Tick.Label.Font.Size = vg.Points(9)
		}
		p.X.Min, p.X.Max = -0.3, float64(max(len(cols), 1))-0.7
		p.Y.Min, p.Y.Max = 0, top*1.05
		p.X.Tick.Marker = categoryTicks(cols)
		g := plotter.NewGrid()
		g.Vertical.Color, g.Horizontal.Color = color.Gray{Y: 0xe4}, color.Gray{Y: 0xe4}
		p.Add(g)
		if m.Key == "utilisation" {
			half, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 50}, {X: p.X.Max, Y: 50}})
			if err != nil {
				return nil, err
			}
			half.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0x99}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
			p.Add(half)
			if pi == 0 {
				legend.Add("half the link", half)
			}
		}
		for ci, cc := range r.Grid.Rows() {
			var xys plotter.XYs
			for x, col := range cols {
				if c, ok := r.Cell(cc, col.Name); ok {
					if v := m.Value(c); !math.IsNaN(v) && !math.IsInf(v, 0) {
						xys = append(xys, plotter.XY{X: float64(x), Y: v})
					}
				}
			}
			style := draw.LineStyle{Color: palette[ci%len(palette)], Width: vg.Points(1.5)}
			glyph := draw.GlyphStyle{Color: palette[ci%len(palette)], Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
			if len(xys) > 0 {
				line, pts, err := plotter.NewLinePoints(xys)
				if err != nil {
					return nil, err
				}
				line.LineStyle, pts.GlyphStyle = style, glyph
				p.Add(line, pts)
			}
			if pi == 0 {
				// The legend's entry needs a thumbnail even when the
				// first panel has no point of this controller.
				thumb, _, _ := plotter.NewLinePoints(plotter.XYs{{}})
				thumb.LineStyle = style
				legend.Add(cc, thumb)
			}
		}
		panels[pi] = p
	}
	w := panelW*vg.Length(len(panels)) + stripW
	img := vgimg.NewWith(vgimg.UseWH(w, plotH), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	const margin = 2 * vg.Millimeter
	area := draw.Crop(dc, margin, -stripW, margin, -margin)
	tiles := draw.Tiles{Rows: 1, Cols: len(panels), PadX: 4 * vg.Millimeter}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, area)
	for i, p := range panels {
		p.Draw(canvases[0][i])
	}
	data := panels[0].DataCanvas(canvases[0][0])
	legend.Draw(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: area.Max.X + 3*vg.Millimeter, Y: data.Min.Y},
		Max: vg.Point{X: dc.Max.X - margin, Y: data.Max.Y},
	}})
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encoding PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// categoryTicks label the columns' positions 0, 1, ... with their loss:
// the losses (0 to 5%) are spaced evenly, or the low ones, where the
// controllers part ways, would sit on top of each other.
type categoryTicks []Column

// Ticks implements plot.Ticker.
func (cs categoryTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for i, c := range cs {
		if x := float64(i); x >= lo && x <= hi {
			ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(c.LossPercent, 'f', -1, 64) + "%"})
		}
	}
	return ts
}
