package plots

import (
	"bytes"
	"image/png"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// A scatter draws a PNG of its sets, leaves out what is not finite, and
// refuses to draw nothing.
func TestScatter(t *testing.T) {
	img, err := Scatter("runs", "x", "y", []Set{
		{Name: "drop", Points: []Point{{X: 1, Y: 2}, {X: 3, Y: 4}}},
		{Name: "wait", Points: []Point{{X: math.NaN(), Y: 1}, {X: 2, Y: 2}}},
		{Name: "empty"},
	})
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(img))
	require.NoError(t, err)
	_, err = Scatter("runs", "x", "y", []Set{{Name: "nan", Points: []Point{{X: math.Inf(1), Y: 1}}}})
	require.ErrorIs(t, err, ErrNoData)
}
