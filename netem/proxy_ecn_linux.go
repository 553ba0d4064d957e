package netem

import (
	"net"

	"golang.org/x/sys/unix"
)

// tosOOBSize is the room a sent message's IP_TOS (IPV6_TCLASS) control
// message takes.
var tosOOBSize = unix.CmsgSpace(4)

// enableRecvTOS asks the kernel to report each datagram's TOS byte (IPv4)
// or traffic class (IPv6), whose low two bits are the ECN field, in a
// control message with what c reads. A socket of the other family refuses
// the other option; failure leaves the bits unread (Not-ECT).
func enableRecvTOS(c *net.UDPConn) {
	turnOn(c, [2]int{unix.IPPROTO_IP, unix.IP_RECVTOS}, [2]int{unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS})
}
