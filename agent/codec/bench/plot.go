package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/nuvirahub/latencylab/agent/codec/frames"
)

// codecStyle gives each codec the same colour and marker in every plot.
var codecStyle = map[string]struct {
	colour color.Color
	shape  draw.GlyphDrawer
}{
	"tile":       {color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, draw.CircleGlyph{}},
	"tile-carry": {color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, draw.TriangleGlyph{}},
	"hextile":    {color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, draw.SquareGlyph{}},
	"zrle":       {color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, draw.CrossGlyph{}},
	TilePerTile:  {color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, draw.PyramidGlyph{}},
}

// metric picks what a plot shows of a result.
type metric struct {
	label string
	value func(Result) float64
}

var (
	bytesMetric = metric{"bytes per frame", func(r Result) float64 { return float64(r.Bytes) }}
	timeMetric  = metric{"median encode time (ms)", func(r Result) float64 { return float64(r.Median) / 1e6 }}
)

// addCodecLines adds one line per codec; x(c) places a case on the x axis
// and keeps it when ok. A panel left without a point (a run of some cases
// only, -run) says so instead of drawing log axes over nothing, which
// gonum's log ticks refuse.
func addCodecLines(p *plot.Plot, rep *Report, m metric, pick func(Case) (x float64, ok bool)) error {
	l := newLookup(rep.Results)
	drawn := false
	defer func() {
		if !drawn {
			p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
			p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
			p.Title.Text += " (no case in this run)"
		}
	}()
	for _, cd := range rep.Codecs {
		var xys plotter.XYs
		for _, c := range rep.Cases {
			x, ok := pick(c)
			if !ok {
				continue
			}
			r, ok := l.get(c.Name, cd)
			if !ok {
				continue
			}
			// A log axis cannot show 0; nothing the lab measures is 0,
			// but a broken result must not panic the plot.
			xys = append(xys, plotter.XY{X: x, Y: math.Max(m.value(r), 1e-3)})
		}
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		drawn = true
		st := codecStyle[cd]
		if st.colour == nil {
			st.colour, st.shape = color.Black, draw.RingGlyph{}
		}
		line.Color, points.Color, points.Shape = st.colour, st.colour, st.shape
		line.Width = vg.Points(1.2)
		p.Add(line, points)
		p.Legend.Add(cd, line, points)
	}
	return nil
}

func newLogPlot(title, xlabel string, m metric) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = m.label
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	// The curves rise from the left; the lower right is where they are
	// not.
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	return p
}

// keyframePlots are bytes and time of the keyframes against the frame's
// size in megapixels, one panel per content (E5, E6).
func keyframePlots(rep *Report) ([][]*plot.Plot, error) {
	var rows [][]*plot.Plot
	for _, m := range []metric{bytesMetric, timeMetric} {
		var row []*plot.Plot
		for _, kind := range []string{frames.Solid, frames.Gradient} {
			p := newLogPlot(fmt.Sprintf("keyframes, %s", kind), "megapixels (720p, 1080p, 4K)", m)
			err := addCodecLines(p, rep, m, func(c Case) (float64, bool) {
				return float64(c.W*c.H) / 1e6, c.Key && c.Kind == kind
			})
			if err != nil {
				return nil, err
			}
			row = append(row, p)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// pframePlots show a metric of the P-frames against the share of pixels
// changed (log scale: 1 to 90%), one panel per kind of change (E7, E8,
// E11). The static frame is left out: a log axis has no 0, and its figures
// are E10's row.
func pframePlots(rep *Report, m metric) ([][]*plot.Plot, error) {
	kinds := []string{frames.Points, frames.Blocks, frames.NoisePts, frames.NoiseBlock}
	titles := map[string]string{
		frames.Points:     "single-colour points",
		frames.Blocks:     "single-colour blocks",
		frames.NoisePts:   "noise, scattered",
		frames.NoiseBlock: "noise, one block (video in a corner)",
	}
	var rows [][]*plot.Plot
	for i := 0; i < len(kinds); i += 2 {
		var row []*plot.Plot
		for _, kind := range kinds[i : i+2] {
			p := newLogPlot("P-frames 1080p, "+titles[kind], "pixels changed (%)", m)
			p.X.Scale = plot.LogScale{}
			p.X.Tick.Marker = plot.ConstantTicks(percentTicks())
			err := addCodecLines(p, rep, m, func(c Case) (float64, bool) {
				return c.Pct, !c.Key && c.Kind == kind && c.Pct > 0
			})
			if err != nil {
				return nil, err
			}
			row = append(row, p)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// writeGrid draws a grid of plots as one PNG.
func writeGrid(w io.Writer, plots [][]*plot.Plot) error {
	const panelW, panelH = 9 * vg.Centimeter, 7.5 * vg.Centimeter
	rows, cols := len(plots), len(plots[0])
	img := vgimg.NewWith(vgimg.UseWH(panelW*vg.Length(cols), panelH*vg.Length(rows)), vgimg.UseDPI(110))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for j := range plots {
		for i := range plots[j] {
			plots[j][i].Draw(canvases[j][i])
		}
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// percentTicks label the matrix's percentages on a log axis.
func percentTicks() []plot.Tick {
	var ticks []plot.Tick
	for _, p := range frames.Percentages {
		if p > 0 {
			ticks = append(ticks, plot.Tick{Value: p, Label: fmt.Sprintf("%g", p)})
		}
	}
	return ticks
}
