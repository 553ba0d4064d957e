package netem

import (
	"net"
	"syscall"
)

// proxyBenchBigBuffer gives the benchmark's receiver a 64 MiB receive
// buffer where the system allows it (SO_RCVBUFFORCE needs CAP_NET_ADMIN;
// without it the 4 MiB of setBuffers stay). A link with a delay releases
// its packets in bursts as large as its timer is late, and on one core the
// receiver only reads once the proxy's writer has written the whole burst:
// the benchmark measures the proxy, not how the receiver copes with that.
func proxyBenchBigBuffer(c *net.UDPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 64<<20)
	})
}
