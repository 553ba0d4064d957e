// Package kernel is netem's kernel mode: it impairs the Linux kernel's own
// traffic, the way mahimahi does, so that the kernel's TCP congestion
// controllers (bbr, cubic, reno) can be compared on the lab's links.
//
// It owns a Pair: two network namespaces with a TUN device in each, whose IP
// packets cross from one device to the other through two netem Links (one per
// direction) running in real time with precise timers. B may instead be the
// host's own namespace (Config.HostB), as for lab shell: any program run in A
// (Pair.CommandA) then reaches this machine's servers at B's address across
// the links, and nothing beyond it. It owns the pair's
// lifetime too: everything New creates is removed by Close, after a failure
// during setup, and when the process gets SIGINT or SIGTERM. Sweep removes
// what a killed process (SIGKILL) left behind.
//
// Code runs inside a namespace through Pair.InA and Pair.InB: sockets created
// there belong to that namespace and can be used from anywhere afterwards.
// Bulk runs one long TCP flow (like iperf) from A to B with a chosen
// congestion controller and measures its goodput, its utilisation of the
// link and its retransmissions.
//
// Kernel mode needs Linux, root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and
// /dev/net/tun; Available says why it cannot run where it cannot.
package kernel
