package connect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/netem/nat"
	"github.com/nuvirahub/latencylab/netem/relay"
)

// The standard topology's addresses: the internet's in the documentation
// ranges (RFC 5737), the LANs in RFC 1918 space.
var (
	agentLANAddr      = netip.MustParseAddr("192.168.1.10")
	viewerLANAddr     = netip.MustParseAddr("192.168.2.20")
	viewerSameLANAddr = netip.MustParseAddr("192.168.1.20")
	agentSiteAddr     = netip.MustParseAddr("203.0.113.1")
	viewerSiteAddr    = netip.MustParseAddr("198.51.100.1")
	brokerAddr        = netip.MustParseAddrPort("192.0.2.10:3478")
	relayAddr         = netip.MustParseAddrPort("192.0.2.20:3479")
	relayStreamAddr   = netip.MustParseAddrPort("192.0.2.20:443")
)

// relayURL is the relay's WebSocket endpoint. It is ws://, not wss://: the
// lab leaves out the outer TLS layer, whose handshake would add a round trip
// to the connect time and nothing else, since the QUIC inside is encrypted
// end to end anyway.
const relayURL = "ws://192.0.2.20:443/relay"

// TopologyConfig describes the lab's two sites. Its zero value is two PCs
// with public addresses on a perfect internet.
type TopologyConfig struct {
	// Seed is the run's seed: the networks' links, the routers' port
	// choices and a zero Session derive from it.
	Seed uint64
	// Session is the session's ID, pre-shared with both PCs; zero draws it
	// from the seed.
	Session relay.SessionID
	// AgentNAT and ViewerNAT are the routers in front of each PC; nil means
	// that PC has a public address and no router. A zero Seed in them
	// takes the topology's.
	AgentNAT, ViewerNAT *nat.Config
	// SameRouter puts both PCs on one LAN behind one router, configured by
	// AgentNAT (which must be set; ViewerNAT must not be).
	SameRouter bool
	// RelayDelay is the one-way delay of each leg between a site's public
	// address and the relay (plain netem links, which callers may replace
	// with Internet.SetLink).
	RelayDelay time.Duration
	// InternetDelay is the one-way delay of the internet between the two
	// sites' public addresses, the direct path's own (unused when the PCs
	// share a router). With all the delay on the viewer's access, zero
	// makes the agent's first probe reach the viewer's router at the very
	// instant the viewer's own first probe leaves it, so goroutine order
	// decides whether the router's filter lets it in; where only the
	// agent's probes get through (a symmetric agent, a restricted-cone
	// viewer) the connect time then varies by a probe interval. Any delay
	// here makes it repeatable.
	InternetDelay time.Duration
	// ViewerUp and ViewerDown are the scenario's impairments of the
	// viewer's access: host links carrying everything the viewer's site
	// sends and receives, on its router's public side, or on the viewer's
	// own host when it has a public address or shares the agent's LAN. The
	// WebSocket's stream gets their delay and rate too (see DialRelayStream).
	ViewerUp, ViewerDown netem.LinkConfig
	// Relay configures the relay (Observe taps what it forwards).
	Relay relay.Config
}

