package netem

import (
	"fmt"
	"net"
	"net/netip"
)

// CakeHosts is what a CAKE-like queue shares the link between before it
// shares between flows: the hosts on one side of the link, the other, or
// both (tc-cake's flow isolation modes of the same names).
type CakeHosts int

const (
	// CakeTripleIsolate shares between source hosts and between
	// destination hosts at once: a flow's quantum is divided by the
	// larger of its two hosts' bulk flows. It is CAKE's default, right on
	// either side of a router without knowing which side is the LAN.
	CakeTripleIsolate CakeHosts = iota
	// CakeDualSrcHost shares between source hosts, then between each
	// host's flows: a router's egress toward the internet, where the
	// LAN's hosts are the sources.
	CakeDualSrcHost
	// CakeDualDstHost shares between destination hosts, then between each
	// host's flows: a router's ingress toward the LAN.
	CakeDualDstHost
)

// CakeModes are the names of the CakeHosts modes, as tc-cake spells them
// and the scenario format takes them, in the constants' order.
var CakeModes = []string{"triple-isolate", "dual-srchost", "dual-dsthost"}

// String is the mode's tc-cake name.
func (h CakeHosts) String() string {
	if h >= 0 && int(h) < len(CakeModes) {
		return CakeModes[h]
	}
	return fmt.Sprintf("CakeHosts(%d)", int(h))
}

// CakeParams configure the CAKE-like queue: FQ-CoDel's flow queues, deficit
// round robin and CoDel per flow, with CAKE's host isolation on top. Each
// host's bulk flows (those that used a quantum with packets left) are
// counted, and a flow's quantum is divided by its host's count, so that
// hosts share the link equally and each host's flows share its part: a
// host with eight bulk flows beside a host with one gets half the link,
// not eight ninths. A host is a packet's IP address.
//
// It is not CAKE: it has no shaper of its own (the link's rate is the
// bottleneck), CoDel instead of COBALT, one tin (no DiffServ), no ACK
// filter, no overhead compensation beyond the rate's, and a plain hash of
// Flows buckets (CAKE's is 8-way set-associative); hosts are exact
// addresses, where CAKE hashes them into 1024 buckets. docs/netem.md
// lists the differences.
type CakeParams struct {
	FQCoDelParams
	// Hosts is the isolation mode; its zero value is CAKE's default,
	// triple-isolate.
	Hosts CakeHosts
}

// Validate refuses what FQ-CoDel refuses and an unknown mode.
func (c *CakeParams) Validate() error {
	if c.Hosts < 0 || int(c.Hosts) >= len(CakeModes) {
		return fmt.Errorf("cake host isolation %v: expected one of %v", c.Hosts, CakeModes)
	}
	return c.FQCoDelParams.Validate()
}

// newCake is the CAKE-like queue: FQ-CoDel's core, with host loads.
func newCake(cfg CakeParams) *fqCoDel {
	f := newFQCoDel(cfg.FQCoDelParams)
	f.hosts = &hostLoads{
		src:     cfg.Hosts != CakeDualDstHost,
		dst:     cfg.Hosts != CakeDualSrcHost,
		bulkSrc: map[netip.Addr]int{},
		bulkDst: map[netip.Addr]int{},
	}
	return f
}

// hostLoads counts each host's bulk flows, as sch_cake's
// srchost_bulk_flow_count and dsthost_bulk_flow_count. A nil *hostLoads
// is FQ-CoDel's: every flow alone, a load of one.
type hostLoads struct {
	src, dst         bool // which sides it shares between
	bulkSrc, bulkDst map[netip.Addr]int
}

// activate records the hosts of the packet that makes fl active.
func (h *hostLoads) activate(fl *fqFlow, p *Packet) {
	if h == nil {
		return
	}
	fl.src, fl.dst = hostOf(p.From), hostOf(p.To)
}

// hostOf is an address's host: its IP (unmapped, so that a v4 host is one
// host whichever form it comes in).
func hostOf(a net.Addr) netip.Addr {
	if u, ok := a.(*net.UDPAddr); ok {
		ip, _ := netip.AddrFromSlice(u.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// setBulk counts fl in its hosts' loads, or stops counting it.
func (h *hostLoads) setBulk(fl *fqFlow, bulk bool) {
	if h == nil || fl.bulk == bulk {
		return
	}
	fl.bulk = bulk
	d := 1
	if !bulk {
		d = -1
	}
	h.bulkSrc[fl.src] += d
	h.bulkDst[fl.dst] += d
}

// load is what fl's quantum is divided by: the larger of its hosts' bulk
// flows on the sides the mode shares between, at least one.
func (h *hostLoads) load(fl *fqFlow) int {
	n := 1
	if h == nil {
		return n
	}
	if h.src {
		n = max(n, h.bulkSrc[fl.src])
	}
	if h.dst {
		n = max(n, h.bulkDst[fl.dst])
	}
	return n
}
