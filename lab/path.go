package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/internal/connect"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/nat"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/netem/relay"
)

// Path is how a session's two PCs reach each other (findings N17-N19, E14):
// the lab's two-site topology (internal/connect) with each PC on its own
// LAN, behind a router when it has a NAT, a broker and a relay on the
// internet, and the connection strategy the PCs follow. The session's
// Uplink and Downlink become the viewer's access links, so every path the
// packets take crosses them.
type Path struct {
	// Connect is the strategy: "direct" (hole punching only), "auto"
	// (direct, then the relay, then the WebSocket tunnel; also ""), "relay"
	// or "websocket" (that step only).
	Connect string
	// AgentNAT and ViewerNAT are the PCs' routers; nil is a public address.
	AgentNAT, ViewerNAT *nat.Config
	// SameRouter puts both PCs behind the agent's router, on one LAN.
	SameRouter bool
	// RelayDelay is the one-way delay of each leg between a site and the
	// relay.
	RelayDelay time.Duration
	// IgnoreLANCandidates and ForceRelay are the debug switches of E14.
	IgnoreLANCandidates, ForceRelay bool
	// Observe, when set, sees every datagram the relay forwards (a test
	// that the relay only ever sees ciphertext).
	Observe func(from relay.Role, data []byte)
}

// InternetDelay is the one-way delay between the two sites of a Path's
// topology (not crossed by a LAN path).
const InternetDelay = time.Millisecond

// PathResult is how the session connected.
type PathResult struct {
	// Path is the path the viewer's packets took; AgentPath the agent's
	// leg (they differ when the viewer reaches the relay in a WebSocket
	// and the agent over UDP).
	Path, AgentPath connect.Path
	// Steps are the viewer's attempts, in order, each with its start and
	// end and why it failed.
	Steps []connect.Step
	// Connect is how long the viewer took from its first attempt to a
	// QUIC connection.
	Connect time.Duration
}

// only maps a strategy to connect's restriction.
func (p *Path) only() (connect.Path, error) {
	switch p.Connect {
	case "", "auto":
		return "", nil
	case "direct":
		return connect.PathDirect, nil
	case "relay":
		return connect.PathRelay, nil
	case "websocket":
		return connect.PathWebSocket, nil
	}
	return "", fmt.Errorf("%w: path strategy %q (want direct, auto, relay or websocket)", ErrUnsupported, p.Connect)
}

// opened is a session's connection, whichever way it was made.
type opened struct {
	agent, viewer *quic.Conn
	// stats reads the counters of the viewer's links, up and down: a
	// function rather than the links, because the real-time proxy keeps
	// its links to itself and shows only their counters.
	stats func() (up, down netem.Stats)
	path  *PathResult
	close func()
}

// openTopology builds the two-site topology with the session's links as
// the viewer's access, and connects the two PCs by the path's strategy.
func openTopology(ctx context.Context, s Session, epoch time.Time, capt *recording) (*opened, error) {
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

// linkStats is opened.stats for links of the in-memory network.
func linkStats(up, down *netem.Link) func() (netem.Stats, netem.Stats) {
	return func() (netem.Stats, netem.Stats) { return statsOf(up), statsOf(down) }
}

// statsOf reads a link's counters; a nil link (a perfect one that was
// never made) has none.
func statsOf(l *netem.Link) netem.Stats {
	if l == nil {
		return netem.Stats{}
	}
	return l.Stats()
}
