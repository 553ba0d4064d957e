package netem

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
)

// A path of several hops: packets cross links one after another, as they
// cross the routers of a real path, and other traffic joins and leaves the
// path at any router. A hop's link belongs to no route of its own
// (AddLink); a route lists the links its packets cross (SetRoute), and two
// routes that list one link share it: its queue, its loss, its rate. A
// flow that crosses only the second hop of a session's path so fills the
// second hop's queue, not the first's.

// AddLink makes a link of the network that belongs to no one route: the
// routes that list it (SetRoute) send packets across it, each on to the
// next link of its own route, or to its destination after the last. Zero
// Name, Seed and Epoch take "hopN" (N the count of such links made
// before), the network's seed and the network's epoch.
func (n *Network) AddLink(cfg LinkConfig) (*Link, error) {
	n.mu.Lock()
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("hop%d", len(n.hopLinks))
	}
	n.mu.Unlock()
	if cfg.Seed == 0 {
		cfg.Seed = n.seed
	}
	if cfg.Epoch.IsZero() {
		cfg.Epoch = n.epoch
	}
	// The link is known only once made; nothing reaches deliver before
	// AddLink returns, since no route lists the link yet.
	var l *Link
	l, err := NewLink(cfg, func(p *Packet) { n.forward(l, p) })
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		go l.Close()
		return nil, net.ErrClosed
	}
	n.hopLinks = append(n.hopLinks, l)
	return l, nil
}

// ErrRoute is returned by SetRoute for a list of links it cannot route
// through.
var ErrRoute = errors.New("netem: bad route")

// SetRoute makes the packets from host from to host to cross links in
// order, in place of the route's single link (SetLink, which in turn
// replaces the route). Every link must come from AddLink on this network,
// and none may appear twice. No links removes the route; packets already
// on the way are then counted by NoRoute as they leave their link. A
// host's access links (SetHostLinks) still come before and after.
func (n *Network) SetRoute(from, to netip.Addr, links ...*Link) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return net.ErrClosed
	}
	for i, l := range links {
		if l == nil || !slices.Contains(n.hopLinks, l) {
			return fmt.Errorf("%w: %v -> %v: link %d was not made by this network's AddLink", ErrRoute, from, to, i)
		}
		if slices.Index(links, l) != i {
			return fmt.Errorf("%w: %v -> %v: link %s is listed twice", ErrRoute, from, to, l.Name())
		}
	}
	r := route{from, to}
	if len(links) == 0 {
		delete(n.routes, r)
		return nil
	}
	if n.routes == nil {
		n.routes = map[route][]*Link{}
	}
	if old := n.links[r]; old != nil {
		delete(n.links, r)
		go old.Close()
	}
	n.routes[r] = slices.Clone(links)
	return nil
}

// Route returns the links of the route from host from to host to set with
// SetRoute, in order; nil for a route of one link.
func (n *Network) Route(from, to netip.Addr) []*Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.routes[route{from, to}])
}

// forward is where a hop's link l delivers: on to the next link of the
// packet's route, or into its destination after the last.
func (n *Network) forward(l *Link, p *Packet) {
	from, _ := p.From.(*net.UDPAddr)
	to, _ := p.To.(*net.UDPAddr)
	if from == nil || to == nil {
		return
	}
	n.mu.Lock()
	links := n.routes[route{from.AddrPort().Addr(), to.AddrPort().Addr()}]
	n.mu.Unlock()
	i := slices.Index(links, l)
	switch {
	case i < 0: // the route changed while the packet was on its way
		n.countNoRoute(p)
	case i+1 < len(links):
		_ = links[i+1].Send(p) // fails only once closed, like leftHost
	default:
		n.arrive(p)
	}
}
