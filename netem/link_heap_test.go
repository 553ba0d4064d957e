package netem

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDeliveryHeapPopsInInstantThenDecisionOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h deliveryHeap
	for i := range 1000 {
		h.push(scheduled{Delivery: Delivery{At: t0.Add(time.Duration(r.IntN(50)) * time.Millisecond)}, order: uint64(i)})
	}
	prev := h.pop()
	for len(h) > 0 {
		s := h.pop()
		require.False(t, s.At.Before(prev.At))
		if s.At.Equal(prev.At) {
			require.Greater(t, s.order, prev.order, "equal instants leave in decision order")
		}
		prev = s
	}
}
