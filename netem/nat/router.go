package nat

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/nuvirahub/latencylab/netem"
)

// The external ports a router hands out. Below 1024 are the well-known
// ports, which RFC 4787 REQ-3 keeps out of dynamic mappings.
const (
	firstPort = 1024
	portCount = 1<<16 - firstPort
)

// Router is a NAT between a LAN (inside) and the internet (outside), each a
// netem.Network, with one public address on the outside. It is inside's
// Gateway: packets from private hosts to addresses with no endpoint on the
// LAN reach it, and it sends them on from an external port bound on outside
// for the mapping. One goroutine per mapping reads that port and injects what
// the filter lets in back into the LAN, from the remote's address.
//
// Every router decision is taken under one mutex, and the sends that follow
// it too, so packets leave in the order they were translated. Lock order:
// the router's mutex, then the networks' and links' locks, never the
// reverse (networks call Forward with no lock held).
type Router struct {
	inside, outside *netem.Network
	public          netip.Addr
	cfg             Config
	lifetime        time.Duration

	mu       sync.Mutex
	rng      *rand.Rand
	bindings map[bindingKey]*binding
	byPort   map[uint16]*binding
	// retired remembers each key's last external port, so that a mapping
	// made after one expired never gets the same port by chance: a peer
	// still sending to the old one must not reach the new one.
	retired map[bindingKey]uint16
	// remotes are the outside addresses the router has injected packets
	// from. Such a packet whose private endpoint has gone comes back to the
	// router as undeliverable, and must not be taken for outbound traffic.
	remotes map[netip.Addr]struct{}
	stats   Stats
	closed  bool

	wg sync.WaitGroup
}

// bindingKey identifies a mapping: the private endpoint and as much of the
// remote endpoint as the Mapping behaviour distinguishes.
type bindingKey struct {
	private, remote netip.AddrPort
}

// binding is one mapping and its external port.
type binding struct {
	key     bindingKey
	public  netip.AddrPort
	conn    *netem.PacketConn
	expires time.Time
	// allowed holds the remote endpoints the mapping has sent to, reduced
	// as the Filtering behaviour distinguishes them; nil when it lets
	// anyone in.
	allowed map[netip.AddrPort]struct{}
	dead    bool
}

// Mapping is a snapshot of one of a router's mappings.
type Mapping struct {
	// Private is the LAN endpoint and Public its external address:port.
	Private, Public netip.AddrPort
	// Remote is the part of the remote endpoint the mapping is keyed by:
	// zero for endpoint-independent mapping, the address with port 0 for
	// address-dependent, the whole endpoint for address-and-port-dependent.
	Remote netip.AddrPort
	// Expires is when the mapping ends unless refreshed.
	Expires time.Time
}

// Stats are a router's counters.
type Stats struct {
	// TranslatedOut and TranslatedIn count packets translated from inside
	// to outside and from outside to inside.
	TranslatedOut, TranslatedIn netem.Counter
	// Filtered counts packets, hairpinned ones included, that a mapping's
	// filter refused.
	Filtered netem.Counter
	// Hairpinned counts packets looped from one private endpoint to
	// another through the public address.
	Hairpinned netem.Counter
	// Dropped counts the rest of what the router discarded: hairpin traffic
	// when Hairpin is off or no mapping owns the port, packets that met
	// their mapping as it expired, inbound packets whose private endpoint
	// has gone, packets that could not be sent on.
	Dropped netem.Counter
	// MappingsCreated counts mappings made; MappingsExpired those ended by
	// their lifetime (Close ends the rest without counting them).
	MappingsCreated, MappingsExpired uint64
}

func count(c *netem.Counter, bytes int) {
	c.Packets++
	c.Bytes += uint64(bytes)
}

