package netem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A precise link (real time only) delivers like any other: in order, all of
// it, and Close ends its timer goroutine. Its timing is a benchmark figure
// (BenchmarkProxyOneWayDelay), not asserted here.
func TestPreciseLinkDeliversInOrderAndCloses(t *testing.T) {
	got := make(chan uint64, 100)
	l, err := NewLink(LinkConfig{Precise: true, Impairments: []Impairment{&Delay{Delay: 2 * time.Millisecond}}},
		func(p *Packet) { got <- p.Seq })
	require.NoError(t, err)
	for range 50 {
		require.NoError(t, l.Send(&Packet{Data: []byte{1}}))
	}
	for i := range 50 {
		select {
		case seq := <-got:
			require.Equal(t, uint64(i+1), seq)
		case <-time.After(10 * time.Second):
			t.Fatalf("packet %d not delivered", i+1)
		}
	}
	require.NoError(t, l.Close())
}
