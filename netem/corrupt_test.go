package netem

import (
	"bytes"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// corruptFlips returns how many bits differ between a and b, and the index
// of the last one.
func corruptFlips(a, b []byte) (n, at int) {
	for i := range a {
		if d := bits.OnesCount8(a[i] ^ b[i]); d > 0 {
			n += d
			at = i*8 + bits.TrailingZeros8(a[i]^b[i])
		}
	}
	return n, at
}

func TestCorruptRateAndOneBitFlipped(t *testing.T) {
	const n, p, size = 100_000, 0.3, 16
	tp := newTestPipeline(t, 13, &Corrupt{Probability: p})
	payloads := rand.New(rand.NewPCG(1, 2)) // the test's own, not the link's
	var hits [size * 8]int
	corrupted := 0
	for i := range n {
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(payloads.Uint32())
		}
		orig := bytes.Clone(data)
		out := tp.pl.process(&Packet{Data: data}, t0.Add(time.Duration(i)), nil)
		require.Len(t, out, 1)
		flips, at := corruptFlips(orig, out[0].Packet.Data)
		if out[0].Packet.Corrupted {
			corrupted++
			require.Equal(t, 1, flips, "exactly one bit differs")
			hits[at]++
		} else {
			require.Zero(t, flips, "an unmarked packet is intact")
		}
	}
	require.Equal(t, uint64(corrupted), tp.stats.Corrupted)
	rndRequireProportion(t, p, corrupted, n, "corruption rate")

	// Every bit of the payload is equally likely to be the one: Pearson's
	// chi-square over the 128 positions stays under its 99.9% quantile for
	// 127 degrees of freedom (Wilson-Hilferty approximation, good to a
	// fraction of a percent here).
	expected := float64(corrupted) / float64(len(hits))
	chi2 := 0.0
	for _, h := range hits {
		chi2 += (float64(h) - expected) * (float64(h) - expected) / expected
	}
	k := float64(len(hits) - 1)
	q := k * math.Pow(1-2/(9*k)+3.0902323061678132*math.Sqrt(2/(9*k)), 3)
	t.Logf("chi-square of bit positions: %.1f (99.9%% quantile %.1f)", chi2, q)
	require.Less(t, chi2, q, "bit positions are uniform")
}

func TestCorruptLeavesEmptyPayloadAlone(t *testing.T) {
	tp := newTestPipeline(t, 1, &Corrupt{Probability: 1})
	for i := range 100 {
		out := tp.send(0, time.Duration(i))
		require.Len(t, out, 1)
		require.False(t, out[0].Packet.Corrupted)
		require.Empty(t, out[0].Packet.Data)
	}
	require.Zero(t, tp.stats.Corrupted)
}

func TestCorruptThroughLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, p = 10_000, 0.1
		l, rec := newTestLink(t, LinkConfig{Seed: 9, Impairments: []Impairment{
			&Corrupt{Probability: p},
			&Delay{Delay: 5 * time.Millisecond},
		}})
		sent := make([][]byte, n)
		for i := range n {
			sent[i] = []byte{byte(i), byte(i >> 8), 0xaa, 0x55}
			require.NoError(t, l.Send(&Packet{Data: bytes.Clone(sent[i])}))
			time.Sleep(500 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := rec.arrivals()
		require.Len(t, got, n, "corrupted packets are delivered")
		corrupted := 0
		for i, a := range got {
			require.Equal(t, uint64(i+1), a.P.Seq)
			flips, _ := corruptFlips(sent[i], a.P.Data)
			if a.P.Corrupted {
				corrupted++
				require.Equal(t, 1, flips)
			} else {
				require.Zero(t, flips)
			}
		}
		require.Equal(t, uint64(corrupted), l.Stats().Corrupted)
		rndRequireProportion(t, p, corrupted, n, "corruption rate through a link")
	})
}

func TestCorruptIsSeeded(t *testing.T) {
	rndRequireSeeded(t, func() []Impairment { return []Impairment{&Corrupt{Probability: 0.5}} })
}

func TestCorruptValidate(t *testing.T) {
	for _, p := range []float64{-0.5, 1.5, math.NaN()} {
		require.ErrorContains(t, (&Corrupt{Probability: p}).Validate(), "not in [0, 1]")
	}
	_, err := NewLink(LinkConfig{Impairments: []Impairment{&Corrupt{Probability: 7}}}, func(*Packet) {})
	require.ErrorContains(t, err, "corrupt: probability 7 is not in [0, 1]")
	imp, err := New("corrupt")
	require.NoError(t, err)
	require.Equal(t, &Corrupt{}, imp)
}
