package netem

import "net"

// The path MTU. A link carries IP packets of at most its MTU bytes
// (LinkConfig.MTU). Its packets are UDP payloads, so the size it compares
// with the MTU is the payload plus the IP and UDP headers: HeaderBytes, 28
// over IPv4 (20 + 8, no options) and 48 over IPv6 (40 + 8, no extension
// headers). The check comes before every impairment, as the MTU belongs to
// the path's narrowest hop and a packet too big for it never reaches a
// queue.
//
// A datagram over the MTU with DF set is dropped (DropMTU), as a router
// drops it and answers with ICMP "fragmentation needed", which the lab does
// not send: quic-go, like every DPLPMTUD sender (RFC 8899), learns only
// from the loss of its probe. One without DF is fragmented, and the link
// counts it in Stats.Fragmented. The model is the simpler one: the
// datagram then crosses the link whole, as one packet that meets the loss,
// the queue and the rate once, with its payload's size; the fragments' own
// headers and the rule that a datagram arrives only if every fragment does
// are not modelled. Only senders that do not set DF (the lab's CBR flows,
// programs behind the proxy) meet this path, and the lab's own QUIC sets
// DF.

// DefaultMTU is a link's MTU when its config leaves it zero: Ethernet's.
const DefaultMTU = 1500

// MinMTU is the least MTU a link accepts: IPv4's minimum (RFC 791). QUIC
// needs more: its 1200-byte Initial datagrams, padded by quic-go to 1280
// bytes of UDP payload, need a path of at least 1308 bytes over IPv4
// (QUICMinMTU); below that a QUIC handshake with DF set cannot complete.
const MinMTU = 68

// QUICMinMTU is the least IPv4 path MTU over which quic-go connects with its
// default InitialPacketSize of 1280 bytes: 1280 + 28.
const QUICMinMTU = 1280 + 28

// HeaderBytes is what the IP and UDP headers add to p's payload on the
// wire: 48 when p goes to an IPv6 address, else 28.
func HeaderBytes(p *Packet) int {
	if to, ok := p.To.(*net.UDPAddr); ok && to.IP.To4() == nil && len(to.IP) == net.IPv6len {
		return 48
	}
	return 28
}
