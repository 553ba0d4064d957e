//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package netem

import "net"

// waitReadable returns at once where the zero-length MSG_PEEK is not
// known to work: the batch read then blocks with its buffers borrowed,
// which only costs memory.
func waitReadable(*net.UDPConn) error { return nil }