// Topology is the lab's standard two-site network: the agent's site and the
// viewer's, each a PC behind a router or on a public address, on an internet
// holding the broker and the relay. Its servers run until Close. Its
// exported fields are for reading (counters, links to impair); changing them
// changes nothing.
type Topology struct {
	// Session is the session's ID, admitted by the broker and the relay.
	Session relay.SessionID
	// Internet is the network between the sites and the servers.
	Internet *netem.Network
	// AgentLAN and ViewerLAN are the sites' LANs, nil for a PC with a
	// public address, the same network when the PCs share a router.
	AgentLAN, ViewerLAN *netem.Network
	// AgentRouter and ViewerRouter are the sites' routers, nil for a PC
	// with a public address, the same router when the PCs share one.
	AgentRouter, ViewerRouter *nat.Router
	// AgentAddr and ViewerAddr are the PCs' own addresses; AgentPublic and
	// ViewerPublic the sites' public ones (the same as the PC's for a PC
	// with a public address).
	AgentAddr, ViewerAddr, AgentPublic, ViewerPublic netip.Addr
	// ViewerUpLink and ViewerDownLink are the viewer's access links, nil if
	// InternetDelay is the one-way delay of the internet between the two
	// sites' public addresses, the direct path's own (unused when the PCs
	// share a router). With all the delay on the viewer's access, zero
	// makes the agent's first probe reach the viewer's router at the very
	// instant the viewer's own first probe leaves it, so goroutine order
	// decides whether the router's filter lets it in; where only the
	// agent's probes get through (a symmetric agent, a restricted-cone
	// viewer) the connect time then varies by a probe interval. Any delay
	// here makes it repeatable.
	InternetDelay time.Duration
	// ViewerUp and ViewerDown are both perfect.
	ViewerUpLink, ViewerDownLink *netem.Link
	// Broker and Relay are the servers, at BrokerAddr and RelayAddr (UDP),
	// the relay's WebSocket endpoint at RelayURL.
	Broker     *Broker
	Relay      *relay.Server
	BrokerAddr netip.AddrPort
	RelayAddr  netip.AddrPort
	RelayURL   string

	agentNet, viewerNet       *netem.Network // where each PC's sockets bind
	viewerStream, agentStream *netem.StreamListener
	http                      *http.Server
	servers                   sync.WaitGroup
	serveUDP                  chan error

	mu         sync.Mutex
	streamPort uint16
	closeOnce  sync.Once
	closeErr   error
}

