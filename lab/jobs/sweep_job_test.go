//go:build jobs

// The ABR sweep's entry point: `lab sweep` and `make sweep`
// start it as
//
//	go test -C lab/jobs -tags jobs -run '^TestSweep$' -count=1 -timeout 0 -args -grid FILE -shard 2/3 -out DIR
//
// It lives in the external test package because package sweep imports
// package jobs. Its logic is in package sweep, which go test ./... builds
// and tests; this file only reads the flags and hands over the bubble's
// *testing.T.
package jobs_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/sweep"
)

// Registered in init, after the package's other job entry points defined
// theirs: RegisterFlags shares a flag of the same name (-out, -seeds,
// -scenarios, -parallel) instead of defining it twice.
func init() { sweep.RegisterFlags(flag.CommandLine) }

// TestSweep runs one shard of an ABR sweep (-shard i/n, 1/1 by default)
// and writes its part file into -out; a 1/1 run also writes the report.
// Paths are relative to the module's root.
func TestSweep(t *testing.T) {
	// Sessions in worker processes: reproducible for a seed (worker.go).
	jobs.UseWorkers("TestWorker")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	job, err := sweep.JobFromFlags(flag.CommandLine, root)
	require.NoError(t, err)
	_, err = sweep.RunJob(t, job, root, os.Stderr, os.Stdout)
	require.NoError(t, err)
}
