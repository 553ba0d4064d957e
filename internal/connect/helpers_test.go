package connect

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// delay returns a link configuration that delays every packet by d.
func delay(d time.Duration) netem.LinkConfig {
	return netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: d}}}
}

// newTopology builds a topology; the cleanup closes it.
func newTopology(t *testing.T, cfg TopologyConfig) (*Topology, func()) {
	t.Helper()
	topo, err := NewTopology(cfg)
	require.NoError(t, err)
	return topo, func() { require.NoError(t, topo.Close()) }
}

// result is one side's outcome.
type result struct {
	s   *Session
	err error
	at  time.Duration // since the start
}

// connect starts the agent's Accept and the viewer's Dial at the same
// instant and waits for both. The cleanup closes the sessions.
func connect(t *testing.T, agentCfg, viewerCfg Config) (agent, viewer result, cleanup func()) {
	t.Helper()
	start := time.Now()
	accepted := make(chan result, 1)
	go func() {
		s, err := Accept(context.Background(), agentCfg)
		accepted <- result{s, err, time.Since(start)}
	}()
	s, err := Dial(context.Background(), viewerCfg)
	viewer = result{s, err, time.Since(start)}
	agent = <-accepted
	return agent, viewer, func() {
		for _, r := range []result{viewer, agent} {
			if r.s != nil {
				require.NoError(t, r.s.Close())
			}
		}
	}
}

// mustConnect is connect for sessions that must succeed on path want.
func mustConnect(t *testing.T, topo *Topology, agentCfg, viewerCfg Config, want Path) (agent, viewer result, cleanup func()) {
	t.Helper()
	agent, viewer, cleanup = connect(t, agentCfg, viewerCfg)
	require.NoError(t, viewer.err, "dial")
	require.NoError(t, agent.err, "accept")
	require.Equal(t, want, viewer.s.Path, "viewer's path")
	require.Equal(t, want, agent.s.Path, "agent's path")
	return agent, viewer, cleanup
}

// send writes payload on a new stream from the viewer; it returns what the
// agent read and how long the last byte took to arrive.
func send(t *testing.T, viewer, agent *Session, payload []byte) ([]byte, time.Duration) {
	t.Helper()
	type read struct {
		data []byte
		at   time.Time
		err  error
	}
	got := make(chan read, 1)
	go func() {
		s, err := agent.Conn.AcceptStream(context.Background())
		if err != nil {
			got <- read{err: err}
			return
		}
		data, err := io.ReadAll(s)
		got <- read{data, time.Now(), err}
	}()
	s, err := viewer.Conn.OpenStreamSync(context.Background())
	require.NoError(t, err)
	start := time.Now()
	_, err = s.Write(payload)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	r := <-got
	require.NoError(t, r.err)
	return r.data, r.at.Sub(start)
}

// logSteps reports a session's steps relative to start.
func logSteps(t *testing.T, who string, s *Session, start time.Time) {
	t.Helper()
	for _, st := range s.Steps {
		t.Logf("%s: %-13s %8v .. %8v (%v) err=%v", who, st.Path, st.Start.Sub(start), st.End.Sub(start), st.Duration(), st.Err)
	}
}
