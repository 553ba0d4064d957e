package netem

import (
	"math/bits"
	"testing"

	"github.com/stretchr/testify/require"
)

// A copy is taken where the duplicate acts, so a corrupt after it treats the
// copy on its own: one flipped bit each, not two in the copy.
func TestDuplicateCopiesAtItsOwnPlaceInTheLink(t *testing.T) {
	tp := newTestPipeline(t, 1, &Duplicate{Probability: 1}, &Corrupt{Probability: 1})
	for i := range 200 {
		out := tp.send(64, 0)
		require.Len(t, out, 2, "packet %d", i)
		require.False(t, out[0].Packet.Duplicate)
		require.True(t, out[1].Packet.Duplicate)
		for _, d := range out {
			flipped := 0
			for _, b := range d.Packet.Data { // sent as zeros
				flipped += bits.OnesCount8(b)
			}
			require.Equal(t, 1, flipped, "packet %d duplicate=%v", i, d.Packet.Duplicate)
			require.True(t, d.Packet.Corrupted)
		}
	}
	require.Equal(t, uint64(200), tp.stats.Duplicated)
	require.Equal(t, uint64(400), tp.stats.Corrupted)
}
