package quicpair

import (
	"context"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/netem"
	"github.com/stretchr/testify/require"
)

// badNetwork is the documented 25 ms / 1% / 5 Mbit/s path, each direction.
func badNetwork(t *testing.T, seed uint64) *netem.Network {
	n := netem.NewNetwork(seed)
	for _, r := range [][2]netip.Addr{{viewerIP, agentIP}, {agentIP, viewerIP}} {
		_, err := n.SetLink(r[0], r[1], netem.LinkConfig{Impairments: netem.DocumentedBadLink()})
		require.NoError(t, err)
	}
	return n
}

// bulkOverBadNetwork runs a QUIC bulk transfer of length d from 10.0.0.1 to
// 10.0.0.2 over badNetwork in a synctest bubble. crypto/rand is seeded too
// (quic-go draws connection IDs and skipped packet numbers from it), so the
// whole run is a function of the seed.
func bulkOverBadNetwork(t *testing.T, seed uint64, d time.Duration) (BulkResult, netem.Stats) {
	cryptotest.SetGlobalRandom(t, seed)
	var res BulkResult
	var toServer netem.Stats
	synctest.Test(t, func(t *testing.T) {
		n := badNetwork(t, seed)
		defer n.Close()
		p, err := Open(context.Background(), n.MustListen("10.0.0.2:4433"), n.MustListen("10.0.0.1:5000"), nil, nil)
		require.NoError(t, err)
		defer p.Close()
		res, err = Bulk(context.Background(), p, d)
		require.NoError(t, err)
		toServer = n.Link(viewerIP, agentIP).Stats()
	})
	return res, toServer
}

// The links' decisions are a function of the seed (netem's own tests show
// it), but quic-go inside a bubble is not entirely: when several of its
// goroutines and timers are ready at the same virtual instant, the Go
// runtime (select, the scheduler) picks among them at random, and that
// cannot be seeded. About one run in six then sends a slightly different
// packet sequence. This test bounds the effect: runs with the same seed agree
// within 3% of goodput (the spread seen is under 1%).
func TestQUICTransferRepeatsForASeed(t *testing.T) {
	a, _ := bulkOverBadNetwork(t, 7, 10*time.Second)
	for range 3 {
		b, _ := bulkOverBadNetwork(t, 7, 10*time.Second)
		require.InEpsilon(t, a.Goodput(), b.Goodput(), 0.03)
	}
}

// transferFigures is the line the benchmark reads from the test's log.
var transferFigures = regexp.MustCompile(`transfer-figures goodput_bps=(\S+) wall_s=(\S+)`)

// A 60 s QUIC bulk transfer over the documented bad link (findings N9, N11),
// in virtual time. quic-go's controller is NewReno: random loss reads as
// congestion, so the flow stays well under the 5 Mbit/s the link carries.
// BenchmarkQUICTransfer60s times this test; its goodput is in docs/performance.md.
// The figures lab/findings.yaml (N9, N11) and docs/netem.md quote from it
// are pinned (evidence_test.go).
func TestQUICTransfer60sOverTheDocumentedBadLink(t *testing.T) {
	wallStart := time.Now()
	res, toAgent := bulkOverBadNetwork(t, 1, 60*time.Second)
	wall := time.Since(wallStart)

	require.Positive(t, res.Bytes)
	require.Less(t, res.Goodput(), 5e6, "no more than the link carries")
	// The link lost 1% of what QUIC offered it, within a 99.9% binomial interval.
	lost := float64(toAgent.Dropped[netem.DropLoss].Packets)
	offered := float64(toAgent.Offered.Packets)
	halfWidth := 3.29 * math.Sqrt(0.01*0.99/offered)
	require.InDelta(t, 0.01, lost/offered, halfWidth, "lost %v of %v", lost, offered)
	require.Positive(t, res.Sender.PacketsLost, "quic-go saw the losses")

	t.Logf("QUIC bulk, 60 s over 25 ms / 1%% / 5 Mbit/s each way: %v", res)
	t.Logf("link to the server: offered %d packets, lost %d, queue drops %d, mean queueing %v, max %v",
		toAgent.Offered.Packets, toAgent.Dropped[netem.DropLoss].Packets, toAgent.Dropped[netem.DropQueue].Packets,
		toAgent.Queued.Mean(), toAgent.Queued.Max)
	t.Logf("wall time %v: %.0fx real time", wall.Round(time.Millisecond), 60/wall.Seconds())
	t.Logf("transfer-figures goodput_bps=%.0f wall_s=%.4f", res.Goodput(), wall.Seconds())
	pinTransferFigures(t, 60*time.Second, res, toAgent)
}

// BenchmarkQUICTransfer60s measures the virtual-time speed of the 60 s
// transfer above (goal: under 2 s of wall time, >= 200x real time on two
// cores). synctest.Test needs a *testing.T, so the benchmark runs that test
// in a child process of this test binary and reads its figures.
func BenchmarkQUICTransfer60s(b *testing.B) {
	var goodput, wall float64
	for b.Loop() {
		out, err := exec.Command(os.Args[0], "-test.run=^TestQUICTransfer60sOverTheDocumentedBadLink$", "-test.v", "-test.count=1").CombinedOutput()
		require.NoError(b, err, "%s", out)
		m := transferFigures.FindSubmatch(out)
		require.NotNil(b, m, "%s", out)
		goodput, _ = strconv.ParseFloat(string(m[1]), 64)
		w, _ := strconv.ParseFloat(string(m[2]), 64)
		wall += w
	}
	b.ReportMetric(goodput/1e6, "goodput-Mbit/s")
	b.ReportMetric(60*float64(b.N)/wall, "x-real-time")
	b.ReportMetric(wall/float64(b.N), "wall-s/60s")
}
