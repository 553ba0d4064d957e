package connect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/nuvirahub/latencylab/netem/quicpair"
	"github.com/nuvirahub/latencylab/netem/relay"
)

// Path is how a session's packets travel between the two PCs.
type Path string

// The paths a session can take, in the order the viewer tries them.
const (
	// PathDirectLAN: straight between the PCs' private addresses, when both
	// are on one LAN.
	PathDirectLAN Path = "direct-lan"
	// PathDirectPublic: between public addresses, through holes punched in
	// both routers (or a router's hairpin).
	PathDirectPublic Path = "direct-public"
	// PathRelay: through the relay over UDP (finding N18).
	PathRelay Path = "relay"
	// PathWebSocket: through the relay, the viewer's side inside a
	// WebSocket over TCP, for where UDP is blocked (finding N19).
	PathWebSocket Path = "websocket"
	// PathDirect labels a direct attempt in Steps that carried no session,
	// so that which of the two direct paths it would have been is unknown.
	// A session's Path is never PathDirect.
	PathDirect Path = "direct"
)

func (p Path) direct() bool {
	return p == PathDirect || p == PathDirectLAN || p == PathDirectPublic
}

// Step records one attempt at a path: the times to connect per fallback step
// are measured from these.
type Step struct {
	// Path is the path attempted; for the attempt that carried the
	// session, the path it took.
	Path Path
	// Start is when the attempt began; End when it carried the session,
	// failed, or was abandoned because another path carried it.
	Start, End time.Time
	// Err is why the attempt carried no session; nil for the one that did.
	Err error
}

// Duration is how long the attempt took.
func (s Step) Duration() time.Duration { return s.End.Sub(s.Start) }

// Sentinel errors, for errors.Is.
var (
	// ErrNoPath is wrapped by the error of a Dial or Accept whose every
	// attempt failed; the error also wraps each attempt's.
	ErrNoPath = errors.New("connect: no path to the peer")
	// ErrRegisterTimeout: the broker did not answer within RegisterTimeout,
	// as where UDP is blocked.
	ErrRegisterTimeout = errors.New("connect: the broker did not answer")
	// ErrRefused: the broker does not know the session.
	ErrRefused = errors.New("connect: the broker refused the session")
	// ErrPunchTimeout: no candidate of the peer answered a probe within
	// PunchTimeout, as between two symmetric NATs.
	ErrPunchTimeout = errors.New("connect: no candidate answered")
	// ErrSuperseded: the agent offered the path, and another one carried
	// the session first.
	ErrSuperseded = errors.New("connect: another path carried the session")
)

// Error is the error of a Dial or Accept that produced no session: the
// attempts it made, and why each failed.
type Error struct {
	Steps []Step
	Err   error
}

// Error implements error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the joined errors, ErrNoPath or the context's among them.
func (e *Error) Unwrap() error { return e.Err }

// Defaults of a zero Config.
const (
	DefaultRegisterTimeout  = time.Second
	DefaultPunchTimeout     = 2 * time.Second
	DefaultRelayTimeout     = 2 * time.Second
	DefaultWebSocketTimeout = 5 * time.Second
	DefaultKeepAlive        = 15 * time.Second
)

// The protocol's timers. They are not configurable: they are the pace of
// the protocol, not a deployment's choice.
const (
	// retransmitEvery: a register message is sent again until the broker
	// answers, a LAN-scale wait that a lossy path repeats a few times
	// within RegisterTimeout (as the relay's bind does).
	retransmitEvery = 200 * time.Millisecond
	// reregisterEvery: once answered, a peer that still waits for the
	// other registers again, which keeps its NAT mapping towards the
	// broker open for the broker's push and repairs a lost push.
	reregisterEvery = time.Second
	// probeEvery: each candidate is probed this often until it answers,
	// the first probe going out as soon as the candidate is known.
	probeEvery = 100 * time.Millisecond
	// lanGrace: when a public candidate answers while a LAN candidate has
	// not yet, the viewer waits this long for the LAN one, which it
	// prefers (as ICE ranks host pairs first). Both answer within
	// microseconds of each other when the PCs share a router that
	// hairpins, so the wait decides ties, deterministically in virtual time.
	lanGrace = time.Millisecond
)

