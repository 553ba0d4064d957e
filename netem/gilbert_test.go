package netem

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// geCases are the parameter sets the statistical tests run: tc's special
// cases from Bernoulli to the full model.
var geCases = []struct {
	name string
	g    GilbertElliott
}{
	{"bernoulli p=5%", GilbertElliott{P: 0.05}},
	{"simple gilbert p=5% r=30%", GilbertElliott{P: 0.05, R: 0.3, OneMinusH: 1, OneMinusK: 0}},
	{"gilbert p=2% r=25% 1-h=70%", GilbertElliott{P: 0.02, R: 0.25, OneMinusH: 0.7}},
	{"gilbert-elliott p=3% r=20% 1-h=80% 1-k=1%", GilbertElliott{P: 0.03, R: 0.2, OneMinusH: 0.8, OneMinusK: 0.01}},
}

// geLossChain is the loss process of g as a Markov chain on pairs of
// consecutive packets, each packet being (state, lost): state index
// s*2+lost, pair index prev*4+cur. It also returns, per pair, whether the
// current packet is lost and whether it starts a burst.
func geLossChain(g GilbertElliott) (chain rndChain, lost, starts []float64) {
	e := g.Effective()
	trans := [2][2]float64{{1 - e.P, e.P}, {e.R, 1 - e.R}} // good=0, bad=1
	loss := [2]float64{e.OneMinusK, e.OneMinusH}
	var single [4][4]float64
	for s := range 2 {
		for x := range 2 {
			for s2 := range 2 {
				pl := loss[s2]
				single[s*2+x][s2*2+1] = trans[s][s2] * pl
				single[s*2+x][s2*2] = trans[s][s2] * (1 - pl)
			}
		}
	}
	chain = make(rndChain, 16)
	lost = make([]float64, 16)
	starts = make([]float64, 16)
	for a := range 4 {
		for b := range 4 {
			i := a*4 + b
			chain[i] = make([]float64, 16)
			for c := range 4 {
				chain[i][b*4+c] = single[b][c]
			}
			lost[i] = float64(b % 2)
			starts[i] = float64(b % 2 * (1 - a%2))
		}
	}
	return chain, lost, starts
}

// The formulas in gilbert.go agree with the loss process computed the long
// way, from the Markov chain of consecutive packets.
func TestGilbertFormulasMatchMarkovChain(t *testing.T) {
	for _, c := range geCases {
		t.Run(c.name, func(t *testing.T) {
			chain, lost, starts := geLossChain(c.g)
			pi := chain.stationary()
			var pl, ps float64
			for i := range pi {
				pl += pi[i] * lost[i]
				ps += pi[i] * starts[i]
			}
			require.InDelta(t, pl, c.g.LossRate(), 1e-12)
			require.InDelta(t, pl/ps, c.g.MeanBurstLength(), 1e-9)
		})
	}
	simple := GilbertElliott{P: 0.05, R: 0.3}
	require.InDelta(t, 0.05/0.35, simple.LossRate(), 1e-15, "simple Gilbert: π_B")
	require.InDelta(t, 1/0.3, simple.MeanBurstLength(), 1e-12, "simple Gilbert: 1/r")
	require.Zero(t, (&GilbertElliott{}).MeanBurstLength(), "nothing lost")
	require.True(t, math.IsInf((&GilbertElliott{P: 1}).MeanBurstLength(), 1), "everything lost")
}

// tc-netem(8): "the only needed parameter is p while the others will be set
// to the default values r=1-p, 1-h=1 and 1-k=0".
func TestGilbertDefaultsFollowTheManPage(t *testing.T) {
	require.Equal(t, GilbertElliott{P: 0.05, R: 0.95, OneMinusH: 1, OneMinusK: 0}, (&GilbertElliott{P: 0.05}).Effective())
	require.Equal(t, GilbertElliott{P: 0.05, R: 0.3, OneMinusH: 1, OneMinusK: 0}, (&GilbertElliott{P: 0.05, R: 0.3}).Effective())
	require.Equal(t, GilbertElliott{P: 0.05, R: 0.3, OneMinusH: 0.6, OneMinusK: 0}, (&GilbertElliott{P: 0.05, R: 0.3, OneMinusH: 0.6}).Effective())
	full := GilbertElliott{P: 0.05, R: 0.3, OneMinusH: 0.6, OneMinusK: 0.02}
	require.Equal(t, full, full.Effective())
	// With p alone the model is Bernoulli: loss p, bursts geometric of mean 1/(1-p).
	b := &GilbertElliott{P: 0.05}
	require.InDelta(t, 0.05, b.LossRate(), 1e-15)
	require.InDelta(t, 1/0.95, b.MeanBurstLength(), 1e-12)
}

