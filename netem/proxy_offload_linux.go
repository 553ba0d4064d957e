package netem

import (
	"encoding/binary"
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// groOOBSize is the control buffer each read message gets: room for the
// UDP_GRO message and as much again, so that a control message nobody asked
// for cannot crowd it out (a truncated UDP_GRO would make a coalesced message
// look like one huge datagram).
var groOOBSize = 2 * unix.CmsgSpace(4)

// gsoOOBSize is the control buffer each sent message gets: one UDP_SEGMENT.
var gsoOOBSize = unix.CmsgSpace(2)

// enableGRO asks the kernel to hand c's reader coalesced runs of datagrams
// (one read, one segment size in a UDP_GRO control message) where it can. A
// kernel without UDP_GRO (before 5.0) refuses, and reads stay one datagram
// each.
func enableGRO(c *net.UDPConn) { turnOn(c, [2]int{unix.SOL_UDP, unix.UDP_GRO}) }

// turnOn sets each of c's options (level, name) to 1. A kernel or a
// socket family without one refuses it, and it stays off: each caller's
// feature then falls back on its own.
func turnOn(c *net.UDPConn, opts ...[2]int) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		for _, o := range opts {
			_ = unix.SetsockoptInt(int(fd), o[0], o[1], 1)
		}
	})
}

// gsoSupported reports whether c's kernel takes UDP_SEGMENT messages: the
// option is readable exactly where sending with it is implemented (4.18 on).
// A device on the route may still refuse a segmented send; writeBatch then
// falls back (see isGSOError).
func gsoSupported(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		_, serr = unix.GetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT)
	}); err != nil {
		return false
	}
	return serr == nil
}

// isGSOError reports whether a send of a UDP_SEGMENT message failed because
// of the segmentation rather than the datagrams: EIO where the device cannot
// checksum (segmentation needs it), EINVAL where the socket or the kernel
// refuses segmentation, EMSGSIZE where a segment would exceed the route's
// MTU (newer kernels say EMSGSIZE there, older ones EINVAL). Sent one by one,
// the same datagrams go out (fragmented if need be).
func isGSOError(err error) bool {
	return errors.Is(err, unix.EIO) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EMSGSIZE)
}

// appendSegmentCmsg appends a UDP_SEGMENT control message asking the kernel
// to cut the message's payload into datagrams of size bytes.
func appendSegmentCmsg(b []byte, size uint16) []byte {
	b, d := appendCmsg(b, unix.SOL_UDP, unix.UDP_SEGMENT, 2)
	binary.NativeEndian.PutUint16(d, size)
	return b
}

// groSegmentSize finds the UDP_GRO control message in oob and returns its
// segment size, or 0 if there is none (the message is then one datagram) or
// oob is malformed.
func groSegmentSize(oob []byte) int {
	if d := findCmsg(oob, unix.SOL_UDP, unix.UDP_GRO, 4); d != nil {
		// The kernel writes the segment size as a C int.
		return max(0, int(int32(binary.NativeEndian.Uint32(d))))
	}
	return 0
}
