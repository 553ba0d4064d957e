package sweep

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/sweep/grid"
)

// The flags replace the grid file's values; the rest of the file holds.
func TestJobFromFlags(t *testing.T) {
	dir := t.TempDir()
	grid := filepath.Join(dir, "g.yaml")
	writeFile(t, grid, "threshold: [30ms, 60ms]\ndecrease: [10%]\nscenarios: [abr-lossy]\nwarmup: 4s\n")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.String("out", "elsewhere", "another job's flag, shared")
	RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{"-grid", "g.yaml", "-threshold", "90ms", "-seeds", "1,2", "-shard", "2/3", "-out", "res", "-parallel", "3"}))
	j, err := JobFromFlags(fs, dir)
	require.NoError(t, err)
	require.Equal(t, []time.Duration{90 * time.Millisecond}, j.Grid.Threshold)
	require.Equal(t, []float64{0.1}, j.Grid.Decrease)
	require.Equal(t, []uint64{1, 2}, j.Grid.Seeds)
	require.Equal(t, 4*time.Second, j.Grid.Warmup)
	require.Equal(t, ShardID{I: 2, N: 3}, j.Shard)
	require.Equal(t, filepath.Join(dir, "res"), j.Out)
	require.Equal(t, 3, j.Parallel)
	require.Equal(t, grid, j.GridFile)

	// Args spells the job out for the entry point, which reads it back
	// the same (a grid of axes needs no file).
	args, err := j.Args()
	require.NoError(t, err)
	again := flag.NewFlagSet("again", flag.ContinueOnError)
	RegisterFlags(again)
	require.NoError(t, again.Parse(args))
	j2, err := JobFromFlags(again, "/nowhere")
	require.NoError(t, err)
	j.GridFile = ""
	require.Equal(t, j, j2)
}

func TestJobFromFlagsRefusesBadFlags(t *testing.T) {
	for want, args := range map[string][]string{
		"-threshold: 30 is missing a unit": {"-scenarios", "abr-lossy", "-threshold", "30"},
		"-shard: bad shard 0/3":            {"-scenarios", "abr-lossy", "-shard", "0/3"},
		"-parallel: x is not a count":      {"-scenarios", "abr-lossy", "-parallel", "x"},
		"no scenarios":                     {"-threshold", "30ms"},
		"-warmup: 2 is missing a unit":     {"-scenarios", "abr-lossy", "-warmup", "2"},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		RegisterFlags(fs)
		require.NoError(t, fs.Parse(args))
		_, err := JobFromFlags(fs, t.TempDir())
		require.ErrorContains(t, err, want, "%v", args)
	}
}

// The default grid (make sweep) is the sweep docs/reports.md quotes: at least
// 50 points over 4 ABR scenarios of the library, which load.
func TestDefaultGrid(t *testing.T) {
	g, err := grid.Load("default-grid.yaml")
	require.NoError(t, err)
	require.NoError(t, g.Validate())
	require.GreaterOrEqual(t, len(g.Points()), 50)
	require.Len(t, g.Scenarios, 4)
	scs, err := LoadScenarios(g, filepath.Join("..", ".."))
	require.NoError(t, err)
	for _, sc := range scs {
		require.Equal(t, "abr", sc.Controller.Kind, sc.Name)
	}
}

func writeFile(t *testing.T, file, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
}