// Over 200k packets, the measured loss rate and mean burst length fall in
// their 99.9% intervals around the formulas. The losses are dependent, so
// the intervals use the exact long-run variance of the loss process (from
// its Markov chain) rather than the binomial one, and the burst length,
// a ratio of losses to burst starts, the delta method.
func TestGilbertMatchesModel(t *testing.T) {
	const n = 200_000
	for _, c := range geCases {
		t.Run(c.name, func(t *testing.T) {
			g := c.g
			tp := newTestPipeline(t, 7, &g)
			losses, bursts := 0, 0
			prevLost := false
			for i := range n {
				lost := len(tp.send(100, time.Duration(i)*time.Millisecond)) == 0
				if lost {
					losses++
					if !prevLost {
						bursts++
					}
				}
				prevLost = lost
			}
			require.Equal(t, uint64(losses), tp.stats.Dropped[DropLoss].Packets)

			chain, lost, starts := geLossChain(c.g)
			pi := chain.stationary()
			var muL, muS float64
			for i := range pi {
				muL += pi[i] * lost[i]
				muS += pi[i] * starts[i]
			}
			sLL := chain.asymptoticCov(pi, lost, lost)
			sLS := chain.asymptoticCov(pi, lost, starts)
			sSS := chain.asymptoticCov(pi, starts, starts)
			rndRequireWithin(t, c.g.LossRate(), math.Sqrt(sLL/n), rndZ999, float64(losses)/n, "loss rate")

			// Delta method for losses/starts.
			varB := (sLL/(muS*muS) - 2*muL*sLS/(muS*muS*muS) + muL*muL*sSS/(muS*muS*muS*muS)) / n
			rndRequireWithin(t, c.g.MeanBurstLength(), math.Sqrt(varB), rndZ999, float64(losses)/float64(bursts), "mean burst length")
		})
	}
}

// geStuckBad makes a model that moves to the bad state at the first packet (lost
// only from the second on) and, R being tiny, stays there.
func geStuckBad() *GilbertElliott { return &GilbertElliott{P: 1, R: 1e-12} }

// geNeverBad makes a model that never enters the bad state and leaves it at
// once: it loses a packet only if it starts in the bad state.
func geNeverBad() *GilbertElliott { return &GilbertElliott{P: 0, R: 1} }

func TestGilbertInheritsState(t *testing.T) {
	tp := newTestPipeline(t, 1, geStuckBad())
	require.Len(t, tp.send(10, 0), 1, "the first packet meets the good state")
	require.Empty(t, tp.send(10, 1), "the second the bad one")
	tp.pl.set([]Impairment{geNeverBad()})
	require.Empty(t, tp.send(10, 2), "the burst goes on into the new configuration")
	for i := range 100 {
		require.Len(t, tp.send(10, time.Duration(3+i)), 1, "and ends there at once (r = 1, p = 0)")
	}

	fresh := geNeverBad()
	fresh.Inherit(&Loss{Probability: 1})
	fresh.Inherit(nil)
	require.False(t, fresh.bad, "only a Gilbert-Elliott model passes its state on")
}

func TestGilbertKeepsStateAcrossLinkSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{geStuckBad()}})
		for range 5 {
			require.NoError(t, l.Send(&Packet{Data: []byte{1}}))
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, l.Set([]Impairment{geNeverBad()}))
		for range 5 {
			require.NoError(t, l.Send(&Packet{Data: []byte{2}}))
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		var seqs []uint64
		for _, a := range rec.arrivals() {
			seqs = append(seqs, a.P.Seq)
		}
		// Packets 2-5 are lost in the bad state, packet 6 too (the first
		// under the new set, still in the bad state), then r = 1.
		require.Equal(t, []uint64{1, 7, 8, 9, 10}, seqs)
		require.Equal(t, uint64(5), l.Stats().Dropped[DropLoss].Packets)
	})
}

func TestGilbertKeepsStateAcrossTimelinePhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{
			Impairments: []Impairment{geStuckBad()},
			Timeline:    []Phase{{At: 50 * time.Millisecond, Impairments: []Impairment{&GilbertElliott{P: 0, R: 1e-12}}}},
		})
		for range 100 {
			require.NoError(t, l.Send(&Packet{Data: []byte{1}}))
			time.Sleep(time.Millisecond)
		}
		synctest.Wait()
		// Without inheritance the second phase (p = 0) would lose nothing;
		// with it, the burst that began at packet 2 never ends (r ≈ 0).
		got := rec.arrivals()
		require.Len(t, got, 1)
		require.Equal(t, uint64(1), got[0].P.Seq)
		require.Equal(t, uint64(99), l.Stats().Dropped[DropLoss].Packets)
	})
}

func TestGilbertIsSeeded(t *testing.T) {
	rndRequireSeeded(t, func() []Impairment {
		return []Impairment{&GilbertElliott{P: 0.05, R: 0.3, OneMinusH: 0.8, OneMinusK: 0.01}}
	})
}

func TestGilbertValidate(t *testing.T) {
	for _, g := range []GilbertElliott{
		{P: -0.1}, {P: 1.5}, {P: 0.1, R: -1}, {P: 0.1, R: 2},
		{P: 0.1, OneMinusH: 1.1}, {P: 0.1, OneMinusK: -0.2}, {P: math.NaN()},
	} {
		require.ErrorContains(t, g.Validate(), "not in [0, 1]", "%+v", g)
	}
	require.NoError(t, (&GilbertElliott{P: 1, R: 1, OneMinusH: 1, OneMinusK: 1}).Validate())
	_, err := NewLink(LinkConfig{Impairments: []Impairment{&GilbertElliott{P: 0.1, OneMinusK: 3}}}, func(*Packet) {})
	require.ErrorContains(t, err, "gilbert: gemodel 1-k 3 is not in [0, 1]")
	imp, err := New("gilbert")
	require.NoError(t, err)
	require.Equal(t, &GilbertElliott{}, imp)
}
