package jobs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWorker is the test worker processes run (UseWorkers("TestWorker")):
// in a worker it serves sessions. Run as a test, it checks the worker
// mode: the same lossy scenario and seed, run twice in worker processes,
// gives the same result, frame for frame (in one process with parallel
// sessions it does not: see worker.go).
func TestWorker(t *testing.T) {
	if Serving() {
		Serve(t)
		return
	}
	UseWorkers("TestWorker")
	defer UseWorkers("")
	scs := library(t, "abr-lossy", "mobile-spikes")
	for _, sc := range scs {
		sc.Duration = 8 * time.Second
	}
	sessions := Run(t, Plan{Scenarios: scs, Seeds: []uint64{5, 5}, Parallel: 2})
	require.Len(t, sessions, 4)
	for i := 0; i < 4; i += 2 {
		a, b := sessions[i], sessions[i+1]
		require.NoError(t, a.Err)
		require.NoError(t, b.Err)
		require.Equal(t, uint64(5), a.Result.Seed)
		ja, err := json.Marshal(a.Result)
		require.NoError(t, err)
		jb, err := json.Marshal(b.Result)
		require.NoError(t, err)
		if string(ja) != string(jb) {
			k := 0
			for k < len(ja) && k < len(jb) && ja[k] == jb[k] {
				k++
			}
			lo := max(0, k-200)
			t.Fatalf("%s: two runs of seed 5 differ at byte %d:\n%s\n%s", a.Scenario, k, ja[lo:min(len(ja), k+100)], jb[lo:min(len(jb), k+100)])
		}
		require.NotEmpty(t, a.Result.Frames)
	}
}
