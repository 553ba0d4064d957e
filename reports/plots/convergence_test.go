package plots

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/plotter"
)

func TestConvergenceDrawsAndRefusesMismatchedInput(t *testing.T) {
	png, err := Convergence("t", "sessions", "score", "each candidate", []float64{12, 24, 36}, []float64{300, math.Inf(1), 250},
		[]Level{{Label: "write-up", Y: 300}, {Label: "grid", Y: 260}}, 216)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG")))
	_, err = Convergence("t", "x", "y", "each", []float64{1}, []float64{1, 2}, nil, 0)
	require.ErrorContains(t, err, "1 x values for 2 scores")
	// Nothing finite still draws a plot that says so.
	png, err = Convergence("t", "x", "y", "each", []float64{1}, []float64{math.NaN()}, nil, 0)
	require.NoError(t, err)
	require.NotEmpty(t, png)
}

// The best-so-far line steps down where an evaluation beats the best, and
// runs flat through worse and failed ones: it never rises.
func TestConvergenceBestSoFar(t *testing.T) {
	all, best := bestSoFar([]float64{12, 24, 36, 48, 60, math.NaN()}, []float64{300, math.Inf(1), 250, 280, 200, 100})
	require.Equal(t, plotter.XYs{{X: 12, Y: 300}, {X: 36, Y: 250}, {X: 48, Y: 280}, {X: 60, Y: 200}}, all)
	require.Equal(t, plotter.XYs{{X: 12, Y: 300}, {X: 36, Y: 300}, {X: 36, Y: 250}, {X: 48, Y: 250}, {X: 60, Y: 250}, {X: 60, Y: 200}}, best)
	for i := 1; i < len(best); i++ {
		require.LessOrEqual(t, best[i].Y, best[i-1].Y, "point %d", i)
	}
}
