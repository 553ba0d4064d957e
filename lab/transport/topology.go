package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/connect"
	"github.com/nuvirahub/latencylab/lab/laberr"
	"github.com/nuvirahub/latencylab/lab/traffic"
	"github.com/nuvirahub/latencylab/netem/nat"
	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/netem/relay"
)

// Topology is how a session's two PCs reach each other across the lab's
// two-site topology (internal/connect; findings N17-N19, E14): each PC on
// its own LAN, behind a router when it has a NAT, a broker and a relay on
// the internet, and the connection strategy the PCs follow. The session's
// uplink and downlink become the viewer's access links, so every path the
// packets take crosses them. The topology exists only in the in-memory
// network, and it carries no other traffic: its flows would run between
// the plain link's two hosts, and the topology has LANs, routers, a relay
// and a tunnel, and no one place where a download would join the
// session's path.
type Topology struct {
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

// InternetDelay is the one-way delay between the two sites of the
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

// Strategy maps the strategy to connect's restriction, refusing one it
// does not know.
func (p Topology) Strategy() (connect.Path, error) {
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
	return "", fmt.Errorf("%w: path strategy %q (want direct, auto, relay or websocket)", laberr.ErrUnsupported, p.Connect)
}

// Check implements Transport: a strategy it knows, and no traffic.
func (p Topology) Check(fl []traffic.Flow) error {
	if _, err := p.Strategy(); err != nil {
		return err
	}
	if len(fl) > 0 {
		return fmt.Errorf("%w: traffic in a session with a path (the flows run between the plain link's two hosts; the two-site topology has LANs, routers, a relay and a tunnel, and no one place where a download would join the session's path)", laberr.ErrUnsupported)
	}
	return nil
}

// Open implements Transport: it builds the two-site topology with the
// session's links as the viewer's access, and connects the two PCs by
// the strategy.
func (p Topology) Open(ctx context.Context, nw Network) (*Conn, error) {
	if nw.ECN {
		return nil, fmt.Errorf("%w with a path: NAT routers and relays forward datagrams without their ECN bits", ErrNoECN)
	}
	only, err := p.Strategy()
	if err != nil {
		return nil, err
	}
	topo, err := connect.NewTopology(connect.TopologyConfig{
		Seed:       nw.Seed,
		AgentNAT:   p.AgentNAT,
		ViewerNAT:  p.ViewerNAT,
		SameRouter: p.SameRouter,
		RelayDelay: p.RelayDelay,
		// The sites are never at the same place: a millisecond between
		// them keeps the two PCs' first probes from meeting a router at
		// the same instant, where goroutine order, not the seed, would
		// decide whether its filter lets one in.
		InternetDelay: InternetDelay,
		ViewerUp:      nw.Uplink,
		ViewerDown:    nw.Downlink,
		Relay:         relay.Config{Observe: p.Observe},
	})
	if err != nil {
		return nil, fmt.Errorf("lab: topology: %w", err)
	}
	acfg, vcfg := topo.AgentConfig(), topo.ViewerConfig()
	for _, c := range []*connect.Config{&acfg, &vcfg} {
		c.Only, c.ForceRelay, c.IgnoreLANCandidates = only, p.ForceRelay, p.IgnoreLANCandidates
	}
	if rec := nw.Recorder; rec != nil {
		server, client, err := quicpair.TLS(rec.KeyLog())
		if err != nil {
			topo.Close()
			return nil, fmt.Errorf("lab: %w", err)
		}
		acfg.TLS, vcfg.TLS = server, client
		acfg.QUIC, vcfg.QUIC = rec.QUICConfig(), rec.QUICConfig()
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
	return &Conn{
		Agent: agent.Conn, Viewer: viewer.Conn,
		Stats: linkStats(topo.ViewerUpLink, topo.ViewerDownLink),
		Path:  &PathResult{Path: viewer.Path, AgentPath: agent.Path, Steps: viewer.Steps, Connect: connected},
		Close: func() {
			viewer.Close()
			agent.Close()
			topo.Close()
		},
	}, nil
}
