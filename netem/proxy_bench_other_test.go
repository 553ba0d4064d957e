//go:build !linux

package netem

import "net"

// proxyBenchBigBuffer keeps the system's buffer where SO_RCVBUFFORCE does
// not exist.
func proxyBenchBigBuffer(*net.UDPConn) {}
