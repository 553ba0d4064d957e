//go:build linux

package kernel

import (
	"fmt"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// hostLock is the file whose lock serialises, between processes, the
// choice of a HostB pair's subnet: a second run must see the first one's
// address on the host before it chooses its own.
const hostLock = "/run/latencylab-kernel.lock"

// lockHost takes hostLock and returns what releases it.
func lockHost() (unlock func(), err error) {
	f, err := os.OpenFile(hostLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("kernel: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("kernel: lock %s: %w", hostLock, err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

// freeSubnet finds the first /30 of 10.77.0.0/16, from the one subnet
// gives pid and n on, that no address of the host's interfaces overlaps:
// a HostB pair's addresses become the host's, and one that shadowed a
// network the host uses, or another run's pair, would take its traffic.
func freeSubnet(pid int, n uint32) (a, b netip.Addr, err error) {
	used, err := hostPrefixes()
	if err != nil {
		return a, b, err
	}
	start := subnetIndex(pid, n)
	for i := range uint32(subnets) {
		a, b = subnetAt((start + i) % subnets)
		p := netip.PrefixFrom(a, 30).Masked()
		free := true
		for _, u := range used {
			if u.Overlaps(p) {
				free = false
				break
			}
		}
		if free {
			return a, b, nil
		}
	}
	return a, b, fmt.Errorf("kernel: no /30 of 10.77.0.0/16 is free on this host: its interfaces' addresses (%v) cover them all", used)
}

// hostPrefixes lists the IPv4 prefixes of the host's interface addresses.
func hostPrefixes() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("kernel: the host's addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok || !ip.Unmap().Is4() {
			continue
		}
		bits, _ := ipn.Mask.Size()
		if bits > 32 { // an IPv4 address in a 16-byte mask
			bits -= 96
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), bits).Masked())
	}
	return out, nil
}
