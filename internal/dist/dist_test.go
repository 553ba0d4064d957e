package dist

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestZeroIsUnsetButConstantZeroIsNot(t *testing.T) {
	require.True(t, Duration{}.IsZero())
	require.False(t, Constant(0).IsZero())
	require.False(t, Duration{Mean: time.Millisecond}.IsZero())
	def := Constant(3 * time.Millisecond)
	require.Equal(t, 3*time.Millisecond, Duration{}.Or(def).Sampler(nil).Next())
	require.Equal(t, time.Duration(0), Constant(0).Or(def).Sampler(nil).Next())
}

func TestListCycles(t *testing.T) {
	s := List(1, 2, 3).Sampler(nil)
	var got []time.Duration
	for range 7 {
		got = append(got, s.Next())
	}
	require.Equal(t, []time.Duration{1, 2, 3, 1, 2, 3, 1}, got)
	require.Equal(t, "list(1ns, 2ns, 3ns)", List(1, 2, 3).String())
}

func TestNormalMomentsAndClamp(t *testing.T) {
	s := Normal(9*time.Millisecond, time.Millisecond).Sampler(rand.New(rand.NewPCG(1, 2)))
	const n = 20000
	var sum, sq float64
	for range n {
		v := float64(s.Next())
		sum += v
		sq += v * v
	}
	mean := sum / n
	sd := math.Sqrt(sq/n - mean*mean)
	require.InDelta(t, 9e6, mean, 3*1e6/math.Sqrt(n)*3) // well inside 9 standard errors
	require.InDelta(t, 1e6, sd, 0.03e6)

	clamped := Normal(0, time.Millisecond).Sampler(rand.New(rand.NewPCG(3, 4)))
	for range 1000 {
		require.GreaterOrEqual(t, clamped.Next(), time.Duration(0))
	}
}

func TestSameSeedSameSequence(t *testing.T) {
	a := Normal(5*time.Millisecond, 2*time.Millisecond).Sampler(rand.New(rand.NewPCG(7, 7)))
	b := Normal(5*time.Millisecond, 2*time.Millisecond).Sampler(rand.New(rand.NewPCG(7, 7)))
	for range 100 {
		require.Equal(t, a.Next(), b.Next())
	}
}

func TestValidate(t *testing.T) {
	require.NoError(t, Normal(time.Millisecond, time.Millisecond).Validate())
	require.Error(t, Constant(-1).Validate())
	require.ErrorContains(t, List(1, -2).Validate(), "position 1")
}