// Config configures one PC's side of a session. Its zero value is not
// usable: Session, Listen and the servers' addresses come from the lab's
// Topology (AgentConfig, ViewerConfig). Zero durations mean the defaults.
type Config struct {
	// Session is the session's ID, pre-shared by the broker's operator.
	Session relay.SessionID
	// Listen binds a new UDP socket on the PC's own network, on any port:
	// one for the direct attempt, another for the relay.
	Listen func() (net.PacketConn, error)
	// Broker is the rendezvous server's UDP address; zero disables the
	// direct path.
	Broker netip.AddrPort
	// Relay is the relay's UDP address; zero disables the relay over UDP.
	Relay netip.AddrPort
	// RelayURL is the relay's WebSocket endpoint (ws:// or wss://), and
	// DialRelayStream opens the stream connection to it; either left zero
	// disables the WebSocket path.
	RelayURL        string
	DialRelayStream func(ctx context.Context) (net.Conn, error)

	// TLS is the PC's TLS configuration; nil means quicpair.TLS's (server
	// for the agent, client for the viewer).
	TLS *tls.Config
	// QUIC is quic-go's configuration; nil means its defaults. Its
	// KeepAlivePeriod is set from KeepAlive.
	QUIC *quic.Config
	// KeepAlive is the QUIC keep-alive period, which keeps the NAT mappings
	// of a direct path open through quiet periods, as the relay.Conn's
	// refreshes do for a relayed one. Default 15 s, inside the 30 s the
	// shortest-lived NAT UDP mappings last; negative disables it.
	KeepAlive time.Duration

	// ForceRelay skips the direct path (debug toggle force_relay, E14).
	ForceRelay bool
	// IgnoreLANCandidates never offers nor tries private addresses (debug
	// toggle ignore_lan_candidates, E14): two PCs on one LAN then connect
	// through their router's hairpin, or the relay.
	IgnoreLANCandidates bool
	// Only, if not empty, restricts the PC to one path: PathDirect (the
	// direct attempt, LAN and public candidates), PathDirectLAN or
	// PathDirectPublic (the direct attempt with only those candidates),
	// PathRelay or PathWebSocket.
	Only Path

	// RegisterTimeout bounds the wait for the broker's first answer.
	// Default 1 s.
	RegisterTimeout time.Duration
	// PunchTimeout bounds the direct attempt from the broker's answer to
	// the end of the QUIC handshake: waiting for the other peer to
	// register, probing its candidates, the handshake. The agent probes
	// each of the viewer's candidates this long. Default 2 s.
	PunchTimeout time.Duration
	// RelayTimeout bounds the relay attempt over UDP, bind and QUIC
	// handshake; the agent's bind only, after which it waits for the
	// viewer. Default 2 s.
	RelayTimeout time.Duration
	// WebSocketTimeout bounds the WebSocket attempt: TCP and WebSocket
	// handshakes, bind, QUIC handshake (the agent's, all but the QUIC
	// handshake). Default 5 s.
	WebSocketTimeout time.Duration
}

