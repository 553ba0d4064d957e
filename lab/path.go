package lab

import (
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/internal/connect"
	"github.com/nuvirahub/latencylab/netem/nat"
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
