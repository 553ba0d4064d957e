package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Level is a horizontal reference line of a convergence plot: a score to
// reach, such as a known setting's.
type Level struct {
	Label string
	Y     float64
}

// bestSoFar is a convergence plot's points: every finite evaluation, and
// the best score so far as a step line through them (a step down where an
// evaluation beats it, flat otherwise).
func bestSoFar(xs, scores []float64) (all, best plotter.XYs) {
	low := math.Inf(1)
	for i, y := range scores {
		if !isFinite(xs[i]) || !isFinite(y) {
			continue
		}
		all = append(all, plotter.XY{X: xs[i], Y: y})
		if y < low {
			if len(best) > 0 {
				best = append(best, plotter.XY{X: xs[i], Y: low}) // the step down
			}
			low = y
		}
		best = append(best, plotter.XY{X: xs[i], Y: low})
	}
	return all, best
}

// Convergence draws a search's progress: every evaluation's score at X
// (the sessions spent when it was scored, say) in grey, named in the
// legend by pointsLabel, the best so far
// as a step line in colour, each level as a dashed line, and, when
// budget is above 0, a vertical line there (a budget the search must
// reach a level within). Lower scores are better. Scores that are NaN or
// infinite (a candidate whose sessions failed) are left out of the
// points but not of the order.
func Convergence(title, xLabel, yLabel, pointsLabel string, xs, scores []float64, levels []Level, budget float64) ([]byte, error) {
	if len(xs) != len(scores) {
		return nil, fmt.Errorf("plots: %d x values for %d scores", len(xs), len(scores))
	}
	p := newPlot(title, xLabel, yLabel)
	all, best := bestSoFar(xs, scores)
	if len(all) == 0 {
		noData(p)
		return figure([]*plot.Plot{p}, width, height)
	}
	last := all[len(all)-1].X
	best = append(best, plotter.XY{X: max(last, budget), Y: best[len(best)-1].Y})
	sc, err := plotter.NewScatter(all)
	if err != nil {
		return nil, fmt.Errorf("plots: evaluations: %w", err)
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: grey, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	line, err := plotter.NewLine(best)
	if err != nil {
		return nil, fmt.Errorf("plots: best so far: %w", err)
	}
	line.LineStyle = lineStyle(palette[0], 2, nil)
	p.Add(sc, line)
	p.Legend.Add(pointsLabel, sc)
	p.Legend.Add("best so far", line)
	right := max(last, budget)
	for i, l := range levels {
		if !isFinite(l.Y) {
			continue
		}
		ref, err := plotter.NewLine(plotter.XYs{{X: 0, Y: l.Y}, {X: right, Y: l.Y}})
		if err != nil {
			return nil, fmt.Errorf("plots: level %s: %w", l.Label, err)
		}
		ref.LineStyle = lineStyle(palette[(i+1)%len(palette)], 1.5, []vg.Length{vg.Points(5), vg.Points(3)})
		p.Add(ref)
		p.Legend.Add(legendText(l.Label), ref)
	}
	if budget > 0 {
		lo, hi := p.Y.Min, p.Y.Max
		for _, l := range levels {
			if isFinite(l.Y) {
				lo, hi = math.Min(lo, l.Y), math.Max(hi, l.Y)
			}
		}
		v, err := plotter.NewLine(plotter.XYs{{X: budget, Y: lo}, {X: budget, Y: hi}})
		if err != nil {
			return nil, fmt.Errorf("plots: budget: %w", err)
		}
		v.LineStyle = lineStyle(color.RGBA{A: 0xff}, 1, []vg.Length{vg.Points(2), vg.Points(2)})
		p.Add(v)
		p.Legend.Add("budget", v)
	}
	p.X.Min = 0
	return figure([]*plot.Plot{p}, width, height)
}
