//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package netem

import (
	"net"
	"syscall"
)

// waitReadable blocks until conn has a datagram (or an error) waiting,
// without reading it: a zero-length MSG_PEEK leaves the datagram queued, and
// the runtime's poller parks the goroutine while the socket is empty.
func waitReadable(conn *net.UDPConn) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var peekErr error
	err = rc.Read(func(fd uintptr) bool {
		_, _, peekErr = syscall.Recvfrom(int(fd), nil, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return peekErr != syscall.EAGAIN
	})
	if err != nil {
		return err
	}
	// A pending socket error (an ICMP unreachable) is reported here and
	// cleared; the caller reads again.
	return peekErr
}