// New makes a router with the given public address on outside and installs
// it as inside's gateway, replacing any other. Its external ports come from
// a source seeded with cfg.Seed and the public address.
func New(inside, outside *netem.Network, public netip.Addr, cfg Config) (*Router, error) {
	if inside == nil || outside == nil {
		return nil, errors.New("nat: inside and outside networks are required")
	}
	if inside == outside {
		return nil, errors.New("nat: inside and outside must be different networks")
	}
	if !public.IsValid() {
		return nil, errors.New("nat: invalid public address")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	r := &Router{
		inside:   inside,
		outside:  outside,
		public:   public,
		cfg:      cfg,
		lifetime: cfg.lifetime(),
		rng:      seeded.New(cfg.Seed, "nat", public.String()),
		bindings: map[bindingKey]*binding{},
		byPort:   map[uint16]*binding{},
		retired:  map[bindingKey]uint16{},
		remotes:  map[netip.Addr]struct{}{},
	}
	inside.SetGateway(r)
	return r, nil
}

// Public returns the router's address on the outside network.
func (r *Router) Public() netip.Addr { return r.public }

// Stats returns a snapshot of the router's counters.
func (r *Router) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Mappings returns the live mappings, ordered by external port.
func (r *Router) Mappings() []Mapping {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Mapping, 0, len(r.bindings))
	for _, b := range r.bindings {
		if now.Before(b.expires) { // expired ones may wait for their reaper
			out = append(out, Mapping{Private: b.key.private, Public: b.public, Remote: b.key.remote, Expires: b.expires})
		}
	}
	slices.SortFunc(out, func(a, b Mapping) int { return int(a.Public.Port()) - int(b.Public.Port()) })
	return out
}

// Close ends every mapping, releasing its port, removes the router as
// inside's gateway and waits for the router's goroutines.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.wg.Wait()
		return nil
	}
	r.closed = true
	for _, b := range r.bindings {
		b.dead = true
		b.conn.Close() // wakes its reader, which then ends
	}
	clear(r.bindings)
	clear(r.byPort)
	r.mu.Unlock()
	r.inside.SetGateway(nil)
	r.wg.Wait()
	return nil
}

// Forward implements netem.Gateway: it translates a packet from a private
// endpoint that found no endpoint at its destination on the LAN. A
// destination that is no host of the LAN is presumed outside, as a router
// does with its default route; what goes out to nobody is counted by the
// outside network. A packet from an address the router has injected packets
// from is an inbound one whose private endpoint has gone, and is dropped, so
// LAN hosts must not reuse internet hosts' addresses.
func (r *Router) Forward(p *netem.Packet) {
	src, srcOK := addrPort(p.From)
	dst, dstOK := addrPort(p.To)
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed || !srcOK || !dstOK:
		count(&r.stats.Dropped, p.Size())
		return
	case src.Addr() == r.public:
		// A hairpinned packet whose private endpoint has gone.
		count(&r.stats.Dropped, p.Size())
		return
	case dst.Addr() == r.public && !r.cfg.Hairpin:
		count(&r.stats.Dropped, p.Size())
		return
	}
	if _, ok := r.remotes[src.Addr()]; ok {
		// An inbound packet whose private endpoint has gone: on a real LAN
		// the host would answer it, it would not reach the router again.
		count(&r.stats.Dropped, p.Size())
		return
	}
	b, err := r.outboundLocked(src, dst, now)
	if err != nil {
		count(&r.stats.Dropped, p.Size())
		return
	}
	if dst.Addr() == r.public {
		r.hairpinLocked(b, dst, p.Data, now)
		return
	}
	if _, err := b.conn.WriteTo(p.Data, net.UDPAddrFromAddrPort(dst)); err != nil {
		count(&r.stats.Dropped, p.Size())
		return
	}
	count(&r.stats.TranslatedOut, p.Size())
}

// outboundLocked finds or makes the mapping for a packet from src to dst,
// refreshes it and lets dst reply through its filter.
func (r *Router) outboundLocked(src, dst netip.AddrPort, now time.Time) (*binding, error) {
	key := bindingKey{private: src, remote: reduce(r.cfg.Mapping, dst)}
	b := r.bindings[key]
	if b != nil && !now.Before(b.expires) {
		r.expireLocked(b) // its reader has not woken yet
		b = nil
	}
	if b == nil {
		conn, err := r.listenLocked(key)
		if err != nil {
			return nil, err
		}
		b = &binding{
			key:    key,
			public: conn.LocalAddr().(*net.UDPAddr).AddrPort(),
			conn:   conn,
		}
		if r.cfg.Filtering != EndpointIndependent {
			b.allowed = map[netip.AddrPort]struct{}{}
		}
		r.bindings[key] = b
		r.byPort[b.public.Port()] = b
		r.stats.MappingsCreated++
		// The read deadline is the reader's expiry timer: it wakes then
		// and either finds the mapping refreshed or ends it. Refreshes
		// leave the deadline alone; the reader moves it when it wakes.
		conn.SetReadDeadline(now.Add(r.lifetime))
		r.wg.Add(1)
		go r.serve(b)
	}
	b.expires = now.Add(r.lifetime)
	if b.allowed != nil {
		b.allowed[reduce(r.cfg.Filtering, dst)] = struct{}{}
	}
	return b, nil
}

