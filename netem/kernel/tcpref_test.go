//go:build linux

package kernel

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// The kernel's side of the TCP-like model's reference cases
// (docs/traffic.md, "The model against kernel TCP and ns-3"): two flows of
// one controller, then CUBIC against Reno, on 10 Mbit/s with 25 ms one
// way and a queue of about a bandwidth-delay product (42 packets); and
// one Reno flow alone on the documented bad link (5 Mbit/s, 25 ms, 1%
// loss both ways), with the receiver's delayed acknowledgements and again
// without them. The same cases run on the model in netem/tcplike's
// TestReferenceCases and in ns-3 (testdata/ns3). They are measurements
// for the docs, about 10 minutes of real time for 30 s flows, so they run
// only when LAB_TCPREF_SECONDS gives each flow's length.

// refShared is the shared link of the two-flow cases.
func refShared() []netem.Impairment {
	return []netem.Impairment{&netem.Rate{Rate: 10_000_000, Queue: netem.QueueLimit{Packets: 42}}, &netem.Delay{Delay: 25 * time.Millisecond}}
}

func TestReferenceCases(t *testing.T) {
	s := os.Getenv("LAB_TCPREF_SECONDS")
	if s == "" {
		t.Skip("skipping: LAB_TCPREF_SECONDS unset (the reference cases take minutes)")
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "LAB_TCPREF_SECONDS")
	d := time.Duration(n) * time.Second
	requireKernel(t, controllers...)
	const runs uint64 = 3
	pair := func(a, b string) {
		for seed := uint64(1); seed <= runs; seed++ {
			p := newPair(t, Config{
				AtoB: netem.LinkConfig{Seed: seed, Impairments: refShared()},
				BtoA: netem.LinkConfig{Seed: seed, Impairments: []netem.Impairment{&netem.Delay{Delay: 25 * time.Millisecond}}},
			})
			var ra, rb BulkResult
			var ea, eb error
			var wg sync.WaitGroup
			wg.Go(func() { ra, ea = Bulk(context.Background(), p, a, d) })
			wg.Go(func() { rb, eb = Bulk(context.Background(), p, b, d) })
			wg.Wait()
			require.NoError(t, ea)
			require.NoError(t, eb)
			t.Logf("run %d: %s %.2f, %s %.2f Mbit/s (sum %.2f); retransmits %d, %d; RTT %v, %v",
				seed, a, ra.Goodput/1e6, b, rb.Goodput/1e6, (ra.Goodput+rb.Goodput)/1e6,
				ra.Retransmits, rb.Retransmits, ra.RTT.Round(time.Millisecond), rb.RTT.Round(time.Millisecond))
			require.NoError(t, p.Close())
		}
	}
	t.Run("same", func(t *testing.T) {
		for _, cc := range controllers {
			pair(cc, cc)
		}
	})
	t.Run("cubic against reno", func(t *testing.T) { pair("cubic", "reno") })
	for _, quick := range []bool{false, true} {
		name := "reno on the bad link"
		if quick {
			name += ", every segment acknowledged"
		}
		t.Run(name, func(t *testing.T) { renoAlone(t, d, runs, quick) })
	}
}

// renoAlone runs one Reno flow on the documented bad link; quick turns the
// receiver's delayed acknowledgements off (its routes' quickack).
func renoAlone(t *testing.T, d time.Duration, runs uint64, quick bool) {
	for seed := uint64(1); seed <= runs; seed++ {
		p := badLinkPair(t, seed)
		if quick {
			quickAck(t, p.NamespaceB())
		}
		res, err := Bulk(context.Background(), p, "reno", d)
		require.NoError(t, err)
		_, ba := p.Stats()
		t.Logf("run %d: reno %.2f Mbit/s, retransmits %d of %d segments, %d ACKs, RTT %v (min %v)",
			seed, res.Goodput/1e6, res.Retransmits, res.SegmentsOut, ba.Offered.Packets, res.RTT.Round(time.Millisecond), res.MinRTT.Round(time.Millisecond))
		require.NoError(t, p.Close())
	}
}

// quickAck sets quickack on every route of namespace ns: its TCP sends
// an ACK for every segment.
func quickAck(t *testing.T, ns string) {
	t.Helper()
	ip, err := ipCommand()
	require.NoError(t, err)
	out, err := exec.Command(ip, "-n", ns, "route", "show").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, r := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		args := append([]string{"-n", ns, "route", "change"}, strings.Fields(r)...)
		out, err := exec.Command(ip, append(args, "quickack", "1")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
}
