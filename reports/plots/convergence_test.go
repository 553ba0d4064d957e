package plots

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
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
