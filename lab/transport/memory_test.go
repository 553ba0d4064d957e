package transport

import (
	"context"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// largestTap records the largest datagram a link delivered.
type largestTap struct {
	mu      sync.Mutex
	largest int
}

func (*largestTap) Entered(*netem.Packet, netem.Fate) {}

func (l *largestTap) Left(p *netem.Packet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.largest = max(l.largest, p.Size())
}

// A session's QUIC connection on the in-memory network, as every default
// session makes it, finds the path's packet size: on Ethernet's 1500-byte
// MTU its video crosses the downlink in datagrams of 1441 bytes (quic-go's
// search stops within 20 bytes of the 1472 that fit), not quic-go's
// initial 1280.
func TestMemorySessionUsesThePathSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tap := &largestTap{}
		delay := func() []netem.Impairment { return []netem.Impairment{&netem.Delay{Delay: 10 * time.Millisecond}} }
		conn, err := Memory{}.Open(t.Context(), Network{Seed: 1,
			Uplink:   netem.LinkConfig{Name: "up", Impairments: delay()},
			Downlink: netem.LinkConfig{Name: "down", Impairments: append(delay(), &netem.Rate{Rate: 8e6}), Tap: tap}})
		require.NoError(t, err)
		defer conn.Close()
		got := make(chan int64, 1)
		go func() {
			s, err := conn.Viewer.AcceptUniStream(context.Background())
			if err != nil {
				got <- -1
				return
			}
			n, _ := io.Copy(io.Discard, s)
			got <- n
		}()
		s, err := conn.Agent.OpenUniStream()
		require.NoError(t, err)
		// Four seconds of video at 8 Mbit/s: long past the search's last
		// probe (they go 5 round trips apart, once the window allows).
		_, err = s.Write(make([]byte, 4<<20))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.Equal(t, int64(4<<20), <-got)
		tap.mu.Lock()
		defer tap.mu.Unlock()
		require.Equal(t, 1441, tap.largest)
	})
}
