package tracegen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

var update = flag.Bool("update", false, "rewrite testdata/traces from the presets")

func TestGenerateIsAFunctionOfTheSeed(t *testing.T) {
	a, err := Generate(1, Config{Duration: 10 * time.Second})
	require.NoError(t, err)
	b, err := Generate(1, Config{Duration: 10 * time.Second})
	require.NoError(t, err)
	c, err := Generate(2, Config{Duration: 10 * time.Second})
	require.NoError(t, err)
	require.Equal(t, a.String(), b.String())
	require.NotEqual(t, a.String(), c.String())
	require.Equal(t, 10*time.Second, a.Period())
}

// The long-run mean is the configured one: over many independent traces
// the average rate's mean is within a few percent (each trace alone wanders,
// that is the point).
func TestGenerateMeanRate(t *testing.T) {
	var sum float64
	const n = 20
	for seed := range uint64(n) {
		tr, err := Generate(seed, Config{Duration: 60 * time.Second, Mean: 5_000_000, FadeEvery: -1})
		require.NoError(t, err)
		sum += tr.AverageRate()
	}
	require.InEpsilon(t, 5_000_000, sum/n, 0.05)
}

func TestFadesCutCapacity(t *testing.T) {
	steady, err := Generate(7, Config{Duration: 60 * time.Second, FadeEvery: -1})
	require.NoError(t, err)
	faded, err := Generate(7, Config{Duration: 60 * time.Second, FadeEvery: 2 * time.Second, FadeLength: time.Second})
	require.NoError(t, err)
	require.Less(t, faded.AverageRate(), 0.8*steady.AverageRate())
}

func TestGenerateRefusesNonsense(t *testing.T) {
	_, err := Generate(1, Config{Mean: -1})
	require.ErrorContains(t, err, "mean")
	_, err = Generate(1, Config{FadeDepth: 2})
	require.ErrorContains(t, err, "fade depth")
}

// The traces in testdata/traces are exactly what the presets generate
// (go test ./netem/tracegen -update rewrites them).
func TestShippedTracesAreThePresets(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "traces")
	for _, p := range Presets {
		tr, err := Generate(p.Seed, p.Config)
		require.NoError(t, err)
		var want bytes.Buffer
		_, err = tr.WriteTo(&want)
		require.NoError(t, err)
		path := filepath.Join(dir, p.File)
		if *update {
			require.NoError(t, os.WriteFile(path, want.Bytes(), 0o644))
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./netem/tracegen -update")
		require.Equal(t, want.String(), string(got), "%s differs from its preset", p.File)
		shipped, err := netem.LoadTrace(path)
		require.NoError(t, err)
		t.Logf("%s: %.2f Mbit/s average over %v (%s)", p.File, shipped.AverageRate()/1e6, shipped.Period(), p.About)
	}
}
