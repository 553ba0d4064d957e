package lab

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/lab/result"
	"github.com/nuvirahub/latencylab/scenarios"
)

// withAndWithoutECN runs the library's scenario as written (ECN-capable)
// and again with its ecn left out, and returns both results.
func withAndWithoutECN(t *testing.T, name string) (with, without *result.Run) {
	t.Helper()
	lib, err := scenarios.Library()
	require.NoError(t, err)
	i := slices.IndexFunc(lib, func(sc *scenarios.Scenario) bool { return sc.Name == name })
	require.GreaterOrEqual(t, i, 0, name)
	require.Equal(t, "classic", lib[i].ECN, "%s is ECN-capable as written", name)
	off := *lib[i]
	off.ECN = ""
	return runScenario(t, lib[i]), runScenario(t, &off)
}

// logECN writes a result's downlink marks and drops, and the session's
// latency, for the -v run that docs/rmcat.md and docs/traffic.md quote.
func logECN(t *testing.T, label string, r *result.Run) {
	t.Helper()
	s := r.Summary
	t.Logf("%s: downlink %d marked, dropped %v; latency median %.1f ms, p95 %.1f ms, %d freezes",
		label, r.Links.Down.Marked, r.Links.Down.Dropped, millis(s.Latency.Median), millis(s.Latency.P95), len(s.Freezes))
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// RFC 8867's ECN case (rmcat-5-9-ecn): with the session ECN-capable,
// CoDel marks its packets and drops none for CoDel's reasons; without ECN
// the same queue drops them and marks none.
func TestRMCATECN(t *testing.T) {
	with, without := withAndWithoutECN(t, "rmcat-5-9-ecn")
	logECN(t, "ECN", with)
	logECN(t, "no ECN", without)
	require.Positive(t, with.Links.Down.Marked)
	require.Zero(t, with.Links.Down.Dropped["codel"])
	require.Zero(t, without.Links.Down.Marked)
	require.Positive(t, without.Links.Down.Dropped["codel"])
}

// The L4S bottleneck (l4s-ecn-media-beside-tcp): the ECN-capable session
// shares DualPI2's classic queue with a classic TCP download; its packets
// are marked, the download's dropped. Without ECN nothing is marked, and
// DualPI2 drops more.
func TestL4SECNMediaBesideTCP(t *testing.T) {
	with, without := withAndWithoutECN(t, "l4s-ecn-media-beside-tcp")
	logECN(t, "ECN", with)
	logECN(t, "no ECN", without)
	require.Positive(t, with.Links.Down.Marked)
	require.Positive(t, with.Links.Down.Dropped["dualpi2"], "the download's drops")
	require.Zero(t, without.Links.Down.Marked)
	require.Greater(t, without.Links.Down.Dropped["dualpi2"], with.Links.Down.Dropped["dualpi2"])
}
