package plots

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Set is one named set of points of a scatter plot: a configuration's
// runs, say.
type Set struct {
	Name   string
	Points []Point
}

// glyphs tell the sets apart where colour does not (a grey print).
var glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}}

// Scatter draws each set's points in a colour and glyph of its own, in
// the given order, with a legend: where several configurations' runs lie
// against two figures. A set with no finite point is left out of the
// plot and the legend; no point at all is ErrNoData.
func Scatter(title, xLabel, yLabel string, sets []Set) ([]byte, error) {
	p := newPlot(title, xLabel, yLabel)
	drawn := 0
	for i, s := range sets {
		var xys plotter.XYs
		for _, pt := range s.Points {
			if isFinite(pt.X) && isFinite(pt.Y) {
				xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
			}
		}
		if len(xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("plots: set %s: %w", s.Name, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: palette[i%len(palette)], Radius: vg.Points(3.5), Shape: glyphs[i%len(glyphs)]}
		p.Add(sc)
		p.Legend.Add(legendText(s.Name), sc)
		drawn += len(xys)
	}
	if drawn == 0 {
		return nil, fmt.Errorf("%w: no point", ErrNoData)
	}
	return figure([]*plot.Plot{p}, width, height)
}
