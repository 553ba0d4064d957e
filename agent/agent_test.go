package agent

import (
	"bufio"
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/wire"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
)

func TestStepsChangesAtItsInstants(t *testing.T) {
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &Steps{Initial: 4e6, At: []time.Duration{time.Second, 3 * time.Second}, Bps: []int64{3e6, 2e6}}
	require.Equal(t, int64(4e6), s.Bitrate(t0))
	require.Equal(t, int64(4e6), s.Bitrate(t0.Add(time.Second-1)))
	require.Equal(t, int64(3e6), s.Bitrate(t0.Add(time.Second)))
	require.Equal(t, int64(2e6), s.Bitrate(t0.Add(5*time.Second)))
	require.Equal(t, int64(5), Fixed{Bps: 5}.Bitrate(t0))
}

func TestNewRefusesAMissingScreen(t *testing.T) {
	_, err := New(Config{})
	require.ErrorContains(t, err, "Screen is required")
}

// The agent answers clock probes on its own clock, counts acknowledged
// bytes off the send cap, and ends when the viewer closes the control stream.
func TestAgentServesTheControlStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := netem.NewNetwork(1)
		defer n.Close()
		p, err := quicpair.Open(context.Background(), n.MustListen("10.0.0.2:1"), n.MustListen("10.0.0.1:1"), nil, nil)
		require.NoError(t, err)
		defer p.Close()
		scr, err := screen.New(1, screen.Config{Timeline: []screen.Phase{{Source: screen.Still{}}}})
		require.NoError(t, err)
		agentClock := clock.New(3*time.Second, 0, time.Now())
		a, err := New(Config{Screen: scr, Clock: agentClock})
		require.NoError(t, err)
		done := make(chan error)
		go func() { done <- a.Run(context.Background(), p.Server) }()

		st, err := p.Client.OpenStreamSync(context.Background())
		require.NoError(t, err)
		t1 := time.Now()
		require.NoError(t, wire.WriteMessage(st, &wire.ClockProbe{ID: 9, T1: t1}))
		m, err := wire.ReadMessage(bufio.NewReader(st))
		require.NoError(t, err)
		reply := m.(*wire.ClockReply)
		require.Equal(t, uint32(9), reply.ID)
		require.True(t, reply.T1.Equal(t1))
		require.Equal(t, 3*time.Second, reply.T2.Sub(time.Now()), "the agent's clock, 3 s ahead, read when the probe arrived")

		require.NoError(t, wire.WriteMessage(st, &wire.Report{Frames: 7}))
		require.NoError(t, st.Close())
		require.NoError(t, <-done)
		require.Len(t, a.Reports(), 1)
		require.Equal(t, uint32(7), a.Reports()[0].Frames)
	})
}

// lossCounter is a controller that judges loss (as GCC does).
type lossCounter struct {
	Fixed
	mu    sync.Mutex
	calls [][2]uint64 // sent, lost
}

func (l *lossCounter) Loss(_ time.Time, sent, lost uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, [2]uint64{sent, lost})
}

// With every viewer report the agent hands a controller that judges loss
// its connection's packets sent and declared lost, totals since it opened.
func TestAgentHandsOverLossAtEachReport(t *testing.T) {
	// lossAtReports runs an agent showing src, its packets to the viewer
	// lost with probability loss once the connection is up, through three
	// reports, and returns what its controller was handed and its
	// connection's own counts.
	lossAtReports := func(t *testing.T, src screen.Source, loss float64) ([][2]uint64, quicStats) {
		n := netem.NewNetwork(1)
		defer n.Close()
		p, err := quicpair.Open(context.Background(), n.MustListen("10.0.0.2:1"), n.MustListen("10.0.0.1:1"), nil, nil)
		require.NoError(t, err)
		defer p.Close()
		if loss > 0 {
			_, err := n.SetLink(netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.1"),
				netem.LinkConfig{Impairments: []netem.Impairment{&netem.Loss{Probability: loss}}})
			require.NoError(t, err)
		}
		scr, err := screen.New(1, screen.Config{Timeline: []screen.Phase{{Source: src}}})
		require.NoError(t, err)
		lc := &lossCounter{Fixed: Fixed{Bps: 1e6}}
		a, err := New(Config{Screen: scr, Controller: lc})
		require.NoError(t, err)
		done := make(chan error)
		go func() { done <- a.Run(context.Background(), p.Server) }()

		st, err := p.Client.OpenStreamSync(context.Background())
		require.NoError(t, err)
		require.NoError(t, wire.WriteMessage(st, &wire.ClockProbe{ID: 1, T1: time.Now()}))
		_, err = wire.ReadMessage(bufio.NewReader(st))
		require.NoError(t, err)
		for range 3 {
			time.Sleep(250 * time.Millisecond) // virtual: the viewer's report period
			require.NoError(t, wire.WriteMessage(st, &wire.Report{Frames: 1}))
		}
		require.NoError(t, st.Close())
		require.NoError(t, <-done)
		stats := p.Server.ConnectionStats()

		lc.mu.Lock()
		defer lc.mu.Unlock()
		require.Len(t, lc.calls, 3, "one per report")
		for i, c := range lc.calls {
			require.NotZero(t, c[0], "the handshake's packets at least")
			if i > 0 {
				// Totals: between two reports the agent may send nothing
				// (a still screen's only packet, the report's
				// acknowledgement, can leave before the agent reads the
				// report; about one run in 600 of the lossy animation
				// sends nothing for one period), but over the three it
				// sends.
				require.GreaterOrEqual(t, c[0], lc.calls[i-1][0], "totals")
				require.GreaterOrEqual(t, c[1], lc.calls[i-1][1], "totals")
			}
		}
		require.Greater(t, lc.calls[2][0], lc.calls[0][0], "the agent sent between the first report and the last")
		return slices.Clone(lc.calls), quicStats{stats.PacketsSent, stats.PacketsLost}
	}
	synctest.Test(t, func(t *testing.T) {
		calls, stats := lossAtReports(t, screen.Still{}, 0)
		for _, c := range calls {
			require.Zero(t, c[1], "a lossless network")
		}
		require.LessOrEqual(t, calls[2][0], stats.sent, "the connection's own counts")
	})
	// A tenth of an animation's packets lost: the losses QUIC declared
	// reach the controller.
	synctest.Test(t, func(t *testing.T) {
		calls, stats := lossAtReports(t, screen.Animation{}, 0.1)
		require.Positive(t, calls[2][1], "losses handed over")
		require.LessOrEqual(t, calls[2][0], stats.sent)
		require.LessOrEqual(t, calls[2][1], stats.lost, "the connection's own counts")
	})
}

// quicStats is a connection's packets sent and declared lost.
type quicStats struct{ sent, lost uint64 }