// NewTopology builds the network and starts the broker and the relay.
func NewTopology(cfg TopologyConfig) (_ *Topology, err error) {
	if cfg.SameRouter && cfg.AgentNAT == nil {
		return nil, errors.New("connect: topology: SameRouter needs AgentNAT")
	}
	if cfg.SameRouter && cfg.ViewerNAT != nil {
		return nil, errors.New("connect: topology: SameRouter uses AgentNAT; ViewerNAT must be nil")
	}
	t := &Topology{
		Session:      cfg.Session,
		Internet:     netem.NewNetwork(cfg.Seed),
		AgentPublic:  agentSiteAddr,
		ViewerPublic: viewerSiteAddr,
		BrokerAddr:   brokerAddr,
		RelayAddr:    relayAddr,
		RelayURL:     relayURL,
		serveUDP:     make(chan error, 1),
		streamPort:   40000,
	}
	if t.Session == (relay.SessionID{}) {
		rng := seeded.New(cfg.Seed, "connect", "session")
		for i := range t.Session {
			t.Session[i] = byte(rng.Uint32())
		}
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()

	site := func(nc *nat.Config, public, host netip.Addr) (*netem.Network, *nat.Router, netip.Addr, error) {
		if nc == nil {
			return t.Internet, nil, public, nil
		}
		rc := *nc
		if rc.Seed == 0 {
			rc.Seed = cfg.Seed
		}
		lan := netem.NewNetwork(cfg.Seed)
		r, err := nat.New(lan, t.Internet, public, rc)
		if err != nil {
			lan.Close()
			return nil, nil, netip.Addr{}, fmt.Errorf("connect: topology: router %v: %w", public, err)
		}
		return lan, r, host, nil
	}
	t.agentNet, t.AgentRouter, t.AgentAddr, err = site(cfg.AgentNAT, agentSiteAddr, agentLANAddr)
	if err != nil {
		return nil, err
	}
	if cfg.AgentNAT != nil {
		t.AgentLAN = t.agentNet
	}
	if cfg.SameRouter {
		t.viewerNet, t.ViewerRouter, t.ViewerAddr = t.agentNet, t.AgentRouter, viewerSameLANAddr
		t.ViewerLAN, t.ViewerPublic = t.AgentLAN, agentSiteAddr
	} else {
		t.viewerNet, t.ViewerRouter, t.ViewerAddr, err = site(cfg.ViewerNAT, viewerSiteAddr, viewerLANAddr)
		if err != nil {
			return nil, err
		}
		if cfg.ViewerNAT != nil {
			t.ViewerLAN = t.viewerNet
		}
	}

	// The relay's legs: the agent's site and, if it has its own, the
	// viewer's.
	sites := []netip.Addr{t.AgentPublic}
	if t.ViewerPublic != t.AgentPublic {
		sites = append(sites, t.ViewerPublic)
	}
	for _, s := range sites {
		for _, r := range [][2]netip.Addr{{s, relayAddr.Addr()}, {relayAddr.Addr(), s}} {
			if _, err := t.Internet.SetLink(r[0], r[1], netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: cfg.RelayDelay}}}); err != nil {
				return nil, fmt.Errorf("connect: topology: relay link: %w", err)
			}
		}
	}

	if t.ViewerPublic != t.AgentPublic {
		for _, r := range [][2]netip.Addr{{t.AgentPublic, t.ViewerPublic}, {t.ViewerPublic, t.AgentPublic}} {
			if _, err := t.Internet.SetLink(r[0], r[1], netem.LinkConfig{Impairments: []netem.Impairment{&netem.Delay{Delay: cfg.InternetDelay}}}); err != nil {
				return nil, fmt.Errorf("connect: topology: internet link: %w", err)
			}
		}
	}

	// The viewer's access: its router's public side if it has its own
	// router, else its own host, wherever that is.
	if !perfect(cfg.ViewerUp) || !perfect(cfg.ViewerDown) {
		accessNet, accessHost := t.Internet, t.ViewerPublic
		if cfg.SameRouter {
			accessNet, accessHost = t.viewerNet, t.ViewerAddr
		}
		t.ViewerUpLink, t.ViewerDownLink, err = accessNet.SetHostLinks(accessHost, cfg.ViewerUp, cfg.ViewerDown)
		if err != nil {
			return nil, fmt.Errorf("connect: topology: viewer access: %w", err)
		}
	}

	brokerConn, err := t.Internet.Listen(brokerAddr)
	if err != nil {
		return nil, fmt.Errorf("connect: topology: broker: %w", err)
	}
	relayConn, err := t.Internet.Listen(relayAddr)
	if err != nil {
		brokerConn.Close()
		return nil, fmt.Errorf("connect: topology: relay: %w", err)
	}
	t.Relay = relay.New(cfg.Relay)
	go func() { t.serveUDP <- t.Relay.ServeUDP(relayConn) }()
	t.Broker = NewBroker(brokerConn, t.Relay)
	t.Broker.Admit(t.Session)

	// The WebSocket endpoint. A stream has no loss model, so the viewer's
	// stream gets only the delay and rate of its access (plus the relay
	// leg's delay): an approximation of TCP, which turns loss into delay.
	// The agent's stream, for its own fallback, gets the relay leg's.
	up, down := streamShape(cfg.ViewerUp), streamShape(cfg.ViewerDown)
	up.Delay += cfg.RelayDelay
	down.Delay += cfg.RelayDelay
	streamAddr := net.TCPAddrFromAddrPort(relayStreamAddr)
	t.viewerStream = netem.NewStreamListener(streamAddr, up, down)
	t.agentStream = netem.NewStreamListener(streamAddr,
		netem.StreamConfig{Delay: cfg.RelayDelay}, netem.StreamConfig{Delay: cfg.RelayDelay})
	mux := http.NewServeMux()
	mux.Handle("/relay", t.Relay.Handler())
	t.http = &http.Server{Handler: mux}
	for _, ln := range []net.Listener{t.viewerStream, t.agentStream} {
		t.servers.Go(func() { t.http.Serve(ln) })
	}
	return t, nil
}

