package tcplike

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// The model's side of its reference cases (docs/traffic.md, "The model
// against kernel TCP and ns-3"), as netem/kernel's TestReferenceCases runs
// them on the kernel's TCP and testdata/ns3 on ns-3's: two flows of one
// controller, then CUBIC against Reno, on 10 Mbit/s with 25 ms one way
// and a 42-packet queue (about a bandwidth-delay product); one Reno flow
// alone on the documented bad link (5 Mbit/s, 25 ms, 1% loss both ways).
// Each run's flows start at random times in their first half second,
// drawn from the run's seed; each flow lasts 30 s and its goodput leaves
// out its first 2 s, as the kernel's Bulk measures it.
const (
	refRuns    = 3
	refSeconds = 30
	refWarmup  = 2
)

// share runs flows of controllers a and b for seconds on a 10 Mbit/s
// link with a queue of packets and delay one way, each starting at a
// random time in its first half second (drawn from seed), and returns
// their goodputs after warmup seconds.
func share(t *testing.T, seed uint64, packets int, delay time.Duration, seconds, warmup int, a, b string) (float64, float64) {
	var g [2]float64
	synctest.Test(t, func(t *testing.T) {
		n := path(t, seed, bottleneck(10_000_000, packets, delay), []netem.Impairment{&netem.Delay{Delay: delay}})
		defer n.Close()
		rng := rand.New(rand.NewPCG(seed, 0))
		var wg sync.WaitGroup
		for i, cc := range []string{a, b} {
			wait := time.Duration(rng.Int64N(int64(500 * time.Millisecond)))
			wg.Go(func() {
				time.Sleep(wait)
				f := startFlow(t, n, 5000+uint16(i), Config{Congestion: cc})
				defer f.close()
				f.fetchFor(t, time.Duration(seconds)*time.Second)
				g[i] = f.goodput(warmup, seconds)
			})
		}
		wg.Wait()
	})
	return g[0], g[1]
}

func TestReferenceCases(t *testing.T) {
	pairs := [][2]string{{CUBIC, CUBIC}, {Reno, Reno}, {CUBIC, Reno}}
	for _, p := range pairs {
		var sa, sb float64
		for seed := uint64(1); seed <= refRuns; seed++ {
			a, b := share(t, seed, 42, 25*time.Millisecond, refSeconds, refWarmup, p[0], p[1])
			t.Logf("run %d: %s %.2f, %s %.2f Mbit/s (sum %.2f)", seed, p[0], a/1e6, p[1], b/1e6, (a+b)/1e6)
			require.InDelta(t, 9.78e6, a+b, 0.05*9.78e6, "the link stays full")
			sa, sb = sa+a, sb+b
		}
		t.Logf("%s against %s: mean %.2f and %.2f Mbit/s", p[0], p[1], sa/refRuns/1e6, sb/refRuns/1e6)
	}
	var sum float64
	for seed := uint64(1); seed <= refRuns; seed++ {
		var g float64
		synctest.Test(t, func(t *testing.T) {
			n := path(t, seed, netem.DocumentedBadLink(), netem.DocumentedBadLink())
			defer n.Close()
			f := startFlow(t, n, 5000, Config{Congestion: Reno})
			defer f.close()
			f.fetchFor(t, refSeconds*time.Second)
			g = f.goodput(refWarmup, refSeconds)
		})
		t.Logf("run %d: reno on the bad link %.2f Mbit/s", seed, g/1e6)
		require.Positive(t, g)
		sum += g
	}
	t.Logf("reno on the bad link: mean %.2f Mbit/s", sum/refRuns/1e6)
}
