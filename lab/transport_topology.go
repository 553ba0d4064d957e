package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/connect"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/netem/relay"
)

// topologyTransport is the two-site topology of a Session.Path: each PC
// on its own LAN, behind a router when it has a NAT, with a broker and a
// relay on the internet, connected by the path's strategy.
type topologyTransport struct{}

// open builds the two-site topology with the session's links as
// the viewer's access, and connects the two PCs by the path's strategy.
func (topologyTransport) open(ctx context.Context, s Session, epoch time.Time, capt *recording) (*opened, error) {
	only, err := s.Path.only()
	if err != nil {
		return nil, err
	}
	upTap, downTap := capt.taps()
	topo, err := connect.NewTopology(connect.TopologyConfig{
		Seed:       s.Seed,
		AgentNAT:   s.Path.AgentNAT,
		ViewerNAT:  s.Path.ViewerNAT,
		SameRouter: s.Path.SameRouter,
		RelayDelay: s.Path.RelayDelay,
		// The sites are never at the same place: a millisecond between
		// them keeps the two PCs' first probes from meeting a router at
		// the same instant, where goroutine order, not the seed, would
		// decide whether its filter lets one in.
		InternetDelay: InternetDelay,
		ViewerUp:      netem.LinkConfig{Name: "uplink", Epoch: epoch, Impairments: s.Uplink, Timeline: s.UplinkTimeline, Tap: upTap},
		ViewerDown:    netem.LinkConfig{Name: "downlink", Epoch: epoch, Impairments: s.Downlink, Timeline: s.DownlinkTimeline, Tap: downTap},
		Relay:         relay.Config{Observe: s.Path.Observe},
	})
	if err != nil {
		return nil, fmt.Errorf("lab: topology: %w", err)
	}
	acfg, vcfg := topo.AgentConfig(), topo.ViewerConfig()
	for _, c := range []*connect.Config{&acfg, &vcfg} {
		c.Only, c.ForceRelay, c.IgnoreLANCandidates = only, s.Path.ForceRelay, s.Path.IgnoreLANCandidates
	}
	if capt != nil {
		server, client, err := quicpair.TLS(capt.keyLog())
		if err != nil {
			topo.Close()
			return nil, fmt.Errorf("lab: %w", err)
		}
		acfg.TLS, vcfg.TLS = server, client
		acfg.QUIC, vcfg.QUIC = capt.quicConfig(), capt.quicConfig()
	}
	// The agent answers on every path it is allowed; the viewer decides.
	var wg sync.WaitGroup
	var agent *connect.Session
	var agentErr error
	actx, cancelAgent := context.WithCancel(ctx)
	wg.Go(func() { agent, agentErr = connect.Accept(actx, acfg) })
	started := time.Now()
	viewer, viewerErr := connect.Dial(ctx, vcfg)
	connected := time.Since(started)
	if viewerErr != nil {
		cancelAgent() // nothing will come
	}
	wg.Wait()
	cancelAgent()
	if err := errors.Join(viewerErr, agentErr); err != nil {
		for _, sess := range []*connect.Session{viewer, agent} {
			if sess != nil {
				sess.Close()
			}
		}
		topo.Close()
		return nil, fmt.Errorf("lab: connect: %w", err)
	}
	return &opened{
		agent: agent.Conn, viewer: viewer.Conn,
		stats: linkStats(topo.ViewerUpLink, topo.ViewerDownLink),
		path:  &PathResult{Path: viewer.Path, AgentPath: agent.Path, Steps: viewer.Steps, Connect: connected},
		close: func() {
			viewer.Close()
			agent.Close()
			topo.Close()
		},
	}, nil
}
