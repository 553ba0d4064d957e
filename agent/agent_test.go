package agent

import (
	"bufio"
	"context"
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