// settings is a Config resolved for one role.
type settings struct {
	Config
	role                    relay.Role
	direct, udp, ws         bool // the paths the PC may use
	useLAN, usePublic       bool // the direct attempt's candidates
	relayAddr               net.Addr
	tlsConf                 *tls.Config
	quicConf                *quic.Config
	registerT, punchT       time.Duration
	relayT, wsT             time.Duration
	retransmit, reregister  time.Duration
	probeInterval, lanGrace time.Duration
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// resolve checks c and fills in the defaults for role.
func (c Config) resolve(role relay.Role) (*settings, error) {
	s := &settings{
		Config:        c,
		role:          role,
		registerT:     orDefault(c.RegisterTimeout, DefaultRegisterTimeout),
		punchT:        orDefault(c.PunchTimeout, DefaultPunchTimeout),
		relayT:        orDefault(c.RelayTimeout, DefaultRelayTimeout),
		wsT:           orDefault(c.WebSocketTimeout, DefaultWebSocketTimeout),
		retransmit:    retransmitEvery,
		reregister:    reregisterEvery,
		probeInterval: probeEvery,
		lanGrace:      lanGrace,
	}
	switch c.Only {
	case "", PathDirect, PathDirectLAN, PathDirectPublic, PathRelay, PathWebSocket:
	default:
		return nil, fmt.Errorf("connect: unknown path %q", c.Only)
	}
	if c.ForceRelay && c.Only.direct() {
		return nil, fmt.Errorf("connect: force_relay and only %q contradict each other", c.Only)
	}
	if c.IgnoreLANCandidates && c.Only == PathDirectLAN {
		return nil, fmt.Errorf("connect: ignore_lan_candidates and only %q contradict each other", c.Only)
	}
	haveListen := c.Listen != nil
	s.direct = !c.ForceRelay && (c.Only == "" || c.Only.direct()) && c.Broker.IsValid() && haveListen
	s.udp = (c.Only == "" || c.Only == PathRelay) && c.Relay.IsValid() && haveListen
	s.ws = (c.Only == "" || c.Only == PathWebSocket) && c.RelayURL != "" && c.DialRelayStream != nil
	s.useLAN = !c.IgnoreLANCandidates && c.Only != PathDirectPublic
	s.usePublic = c.Only != PathDirectLAN
	if c.Only != "" && !s.direct && !s.udp && !s.ws {
		return nil, fmt.Errorf("connect: only %q, but its addresses or Listen are missing", c.Only)
	}
	if !s.direct && !s.udp && !s.ws {
		return nil, errors.New("connect: no path configured (Listen with Broker or Relay, or RelayURL with DialRelayStream)")
	}
	if c.Relay.IsValid() {
		s.relayAddr = net.UDPAddrFromAddrPort(c.Relay)
	}

	s.tlsConf = c.TLS
	if s.tlsConf == nil {
		server, client, err := quicpair.TLS()
		if err != nil {
			return nil, fmt.Errorf("connect: %w", err)
		}
		s.tlsConf = client
		if role == relay.Agent {
			s.tlsConf = server
		}
	}
	s.tlsConf = s.tlsConf.Clone() // quic-go may fill in fields
	if c.QUIC != nil {
		s.quicConf = c.QUIC.Clone()
	} else {
		s.quicConf = &quic.Config{}
	}
	switch {
	case c.KeepAlive < 0:
		s.quicConf.KeepAlivePeriod = 0
	case c.KeepAlive == 0:
		s.quicConf.KeepAlivePeriod = DefaultKeepAlive
	default:
		s.quicConf.KeepAlivePeriod = c.KeepAlive
	}
	return s, nil
}

// isLAN reports whether an address is a private one, which a peer reaches
// only from its own LAN.
func isLAN(a netip.Addr) bool {
	return a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast()
}

// classify names the direct path to a peer address.
func classify(a net.Addr) Path {
	if ap, ok := addrPortOf(a); ok && isLAN(ap.Addr()) {
		return PathDirectLAN
	}
	return PathDirectPublic
}

// Session is one QUIC connection between the PCs and how it was made.
type Session struct {
	// Conn is the QUIC connection: the viewer's is the client end, the
	// agent's the server end.
	Conn *quic.Conn
	// Path is the path Conn's packets take from this PC. Each PC names its
	// own leg: when the viewer reaches the relay in a WebSocket
	// (PathWebSocket), an agent bound to it over UDP says PathRelay.
	Path Path
	// Steps are the attempts made, in the order they began; the last one
	// to end is the one that carried the session.
	Steps []Step

	closers   []func() error // what Conn runs on, in closing order
	closeOnce sync.Once
	closeErr  error
}

// Close closes the connection, then the transport and sockets it ran on,
// and waits for their goroutines.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.Conn != nil {
			errs = append(errs, s.Conn.CloseWithError(0, "session closed"))
		}
		errs = append(errs, closeAll(s.closers))
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// closeAll runs closers in order; closing what is already closed is no
// error here.
func closeAll(closers []func() error) error {
	var errs []error
	for _, c := range closers {
		if err := c(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// attempt is a path that carried a QUIC connection, and what it owns.
type attempt struct {
	conn    *quic.Conn
	path    Path
	closers []func() error
}

// Dial connects the viewer to the agent: directly (LAN candidates first,
// then public ones, by hole punching), else through the relay over UDP,
// else through the relay inside a WebSocket, as the Config allows. Each
// attempt gives way to the next when it fails or times out; ctx bounds
// them all.
func Dial(ctx context.Context, cfg Config) (*Session, error) {
	s, err := cfg.resolve(relay.Viewer)
	if err != nil {
		return nil, err
	}
	type try struct {
		kind Path
		run  func(context.Context) (*attempt, error)
	}
	var tries []try
	if s.direct {
		tries = append(tries, try{PathDirect, s.dialDirect})
	}
	if s.udp {
		tries = append(tries, try{PathRelay, s.dialRelayUDP})
	}
	if s.ws {
		tries = append(tries, try{PathWebSocket, s.dialWebSocket})
	}
	var steps []Step
	var errs []error
	for _, t := range tries {
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		a, err := t.run(ctx)
		step := Step{Path: t.kind, Start: start, End: time.Now(), Err: err}
		if err == nil {
			step.Path = a.path
			return &Session{Conn: a.conn, Path: a.path, Steps: append(steps, step), closers: a.closers}, nil
		}
		steps = append(steps, step)
		errs = append(errs, fmt.Errorf("%s: %w", t.kind, err))
	}
	if ctx.Err() != nil {
		return nil, &Error{Steps: steps, Err: errors.Join(append([]error{fmt.Errorf("connect: dial: %w", ctx.Err())}, errs...)...)}
	}
	return nil, &Error{Steps: steps, Err: errors.Join(append([]error{ErrNoPath}, errs...)...)}
}

// dialDirect is the viewer's direct attempt.
func (s *settings) dialDirect(ctx context.Context) (*attempt, error) {
	start := time.Now()
	sock, err := s.Listen()
	if err != nil {
		return nil, fmt.Errorf("connect: listen: %w", err)
	}
	d := newDirect(s, sock)
	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()
	if err := d.waitRegistered(ctx, start.Add(s.registerT)); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(s.punchT)
	c, err := d.nominate(ctx, deadline)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := d.tr.Dial(dctx, net.UDPAddrFromAddrPort(c.addr), s.tlsConf, s.quicConf)
	if err != nil {
		return nil, fmt.Errorf("connect: QUIC handshake with %v: %w", c.addr, err)
	}
	ok = true
	d.stop() // probes and registrations end; the transport carries conn
	path := PathDirectPublic
	if c.lan {
		path = PathDirectLAN
	}
	return &attempt{conn: conn, path: path, closers: []func() error{d.tr.Close, sock.Close}}, nil
}

// dialRelayUDP is the viewer's relay attempt over UDP.
func (s *settings) dialRelayUDP(ctx context.Context) (*attempt, error) {
	ctx, cancel := context.WithTimeout(ctx, s.relayT)
	defer cancel()
	sock, err := s.Listen()
	if err != nil {
		return nil, fmt.Errorf("connect: listen: %w", err)
	}
	rc, err := relay.Bind(ctx, sock, s.relayAddr, s.Session, s.role)
	if err != nil {
		sock.Close() // Bind leaves it ours when it fails
		return nil, err
	}
	return s.dialOver(ctx, rc, PathRelay)
}

// dialWebSocket is the viewer's relay attempt inside a WebSocket.
func (s *settings) dialWebSocket(ctx context.Context) (*attempt, error) {
	ctx, cancel := context.WithTimeout(ctx, s.wsT)
	defer cancel()
	rc, err := relay.DialWebSocket(ctx, s.DialRelayStream, s.RelayURL, s.Session, s.role)
	if err != nil {
		return nil, err
	}
	return s.dialOver(ctx, rc, PathWebSocket)
}

// dialOver runs the QUIC handshake through a relay.Conn, which it owns.
func (s *settings) dialOver(ctx context.Context, rc *relay.Conn, path Path) (*attempt, error) {
	tr := &quic.Transport{Conn: rc}
	conn, err := tr.Dial(ctx, rc.PeerAddr(), s.tlsConf, s.quicConf)
	if err != nil {
		tr.Close()
		rc.Close()
		return nil, fmt.Errorf("connect: QUIC handshake through the relay: %w", err)
	}
	return &attempt{conn: conn, path: path, closers: []func() error{tr.Close, rc.Close}}, nil
}

// offer is the outcome of one of the agent's offers: a listener on a path
// that accepted the session's connection, or why it did not.
type offer struct {
	kind   Path // PathDirect, PathRelay or PathWebSocket
	start  time.Time
	end    time.Time
	failed []Step // earlier steps of the offer (a relay bind that failed)
	*attempt
	err error
}

// Accept connects the agent to the viewer. At once it registers with the
// broker on one socket (where it answers the viewer's probes and probes the
// viewer's candidates) and binds to the relay on another (over UDP, else in
// a WebSocket), listens for QUIC on both, and returns the first connection
// accepted; then it closes the rest. ctx bounds the wait.
func Accept(ctx context.Context, cfg Config) (*Session, error) {
	s, err := cfg.resolve(relay.Agent)
	if err != nil {
		return nil, err
	}
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	var runs []func(context.Context) offer
	if s.direct {
		runs = append(runs, s.offerDirect)
	}
	if s.udp || s.ws {
		runs = append(runs, s.offerRelay)
	}
	results := make(chan offer, len(runs))
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Go(func() { results <- run(octx) })
	}
	var done []offer
	winner := -1
	for range runs {
		o := <-results
		done = append(done, o)
		if o.err == nil {
			winner = len(done) - 1
			break
		}
	}
	cancel()
	wg.Wait()
	close(results)
	for o := range results {
		done = append(done, o)
	}

	var steps []Step
	var errs []error
	for i, o := range done {
		steps = append(steps, o.failed...)
		step := Step{Path: o.kind, Start: o.start, End: o.end, Err: o.err}
		switch {
		case i == winner:
			step.Path = o.path
		case o.err == nil: // accepted too, a moment late
			o.conn.CloseWithError(0, "superseded")
			closeAll(o.closers)
			step.Err = ErrSuperseded
		case winner >= 0 && errors.Is(o.err, context.Canceled) && ctx.Err() == nil:
			step.Err = ErrSuperseded
		default:
			errs = append(errs, fmt.Errorf("%s: %w", o.kind, o.err))
		}
		steps = append(steps, step)
	}
	slices.SortStableFunc(steps, func(a, b Step) int { return a.Start.Compare(b.Start) })
	if winner < 0 {
		first := ErrNoPath
		if ctx.Err() != nil {
			first = fmt.Errorf("connect: accept: %w", ctx.Err())
		}
		return nil, &Error{Steps: steps, Err: errors.Join(append([]error{first}, errs...)...)}
	}
	w := done[winner]
	return &Session{Conn: w.conn, Path: w.path, Steps: steps, closers: w.closers}, nil
}

// offerDirect is the agent's direct offer.
func (s *settings) offerDirect(ctx context.Context) (o offer) {
	o = offer{kind: PathDirect, start: time.Now()}
	defer func() { o.end = time.Now() }()
	sock, err := s.Listen()
	if err != nil {
		o.err = fmt.Errorf("connect: listen: %w", err)
		return o
	}
	d := newDirect(s, sock)
	ln, err := d.tr.Listen(s.tlsConf, s.quicConf)
	if err != nil {
		d.close()
		o.err = fmt.Errorf("connect: QUIC listen: %w", err)
		return o
	}
	if err := d.waitRegistered(ctx, o.start.Add(s.registerT)); err != nil {
		ln.Close()
		d.close()
		o.err = err
		return o
	}
	conn, err := ln.Accept(ctx)
	// Established connections outlive their listener; the handshakes
	// still running are refused, which is what a second viewer deserves.
	ln.Close()
	if err != nil {
		d.close()
		o.err = err
		return o
	}
	d.stop()
	o.attempt = &attempt{conn: conn, path: classify(conn.RemoteAddr()), closers: []func() error{d.tr.Close, sock.Close}}
	return o
}

// offerRelay is the agent's relay offer: bound over UDP, else in a
// WebSocket.
func (s *settings) offerRelay(ctx context.Context) (o offer) {
	o = offer{kind: PathRelay, start: time.Now()}
	defer func() { o.end = time.Now() }()
	var rc *relay.Conn
	var err error
	if s.udp {
		rc, err = s.bindUDP(ctx)
		if err != nil && s.ws && ctx.Err() == nil {
			o.failed = append(o.failed, Step{Path: PathRelay, Start: o.start, End: time.Now(), Err: err})
			o.kind, o.start = PathWebSocket, time.Now()
		}
	}
	if rc == nil && s.ws && ctx.Err() == nil {
		o.kind = PathWebSocket
		wctx, cancel := context.WithTimeout(ctx, s.wsT)
		rc, err = relay.DialWebSocket(wctx, s.DialRelayStream, s.RelayURL, s.Session, s.role)
		cancel()
	}
	if rc == nil {
		if err == nil {
			err = ctx.Err()
		}
		o.err = err
		return o
	}
	tr := &quic.Transport{Conn: rc}
	ln, err := tr.Listen(s.tlsConf, s.quicConf)
	if err != nil {
		tr.Close()
		rc.Close()
		o.err = fmt.Errorf("connect: QUIC listen: %w", err)
		return o
	}
	conn, err := ln.Accept(ctx)
	ln.Close()
	if err != nil {
		tr.Close()
		rc.Close()
		o.err = err
		return o
	}
	o.attempt = &attempt{conn: conn, path: o.kind, closers: []func() error{tr.Close, rc.Close}}
	return o
}

// bindUDP binds a new socket to the relay, within RelayTimeout.
func (s *settings) bindUDP(ctx context.Context) (*relay.Conn, error) {
	bctx, cancel := context.WithTimeout(ctx, s.relayT)
	defer cancel()
	sock, err := s.Listen()
	if err != nil {
		return nil, fmt.Errorf("connect: listen: %w", err)
	}
	rc, err := relay.Bind(bctx, sock, s.relayAddr, s.Session, s.role)
	if err != nil {
		sock.Close()
		return nil, err
	}
	return rc, nil
}
