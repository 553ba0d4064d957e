package netem

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLossRateWithinBinomialInterval(t *testing.T) {
	const n = 200_000
	for _, p := range []float64{0.01, 0.10} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			tp := newTestPipeline(t, 42, &Loss{Probability: p})
			delivered := 0
			for i := range n {
				delivered += len(tp.send(100, time.Duration(i)*time.Microsecond))
			}
			lost := int(tp.stats.Dropped[DropLoss].Packets)
			require.Equal(t, n, lost+delivered)
			rndRequireProportion(t, p, lost, n, "loss rate at %v", p)
		})
	}
}

func TestLossExtremes(t *testing.T) {
	never := newTestPipeline(t, 1, &Loss{Probability: 0})
	always := newTestPipeline(t, 1, &Loss{Probability: 1})
	for i := range 10_000 {
		require.Len(t, never.send(10, time.Duration(i)), 1)
		require.Empty(t, always.send(10, time.Duration(i)))
	}
}

func TestLossThroughLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, p = 20_000, 0.1
		l, rec := newTestLink(t, LinkConfig{Seed: 3, Impairments: []Impairment{
			&Loss{Probability: p},
			&Delay{Delay: 10 * time.Millisecond},
		}})
		for i := range n {
			require.NoError(t, l.Send(&Packet{Data: []byte{byte(i), byte(i >> 8)}}))
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		s := l.Stats()
		got := rec.arrivals()
		require.Equal(t, uint64(n), s.Offered.Packets)
		require.Equal(t, s.Offered.Packets, s.Delivered.Packets+s.Dropped[DropLoss].Packets)
		require.Len(t, got, int(s.Delivered.Packets))
		rndRequireProportion(t, p, int(s.Dropped[DropLoss].Packets), n, "loss rate through a link")
		for i, a := range got {
			require.Equal(t, 10*time.Millisecond, a.At.Sub(a.P.Sent), "survivors are only delayed")
			require.Equal(t, []byte{byte(a.P.Seq - 1), byte((a.P.Seq - 1) >> 8)}, a.P.Data, "and unchanged")
			if i > 0 {
				require.Greater(t, a.P.Seq, got[i-1].P.Seq, "in order")
			}
		}
	})
}

func TestLossIsSeeded(t *testing.T) {
	rndRequireSeeded(t, func() []Impairment { return []Impairment{&Loss{Probability: 0.3}} })
}

func TestLossValidate(t *testing.T) {
	for _, p := range []float64{-0.01, 1.01, math.NaN(), math.Inf(1)} {
		require.ErrorContains(t, (&Loss{Probability: p}).Validate(), "not in [0, 1]", "probability %v", p)
	}
	require.NoError(t, (&Loss{Probability: 1}).Validate())
	_, err := NewLink(LinkConfig{Impairments: []Impairment{&Loss{Probability: 2}}}, func(*Packet) {})
	require.ErrorContains(t, err, "loss: probability 2 is not in [0, 1]")
	imp, err := New("loss")
	require.NoError(t, err)
	require.Equal(t, &Loss{}, imp)
}
