// Package nat owns the lab's model of home routers: network address and port
// translation between a site's LAN and the internet, each an in-memory
// netem.Network, with the mapping, filtering, lifetime and hairpinning
// behaviours of RFC 4787. It exists so that connection strategies (hole
// punching, relays, fallbacks) meet the routers they meet in the field; it
// decides nothing about those strategies.
package nat

import (
	"errors"
	"fmt"
	"time"
)

// Behavior is how a router keys what it does by the remote endpoint, the
// classification RFC 4787 uses both for mapping (section 4.1: which outbound
// packets share an external port) and for filtering (section 5: which inbound
// packets an external port lets in).
type Behavior int

const (
	// EndpointIndependent ignores the remote endpoint: one mapping per
	// private endpoint, and anyone may send to it.
	EndpointIndependent Behavior = iota
	// AddressDependent keys by the remote address: a mapping per remote
	// host, and only hosts the mapping has sent to may reply, from any port.
	AddressDependent
	// AddressAndPortDependent keys by the remote address and port: a
	// mapping per remote endpoint, and only endpoints the mapping has sent to
	// may reply.
	AddressAndPortDependent
)

var behaviorNames = [...]string{
	EndpointIndependent:     "endpoint-independent",
	AddressDependent:        "address-dependent",
	AddressAndPortDependent: "address-and-port-dependent",
}

// ErrBehavior is wrapped by the errors of ParseBehavior and of New for a
// behaviour it does not know.
var ErrBehavior = errors.New("nat: unknown behavior")

// String returns the RFC 4787 name, as ParseBehavior accepts it.
func (b Behavior) String() string {
	if b.valid() {
		return behaviorNames[b]
	}
	return fmt.Sprintf("Behavior(%d)", int(b))
}

func (b Behavior) valid() bool { return b >= 0 && int(b) < len(behaviorNames) }

// ParseBehavior parses a behaviour's RFC 4787 name: "endpoint-independent",
// "address-dependent" or "address-and-port-dependent".
func ParseBehavior(s string) (Behavior, error) {
	for b, name := range behaviorNames {
		if s == name {
			return Behavior(b), nil
		}
	}
	return 0, fmt.Errorf("%w %q: want %q, %q or %q", ErrBehavior, s,
		behaviorNames[0], behaviorNames[1], behaviorNames[2])
}

// MarshalText implements encoding.TextMarshaler, so that scenario files and
// reports carry the RFC name.
func (b Behavior) MarshalText() ([]byte, error) {
	if !b.valid() {
		return nil, fmt.Errorf("%w: %d", ErrBehavior, int(b))
	}
	return []byte(b.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseBehavior.
func (b *Behavior) UnmarshalText(text []byte) error {
	v, err := ParseBehavior(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// DefaultLifetime is the mapping lifetime of a zero Config: RFC 4787 REQ-5
// says a UDP mapping must not expire in less than two minutes.
const DefaultLifetime = 2 * time.Minute

// Config describes a router. Its zero value is a full-cone-like router:
// endpoint-independent mapping and filtering, two-minute mappings refreshed
// by outbound traffic only, no hairpinning.
type Config struct {
	// Mapping decides when two outbound packets from one private endpoint
	// share an external port: always (EndpointIndependent), when they go to
	// the same remote address, or only to the same remote address and port.
	Mapping Behavior
	// Filtering decides which remote endpoints may send to an external
	// port: anyone (EndpointIndependent), addresses the mapping has sent
	// to, or exact address:port pairs it has sent to.
	Filtering Behavior
	// Lifetime is how long a mapping lives after the last packet that
	// refreshes it; then it stops forwarding and its port is released, and
	// the next outbound packet gets a new mapping on a new port. Zero means
	// DefaultLifetime.
	Lifetime time.Duration
	// InboundRefresh makes inbound packets that pass the filter refresh the
	// mapping too. RFC 4787 REQ-6 requires only outbound refresh, and many
	// routers do just that, which is why keepalives must flow outbound.
	InboundRefresh bool
	// Hairpin lets a private host reach another one through the router's
	// public address (RFC 4787 REQ-9); without it such packets are dropped,
	// as on many home routers.
	Hairpin bool
	// Seed seeds the choice of external ports, together with the router's
	// public address, so that two routers built from one run seed still
	// choose differently and the same seed always gives the same ports.
	Seed uint64
}

// Common names for router types, as Config values to copy and adjust (set
// Seed, Lifetime...). The "cone" names predate RFC 4787 and are what most
// people call these routers; all four map independently of the endpoint
// except Symmetric.
var (
	// FullCone: endpoint-independent mapping and filtering.
	FullCone = Config{Mapping: EndpointIndependent, Filtering: EndpointIndependent}
	// RestrictedCone: endpoint-independent mapping, address-dependent
	// filtering.
	RestrictedCone = Config{Mapping: EndpointIndependent, Filtering: AddressDependent}
	// PortRestrictedCone: endpoint-independent mapping, address- and
	// port-dependent filtering; the commonest home router.
	PortRestrictedCone = Config{Mapping: EndpointIndependent, Filtering: AddressAndPortDependent}
	// Symmetric: address- and port-dependent mapping and filtering, as in
	// many carrier-grade and enterprise NATs; hole punching between two of
	// them fails.
	Symmetric = Config{Mapping: AddressAndPortDependent, Filtering: AddressAndPortDependent}
)

func (c Config) lifetime() time.Duration {
	if c.Lifetime == 0 {
		return DefaultLifetime
	}
	return c.Lifetime
}

func (c Config) validate() error {
	if !c.Mapping.valid() {
		return fmt.Errorf("nat: mapping: %w: %d", ErrBehavior, int(c.Mapping))
	}
	if !c.Filtering.valid() {
		return fmt.Errorf("nat: filtering: %w: %d", ErrBehavior, int(c.Filtering))
	}
	if c.Lifetime < 0 {
		return fmt.Errorf("nat: negative lifetime %v", c.Lifetime)
	}
	return nil
}
