package netem

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDuplicateRateAndCopies(t *testing.T) {
	const n, p = 100_000, 0.05
	tp := newTestPipeline(t, 11, &Duplicate{Probability: p})
	copies := 0
	for i := range n {
		orig := &Packet{Data: []byte(fmt.Sprintf("payload %d", i))}
		out := tp.pl.process(orig, t0.Add(time.Duration(i)*time.Microsecond), nil)
		require.Same(t, orig, out[0].Packet, "the original comes first")
		require.False(t, orig.Duplicate)
		switch len(out) {
		case 1:
		case 2:
			copies++
			c := out[1].Packet
			require.NotSame(t, orig, c)
			require.True(t, c.Duplicate, "the copy is marked")
			require.Equal(t, orig.Data, c.Data, "and identical")
			require.Equal(t, orig.Seq, c.Seq)
			require.Equal(t, orig.Sent, c.Sent)
			require.Equal(t, out[0].At, out[1].At)
			c.Data[0] ^= 0xff
			require.NotEqual(t, orig.Data[0], c.Data[0], "with its own payload")
		default:
			t.Fatalf("packet %d: %d deliveries", i, len(out))
		}
	}
	require.Equal(t, uint64(copies), tp.stats.Duplicated)
	rndRequireProportion(t, p, copies, n, "duplication rate")
}

func TestDuplicateThroughLink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, p = 10_000, 0.2
		l, rec := newTestLink(t, LinkConfig{Seed: 5, Impairments: []Impairment{
			&Delay{Delay: 30 * time.Millisecond},
			&Duplicate{Probability: p},
		}})
		for i := range n {
			require.NoError(t, l.Send(&Packet{Data: []byte{byte(i), byte(i >> 8)}}))
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := rec.arrivals()
		s := l.Stats()
		require.Len(t, got, n+int(s.Duplicated))
		require.Equal(t, s.Delivered.Packets, uint64(len(got)))
		bySeq := map[uint64][]arrival{}
		for _, a := range got {
			require.Equal(t, 30*time.Millisecond, a.At.Sub(a.P.Sent), "copies are delayed like originals")
			bySeq[a.P.Seq] = append(bySeq[a.P.Seq], a)
		}
		require.Len(t, bySeq, n, "every packet arrives")
		copies := 0
		for _, as := range bySeq {
			if len(as) == 2 {
				copies++
				require.False(t, as[0].P.Duplicate)
				require.True(t, as[1].P.Duplicate)
				require.Equal(t, as[0].P.Data, as[1].P.Data)
			}
		}
		require.Equal(t, int(s.Duplicated), copies)
		rndRequireProportion(t, p, copies, n, "duplication rate through a link")
	})
}

func TestDuplicateIsSeeded(t *testing.T) {
	rndRequireSeeded(t, func() []Impairment { return []Impairment{&Duplicate{Probability: 0.3}} })
}

func TestDuplicateValidate(t *testing.T) {
	for _, p := range []float64{-0.5, 1.5, math.NaN()} {
		require.ErrorContains(t, (&Duplicate{Probability: p}).Validate(), "not in [0, 1]")
	}
	require.NoError(t, (&Duplicate{Probability: 0}).Validate())
	_, err := NewLink(LinkConfig{Impairments: []Impairment{&Duplicate{Probability: -1}}}, func(*Packet) {})
	require.ErrorContains(t, err, "duplicate: probability -1 is not in [0, 1]")
	imp, err := New("duplicate")
	require.NoError(t, err)
	require.Equal(t, &Duplicate{}, imp)
}
