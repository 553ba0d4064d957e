package netem

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBlockDropsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{&Delay{Delay: 5 * time.Millisecond}, &Block{}}})
		for i := range 100 {
			require.NoError(t, l.Send(&Packet{Data: make([]byte, 10+i%7)}))
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.Empty(t, rec.arrivals())
		s := l.Stats()
		require.Equal(t, s.Offered, s.Dropped[DropBlocked])
		require.Equal(t, uint64(100), s.Dropped[DropBlocked].Packets)
		require.Len(t, s.Dropped, 1, "blocked packets are counted once, as blocked")
		require.Zero(t, s.Delivered)
		require.Zero(t, s.InFlight)

		// Lifting the block (as a timeline phase would) lets packets through.
		require.NoError(t, l.Set([]Impairment{&Delay{Delay: 5 * time.Millisecond}}))
		require.NoError(t, l.Send(&Packet{Data: []byte{1}}))
		time.Sleep(time.Second)
		require.Len(t, rec.arrivals(), 1)
	})
}

func TestBlockRegistered(t *testing.T) {
	imp, err := New("block")
	require.NoError(t, err)
	require.IsType(t, &Block{}, imp)
	require.Equal(t, StageGate, imp.Stage())
}
