//go:build !linux

package netem

import "net"

// Elsewhere than Linux the proxy neither coalesces nor splits datagrams:
// reads and writes stay one datagram each.

var groOOBSize, gsoOOBSize = 0, 0

func enableGRO(*net.UDPConn) {}

func gsoSupported(*net.UDPConn) bool { return false }

func isGSOError(error) bool { return false }

// appendSegmentCmsg is never called where gsoSupported is false.
func appendSegmentCmsg(b []byte, _ uint16) []byte { return b }

func groSegmentSize([]byte) int { return 0 }