// perfect reports whether a link configuration impairs nothing.
func perfect(c netem.LinkConfig) bool { return len(c.Impairments) == 0 && len(c.Timeline) == 0 }

// streamShape is the part of a link configuration a stream can model: the
// fixed delays and the rate in force from the start.
func streamShape(c netem.LinkConfig) netem.StreamConfig {
	var s netem.StreamConfig
	for _, imp := range c.Impairments {
		switch imp := imp.(type) {
		case *netem.Delay:
			s.Delay += imp.Delay
		case *netem.Jitter:
			s.Delay += imp.Delay
		case *netem.Rate:
			s.Rate = imp.Rate
		}
	}
	return s
}

func listenOn(n *netem.Network, host netip.Addr) (net.PacketConn, error) {
	c, err := n.Listen(netip.AddrPortFrom(host, 0))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ListenAgent binds a new UDP socket on the agent PC, on any port.
func (t *Topology) ListenAgent() (net.PacketConn, error) { return listenOn(t.agentNet, t.AgentAddr) }

// ListenViewer binds a new UDP socket on the viewer PC, on any port.
func (t *Topology) ListenViewer() (net.PacketConn, error) { return listenOn(t.viewerNet, t.ViewerAddr) }

// DialRelayStream opens a stream connection from the viewer to the relay's
// WebSocket endpoint, as TCP would: one round trip, then an ordered,
// lossless byte stream with the viewer access's delay and rate plus the
// relay leg's delay. It comes from the viewer site's public address, since
// a stream has no NAT model.
func (t *Topology) DialRelayStream(ctx context.Context) (net.Conn, error) {
	return t.viewerStream.Dial(ctx, t.streamFrom(t.ViewerPublic))
}

// dialAgentStream is DialRelayStream for the agent.
func (t *Topology) dialAgentStream(ctx context.Context) (net.Conn, error) {
	return t.agentStream.Dial(ctx, t.streamFrom(t.AgentPublic))
}

// streamFrom gives each stream its own source port.
func (t *Topology) streamFrom(a netip.Addr) net.Addr {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.streamPort++
	return net.TCPAddrFromAddrPort(netip.AddrPortFrom(a, t.streamPort))
}

// config is the part of both PCs' configurations the topology decides.
func (t *Topology) config() Config {
	return Config{Session: t.Session, Broker: t.BrokerAddr, Relay: t.RelayAddr, RelayURL: t.RelayURL}
}

// AgentConfig returns the agent's Config on this topology, to adjust
// (toggles, timeouts) before Accept.
func (t *Topology) AgentConfig() Config {
	c := t.config()
	c.Listen = t.ListenAgent
	c.DialRelayStream = t.dialAgentStream
	return c
}

// ViewerConfig returns the viewer's Config on this topology, to adjust
// before Dial.
func (t *Topology) ViewerConfig() Config {
	c := t.config()
	c.Listen = t.ListenViewer
	c.DialRelayStream = t.DialRelayStream
	return c
}

// Close stops the servers and the routers, closes the networks and waits
// for every goroutine they ran. Sessions should be closed first: the
// relay's WebSocket peers get a close handshake, which takes a round trip
// of a stream.
func (t *Topology) Close() error {
	t.closeOnce.Do(func() {
		var errs []error
		if t.Relay != nil {
			errs = append(errs, t.Relay.Close())
			if err := <-t.serveUDP; !errors.Is(err, relay.ErrServerClosed) {
				errs = append(errs, err)
			}
		}
		if t.http != nil {
			errs = append(errs, t.http.Close())
			t.servers.Wait()
		}
		if t.Broker != nil {
			errs = append(errs, t.Broker.Close())
		}
		for _, r := range []*nat.Router{t.AgentRouter, t.ViewerRouter} {
			if r != nil {
				errs = append(errs, r.Close())
			}
		}
		for _, n := range []*netem.Network{t.AgentLAN, t.ViewerLAN, t.Internet} {
			if n != nil {
				errs = append(errs, n.Close())
			}
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}
