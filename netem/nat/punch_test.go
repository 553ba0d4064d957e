package nat

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/netem"
)

// The hole-punching rule, from first principles. Each peer learns the
// other's reflexive address from a rendezvous server S: the external port of
// its mapping towards S. Both then send punches to the learned address at
// once, and each answers a punch it receives at the address the punch came
// from (a peer-reflexive address, as ICE does).

// punchArrives reports whether a punch that from sends to to's learned
// address passes to's filter (once to has sent its own punches):
//   - endpoint-independent filtering lets anyone in;
//   - address-dependent filtering needs to's port towards S to have sent to
//     from's address, which is so only if to's mapping is endpoint-independent
//     (else to's punches left from another port);
//   - address-and-port-dependent filtering needs that port to have sent to
//     from's exact source, which is also the address learned from S only if
//     from's mapping is endpoint-independent.
func punchArrives(from, to Config) bool {
	switch to.Filtering {
	case EndpointIndependent:
		return true
	case AddressDependent:
		return to.Mapping == EndpointIndependent
	default:
		return to.Mapping == EndpointIndependent && from.Mapping == EndpointIndependent
	}
}

// answerArrives reports whether to's answer to a punch from from gets back
// in. It goes to the source of the punch, the port of from's mapping towards
// to's learned address, which has sent there: only port-dependent filtering
// can refuse it, if the answer leaves to from another port than the learned
// one, that is if to's mapping is not endpoint-independent.
func answerArrives(from, to Config) bool {
	return from.Filtering != AddressAndPortDependent || to.Mapping == EndpointIndependent
}

// connects reports whether each peer hears from the other: both punches
// arrive, or one does and its answer gets back.
func connects(a, b Config) bool {
	ab, ba := punchArrives(a, b), punchArrives(b, a)
	return ab && ba || ab && answerArrives(a, b) || ba && answerArrives(b, a)
}

var presets = []struct {
	name string
	cfg  Config
}{
	{"full-cone", FullCone},
	{"restricted-cone", RestrictedCone},
	{"port-restricted-cone", PortRestrictedCone},
	{"symmetric", Symmetric},
}

// The rule fails exactly the pairs everyone knows fail: symmetric against
// symmetric and against port-restricted cone, in either order. Against a
// full or restricted cone the symmetric side's punch gets in (its source
// address is the one the cone has sent to) and the cone's answer returns
// through the port that sent the punch; the cone's own punches never pass.
func TestPunchRuleFailures(t *testing.T) {
	var failing []string
	for _, a := range presets {
		for _, b := range presets {
			if !connects(a.cfg, b.cfg) {
				failing = append(failing, a.name+"/"+b.name)
			}
		}
	}
	require.Equal(t, []string{
		"port-restricted-cone/symmetric",
		"symmetric/port-restricted-cone",
		"symmetric/symmetric",
	}, failing)
}

// Two hosts behind two routers on one internet punch holes at each other;
// the simulation agrees with the rule for the 16 pairings of the presets.
func TestHolePunching(t *testing.T) {
	for _, a := range presets {
		for _, b := range presets {
			t.Run(a.name+"/"+b.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					ra, rb := punch(t, a.cfg, b.cfg)
					require.Equal(t, punchArrives(a.cfg, b.cfg), rb.punched, "A's punch reached B")
					require.Equal(t, punchArrives(b.cfg, a.cfg), ra.punched, "B's punch reached A")
					require.Equal(t, connects(a.cfg, b.cfg), ra.heard() && rb.heard(), "each heard the other")
				})
			})
		}
	}
}

// punchResult is what a peer received from the other.
type punchResult struct {
	punched, answered bool
}

func (r punchResult) heard() bool { return r.punched || r.answered }

// punch runs the experiment: sites A and B behind routers with configs a
// and b, a rendezvous echo server, and both peers punching at once.
func punch(t *testing.T, a, b Config) (resA, resB punchResult) {
	outside := netem.NewNetwork(1)
	defer outside.Close()
	rendezvous := netip.AddrPortFrom(server1, 3478)
	defer startEcho(t, outside, rendezvous)()
	a.Seed, b.Seed = 1, 2
	sa, cleanupA := newSite(t, outside, public1, a)
	defer cleanupA()
	sb, cleanupB := newSite(t, outside, public2, b)
	defer cleanupB()
	// Both LANs use the same private endpoint, as two homes' routers do.
	ca, cb := listen(t, sa.inside, hostA), listen(t, sb.inside, hostA)
	learnedA, learnedB := observe(t, ca, rendezvous), observe(t, cb, rendezvous)

	doneA, doneB := make(chan punchResult), make(chan punchResult)
	go func() { doneA <- punchPeer(ca, learnedB) }()
	go func() { doneB <- punchPeer(cb, learnedA) }()
	return <-doneA, <-doneB
}

// punchPeer sends a punch to peer every 10 ms for 50 ms and answers every
// punch it receives at its source.
func punchPeer(c *netem.PacketConn, peer netip.AddrPort) punchResult {
	var res punchResult
	buf := make([]byte, 16)
	end := time.Now().Add(50 * time.Millisecond)
	next := time.Now()
	for time.Now().Before(end) {
		if !time.Now().Before(next) {
			c.WriteTo([]byte("punch"), net.UDPAddrFromAddrPort(peer))
			next = next.Add(10 * time.Millisecond)
		}
		c.SetReadDeadline(next)
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			continue
		}
		switch string(buf[:n]) {
		case "punch":
			res.punched = true
			c.WriteTo([]byte("answer"), from)
		case "answer":
			res.answered = true
		default:
			panic(fmt.Sprintf("unexpected %q", buf[:n]))
		}
	}
	return res
}
