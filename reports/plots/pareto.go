package plots

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point is one configuration of a trade-off (a sweep's thresholds, say):
// its two figures and its name.
type Point struct {
	X, Y  float64
	Label string
}

// ParetoFront returns the indexes of the points no other point dominates,
// ordered by X then Y (the order to join them in). A point dominates
// another when it is at least as good on both axes and better on one;
// lowerXBetter and lowerYBetter say which way is better on each (latency:
// lower; bitrate: higher). Equal points do not dominate each other, so
// ties are all on the front. Points with a NaN or infinite figure are
// never on it and dominate nothing.
func ParetoFront(pts []Point, lowerXBetter, lowerYBetter bool) []int {
	better := func(a, b float64, lower bool) bool {
		if lower {
			return a < b
		}
		return a > b
	}
	ok := func(p Point) bool { return isFinite(p.X) && isFinite(p.Y) }
	dominates := func(a, b Point) bool {
		noWorse := !better(b.X, a.X, lowerXBetter) && !better(b.Y, a.Y, lowerYBetter)
		return noWorse && (better(a.X, b.X, lowerXBetter) || better(a.Y, b.Y, lowerYBetter))
	}
	var front []int
	for i, p := range pts {
		if !ok(p) {
			continue
		}
		dominated := false
		for j, q := range pts {
			if j != i && ok(q) && dominates(q, p) {
				dominated = true
				break
			}
		}
		if !dominated {
			front = append(front, i)
		}
	}
	slices.SortStableFunc(front, func(a, b int) int {
		return cmp.Or(cmp.Compare(pts[a].X, pts[b].X), cmp.Compare(pts[a].Y, pts[b].Y))
	})
	return front
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Pareto draws every point in grey and the points of front (indexes into
// pts, as ParetoFront returns them) in colour, joined in order of X and
// labelled, so the trade-off's best choices stand out with their names.
// Axis labels should say their units and, ideally, which way is better.
//
// No point at all is ErrNoData; an index of front outside pts is an
// error. Points with NaN or infinite figures are left out.
func Pareto(title, xLabel, yLabel string, pts []Point, front []int) ([]byte, error) {
	if len(pts) == 0 {
		return nil, fmt.Errorf("%w: no point", ErrNoData)
	}
	onFront := make([]bool, len(pts))
	for _, i := range front {
		if i < 0 || i >= len(pts) {
			return nil, fmt.Errorf("plots: front index %d out of range [0, %d)", i, len(pts))
		}
		onFront[i] = true
	}
	p := newPlot(title, xLabel, yLabel)
	var rest, best plotter.XYs
	var names []string
	for i, pt := range pts {
		if !isFinite(pt.X) || !isFinite(pt.Y) {
			continue
		}
		if !onFront[i] {
			rest = append(rest, plotter.XY{X: pt.X, Y: pt.Y})
		}
	}
	order := slices.Clone(front)
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(pts[a].X, pts[b].X), cmp.Compare(pts[a].Y, pts[b].Y))
	})
	order = slices.Compact(order)
	for _, i := range order {
		if pt := pts[i]; isFinite(pt.X) && isFinite(pt.Y) {
			best = append(best, plotter.XY{X: pt.X, Y: pt.Y})
			names = append(names, pt.Label)
		}
	}
	if len(rest) > 0 {
		sc, err := plotter.NewScatter(rest)
		if err != nil {
			return nil, fmt.Errorf("plots: points: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: grey, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		p.Legend.Add("dominated", sc)
	}
	if len(best) > 0 {
		colour := palette[0]
		line, points, err := plotter.NewLinePoints(best)
		if err != nil {
			return nil, fmt.Errorf("plots: front: %w", err)
		}
		line.LineStyle = lineStyle(colour, 1.5, nil)
		points.GlyphStyle = draw.GlyphStyle{Color: colour, Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: best, Labels: names})
		if err != nil {
			return nil, fmt.Errorf("plots: front labels: %w", err)
		}
		for i := range labels.TextStyle {
			labels.TextStyle[i].Font.Size = vg.Points(8)
			labels.TextStyle[i].Color = color.Black
		}
		labels.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
		p.Add(line, points, labels)
		p.Legend.Add("Pareto front", line, points)
	}
	if len(rest)+len(best) == 0 {
		noData(p)
	}
	return figure([]*plot.Plot{p}, width, height)
}