// listenLocked binds a new external port, drawn from the router's source
// and retried while taken.
func (r *Router) listenLocked(key bindingKey) (*netem.PacketConn, error) {
	avoid := r.retired[key]
	for range portCount {
		port := uint16(firstPort + r.rng.IntN(portCount))
		if port == avoid {
			continue
		}
		c, err := r.outside.Listen(netip.AddrPortFrom(r.public, port))
		if err == nil {
			return c, nil
		}
		if errors.Is(err, net.ErrClosed) {
			return nil, fmt.Errorf("nat: %v: %w", r.public, err)
		}
	}
	return nil, fmt.Errorf("nat: %v: no free port found", r.public)
}

// hairpinLocked loops a packet sent by mapping from to the router's own
// public address back to the private endpoint of the mapping owning the
// destination port, as if it had arrived from outside.
func (r *Router) hairpinLocked(from *binding, dst netip.AddrPort, data []byte, now time.Time) {
	to := r.byPort[dst.Port()]
	if to == nil || !now.Before(to.expires) {
		count(&r.stats.Dropped, len(data))
		return
	}
	if !to.permits(r.cfg.Filtering, from.public) {
		count(&r.stats.Filtered, len(data))
		return
	}
	if r.cfg.InboundRefresh {
		to.expires = now.Add(r.lifetime)
	}
	if err := r.inside.Inject(from.public, to.key.private, data); err != nil {
		count(&r.stats.Dropped, len(data))
		return
	}
	count(&r.stats.Hairpinned, len(data))
}

// expireLocked ends a mapping whose lifetime is over and releases its port.
func (r *Router) expireLocked(b *binding) {
	if b.dead {
		return
	}
	b.dead = true
	if r.bindings[b.key] == b {
		delete(r.bindings, b.key)
	}
	if r.byPort[b.public.Port()] == b {
		delete(r.byPort, b.public.Port())
	}
	r.retired[b.key] = b.public.Port()
	r.stats.MappingsExpired++
	b.conn.Close()
}

// serve reads a mapping's external port until the mapping ends, injecting
// what its filter lets in into the LAN.
func (r *Router) serve(b *binding) {
	defer r.wg.Done()
	buf := make([]byte, netem.MaxDatagram)
	for {
		n, from, err := b.conn.ReadFrom(buf)
		timedOut := errors.Is(err, os.ErrDeadlineExceeded)
		if err != nil && !timedOut {
			return // closed by expiry or Close
		}
		now := time.Now()
		r.mu.Lock()
		if b.dead {
			r.mu.Unlock()
			return
		}
		if !now.Before(b.expires) {
			if !timedOut {
				count(&r.stats.Dropped, n) // arrived as the mapping ended
			}
			r.expireLocked(b)
			r.mu.Unlock()
			return
		}
		if timedOut { // refreshed since the deadline was set
			deadline := b.expires
			r.mu.Unlock()
			b.conn.SetReadDeadline(deadline)
			continue
		}
		r.inboundLocked(b, from, buf[:n], now)
		r.mu.Unlock()
	}
}

// inboundLocked filters and translates a packet that reached a mapping's
// external port from outside.
func (r *Router) inboundLocked(b *binding, from net.Addr, data []byte, now time.Time) {
	remote, ok := addrPort(from)
	if !ok || !b.permits(r.cfg.Filtering, remote) {
		count(&r.stats.Filtered, len(data))
		return
	}
	if r.cfg.InboundRefresh {
		b.expires = now.Add(r.lifetime)
	}
	r.remotes[remote.Addr()] = struct{}{}
	if err := r.inside.Inject(remote, b.key.private, data); err != nil {
		count(&r.stats.Dropped, len(data))
		return
	}
	count(&r.stats.TranslatedIn, len(data))
}

// permits reports whether the mapping's filter lets a packet from remote in.
func (b *binding) permits(filtering Behavior, remote netip.AddrPort) bool {
	if b.allowed == nil {
		return true
	}
	_, ok := b.allowed[reduce(filtering, remote)]
	return ok
}

// reduce keeps as much of a remote endpoint as a behaviour distinguishes.
func reduce(bh Behavior, ap netip.AddrPort) netip.AddrPort {
	switch bh {
	case AddressDependent:
		return netip.AddrPortFrom(ap.Addr(), 0)
	case AddressAndPortDependent:
		return ap
	default:
		return netip.AddrPort{}
	}
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	u, ok := a.(*net.UDPAddr)
	if !ok || u == nil {
		return netip.AddrPort{}, false
	}
	return u.AddrPort(), true
}
