package netem

import (
	"encoding/binary"
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
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
		_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
	})
}

// cmsgECN finds the IP_TOS or IPV6_TCLASS control message in oob and
// returns the ECN field it carries; Not-ECT when there is none.
func cmsgECN(oob []byte) ECN {
	for len(oob) >= unix.CmsgLen(0) {
		l := cmsgLen(oob)
		if l < uint64(unix.CmsgLen(0)) || l > uint64(len(oob)) {
			return NotECT
		}
		level := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize:]))
		typ := int32(binary.NativeEndian.Uint32(oob[cmsgLenSize+4:]))
		data := oob[unix.CmsgLen(0):l]
		switch {
		case level == unix.IPPROTO_IP && typ == unix.IP_TOS && len(data) >= 1:
			return ECN(data[0] & 0b11)
		case level == unix.IPPROTO_IPV6 && typ == unix.IPV6_TCLASS && len(data) >= 4:
			return ECN(binary.NativeEndian.Uint32(data) & 0b11)
		}
		next := unix.CmsgSpace(int(l) - unix.CmsgLen(0))
		if next >= len(oob) {
			return NotECT
		}
		oob = oob[next:]
	}
	return NotECT
}

// appendTOSCmsg appends the control message that sends a datagram with the
// ECN field ecn: IP_TOS (one byte, as quic-go writes it) on an IPv4
// socket, IPV6_TCLASS (a C int) on an IPv6 one.
func appendTOSCmsg(b []byte, ecn ECN, v4 bool) []byte {
	level, typ, size := unix.IPPROTO_IP, unix.IP_TOS, 1
	if !v4 {
		level, typ, size = unix.IPPROTO_IPV6, unix.IPV6_TCLASS, 4
	}
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(size))...)
	h := b[start:]
	putCmsgLen(h, unix.CmsgLen(size))
	binary.NativeEndian.PutUint32(h[cmsgLenSize:], uint32(level))
	binary.NativeEndian.PutUint32(h[cmsgLenSize+4:], uint32(typ))
	if v4 {
		h[unix.CmsgLen(0)] = byte(ecn)
	} else {
		binary.NativeEndian.PutUint32(h[unix.CmsgLen(0):], uint32(ecn))
	}
	return b
}
