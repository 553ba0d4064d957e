//go:build jobs

// The ABR tune's entry point: `lab tune` starts it as
//
//	go test -C lab/jobs -tags jobs -run '^TestTune$' -count=1 -timeout 0 -args -tune-state DIR -parallel N
//
// after writing the tune's settings and first step into DIR (lab tune
// -ask's work). Its logic is in package tune (and sweep, which runs each
// step); this file hands over the bubble's *testing.T.
package jobs_test

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobs"
	"github.com/nuvirahub/latencylab/lab/sweep"
	"github.com/nuvirahub/latencylab/lab/tune"
)

var tuneState = flag.String("tune-state", "", "the tune's folder (lab tune -state), its settings and first step written")

// TestTune runs every pending step of the tune in -tune-state, each as
// an unsharded sweep of its grid, and tells the tune its results, until
// the report is written. -parallel (shared with the other jobs) bounds
// the sessions at once.
func TestTune(t *testing.T) {
	if *tuneState == "" {
		t.Skip("no -tune-state: lab tune starts this entry point with its folder")
	}
	// Sessions in worker processes: reproducible for a seed (worker.go).
	jobs.UseWorkers("TestWorker")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	parallel := 0
	if f := flag.Lookup(sweep.FlagParallel); f != nil {
		parallel, err = strconv.Atoi(f.Value.String())
		require.NoError(t, err, "-parallel")
	}
	st, err := tune.Run(t, *tuneState, sweep.RunOptions{Parallel: parallel, Progress: os.Stderr, Root: root}, os.Stdout)
	require.NoError(t, err)
	t.Logf("tune %s", st)
}
