//go:build linux

package kernel

import (
	"slices"
	"time"

	"github.com/nuvirahub/latencylab/netem"
)

// ipLink adapts a link's configuration to IP packets: see ipImpairments.
func ipLink(cfg netem.LinkConfig) netem.LinkConfig {
	// The link carries whole IP packets, headers included in their size,
	// and the TUN devices' MTU (Config.MTU) bounds them already: the
	// link's own MTU, which adds IP and UDP headers to a datagram's
	// payload, must not count them again, so it is out of reach here.
	cfg.MTU = ipPacketMTU
	cfg.Impairments = ipImpairments(cfg.Impairments)
	cfg.Timeline = slices.Clone(cfg.Timeline)
	for i := range cfg.Timeline {
		cfg.Timeline[i].Impairments = ipImpairments(cfg.Timeline[i].Impairments)
	}
	return cfg
}

// ipPacketMTU is above any IP packet plus the headers a link adds to it.
const ipPacketMTU = 1<<16 + 48

// ipImpairments replaces netem.Block, which drops every packet of a link
// that carries datagrams, by udpBlock, which drops the UDP ones of a link
// that carries every protocol: a scenario's block_udp then leaves TCP
// through, as the firewall it stands for would. The other impairments
// act on a packet's size and instants, whatever it holds.
func ipImpairments(imps []netem.Impairment) []netem.Impairment {
	if !slices.ContainsFunc(imps, isBlock) {
		return imps
	}
	out := slices.Clone(imps)
	for i, imp := range out {
		if isBlock(imp) {
			out[i] = udpBlock{}
		}
	}
	return out
}

func isBlock(imp netem.Impairment) bool {
	_, ok := imp.(*netem.Block)
	return ok
}

// udpBlock drops the UDP packets of a link carrying IP packets
// (DropBlocked, as netem.Block) and lets the others through.
type udpBlock struct{}

// Kind implements netem.Impairment: it is the block of the scenario.
func (udpBlock) Kind() string { return "block" }

// Stage implements netem.Impairment.
func (udpBlock) Stage() netem.Stage { return netem.StageGate }

// Apply implements netem.Impairment.
func (udpBlock) Apply(p *netem.Packet, at time.Time, _ *netem.Env) netem.Verdict {
	if isUDP(p.Data) {
		return netem.Verdict{Drop: netem.DropBlocked}
	}
	return netem.Verdict{At: at}
}

// ipProtoUDP is UDP's number in the IPv4 protocol and IPv6 next-header
// fields.
const ipProtoUDP = 17

// isUDP reports whether an IP packet carries UDP. An IPv6 packet's UDP
// behind extension headers is not looked for: the pair's links carry IPv4
// only.
func isUDP(pk []byte) bool {
	switch {
	case len(pk) >= 20 && pk[0]>>4 == 4:
		return pk[9] == ipProtoUDP
	case len(pk) >= 40 && pk[0]>>4 == 6:
		return pk[6] == ipProtoUDP
	}
	return false
}
