package jobs

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/jobspec"
	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// workerAgreement are the measures, over the whole run, that two worker
// runs of one seed must agree on by the bound rule. Their spread over 10
// runs of seed 1 in one process, where runs differ far more often than in
// workers (worker.go): lossy-fixed-bitrate's frame rate and mean bitrate
// the same in all 10 (2.25 fps, 3.72 Mbit/s), mobile-spikes' 1.005x and
// 1.000x. abr-lossy, the lossy scenario here before it took OpenH264's
// frame sizes, now spreads 1.86x (11.2-20.7 fps), which the rule's band
// does not hold: which repairs come late decides it. The latencies are
// left out: a median moves between such runs more than the rule allows.
var workerAgreement = []string{"fps", "bitrate.mean"}

// TestWorker is the test worker processes run (UseWorkers("TestWorker")):
// in a worker it serves sessions. Run as a test, it checks the worker
// mode: a lossy scenario and a spiky one, each run twice at its seed in
// worker processes, give the sessions asked for, judged as every native
// run is, by the bound rule (docs/testing.md, "How the library's bounds
// were set"): each run meets its scenario's expectations, measured here on
// the result the worker handed back, and each run's frame rate and mean
// bitrate lie within the rule's band around the other's (a factor of
// sqrt(2) either way, so a halving fails). Native runs are not compared
// byte for byte: in workers two runs of a seed are mostly identical, but
// what the Go runtime still decides moves one now and then (once an uplink
// queue delay of 14483 ns against 15179 ns, at byte 67110 of abr-lossy's
// result); the test logs whether they were.
func TestWorker(t *testing.T) {
	if Serving() {
		Serve(t)
		return
	}
	UseWorkers("TestWorker")
	defer UseWorkers("")
	scs := asWritten(t, "lossy-fixed-bitrate", "mobile-spikes")
	seed := scs[0].Seed
	for _, sc := range scs {
		require.Equal(t, seed, sc.Seed, "%s: the scenarios share the library's seed, which their bounds were set at", sc.Name)
	}
	sessions := Run(t, Plan{Scenarios: scs, Seeds: []uint64{seed, seed}, Parallel: 2})
	require.Len(t, sessions, 4)
	for i, sc := range scs {
		pair := sessions[2*i : 2*i+2]
		for _, s := range pair {
			require.NoError(t, s.Err, sc.Name)
			r := s.Result
			require.Equal(t, sc.Name, r.Scenario)
			require.Equal(t, seed, r.Seed, "%s: the seed asked for", sc.Name)
			require.Equal(t, sc.Duration, r.Ran, "%s: ran its whole duration", sc.Name)
			require.NotEmpty(t, r.Frames, sc.Name)
			checks := measure.Evaluate(r, sc.Expect)
			require.Len(t, checks, len(sc.Expect), sc.Name)
			for _, c := range checks {
				if !c.Pass {
					t.Errorf("%s seed %d, in a worker: %s", sc.Name, seed, c)
				}
			}
		}
		a, b := pair[0].Result, pair[1].Result
		for _, name := range workerAgreement {
			va, vb := measureWhole(t, a, name), measureWhole(t, b, name)
			if lo, hi := ruleBand(va); vb < lo || vb > hi {
				t.Errorf("%s seed %d: %s is %.4g in one worker run and %.4g in the other, outside the bound rule's band around it (%.4g to %.4g): "+
					"more than native runs of one seed differ", sc.Name, seed, name, va, vb, lo, hi)
			}
		}
		logIdentity(t, a, b)
	}
}

// asWritten is the named scenarios of the library as written: whole
// duration, seed and expectations.
func asWritten(t *testing.T, names ...string) []*scenarios.Scenario {
	t.Helper()
	scs, err := jobspec.Select("", names)
	require.NoError(t, err)
	require.Len(t, scs, len(names))
	return scs
}

// measureWhole is a measure over the whole run.
func measureWhole(t *testing.T, r *result.Run, name string) float64 {
	t.Helper()
	v, err := measure.Of(r, name, 0, 0)
	require.NoError(t, err, "%s: %s", r.Scenario, name)
	require.Positive(t, v, "%s: %s", r.Scenario, name)
	return v
}

// ruleBand is the band the bound rule sets around one value (no spread):
// v/sqrt(2) to v*sqrt(2), halfway, as ratios, between the value and a
// twofold change.
func ruleBand(v float64) (lo, hi float64) { return v / math.Sqrt2, v * math.Sqrt2 }

// logIdentity says whether two runs were the same to the byte and, if
// not, where they first differ: worth knowing, not a failure.
func logIdentity(t *testing.T, a, b *result.Run) {
	t.Helper()
	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jb, err := json.Marshal(b)
	require.NoError(t, err)
	if bytes.Equal(ja, jb) {
		t.Logf("%s seed %d: the two worker runs are the same to the byte", a.Scenario, a.Seed)
		return
	}
	k := 0
	for k < len(ja) && k < len(jb) && ja[k] == jb[k] {
		k++
	}
	lo := max(0, k-120)
	t.Logf("%s seed %d: the two worker runs differ from byte %d (judged by the bound rule above):\n%s\n%s",
		a.Scenario, a.Seed, k, ja[lo:min(len(ja), k+60)], jb[lo:min(len(jb), k+60)])
}
