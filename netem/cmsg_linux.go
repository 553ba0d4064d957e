package netem

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Control messages (cmsghdr) as the kernel lays them out, read and written
// without allocating: the real-time proxy handles one or two per datagram
// (UDP_GRO and UDP_SEGMENT for its batches, IP_TOS for ECN), and the
// in-memory endpoints speak the same messages to quic-go.

// cmsgLenSize is the size of a cmsghdr's length field (a size_t); the level
// and type that follow it are two C ints.
const cmsgLenSize = unix.SizeofCmsghdr - 8

func cmsgLen(h []byte) uint64 {
	if cmsgLenSize == 8 {
		return binary.NativeEndian.Uint64(h)
	}
	return uint64(binary.NativeEndian.Uint32(h))
}

func putCmsgLen(h []byte, l int) {
	if cmsgLenSize == 8 {
		binary.NativeEndian.PutUint64(h, uint64(l))
		return
	}
	binary.NativeEndian.PutUint32(h, uint32(l))
}

// findCmsg returns the data of the first control message in oob of the
// given level and type that carries at least min bytes, or nil if there is
// none or oob is malformed.
func findCmsg(oob []byte, level, typ int32, min int) []byte {
	for len(oob) >= unix.CmsgLen(0) {
		l := cmsgLen(oob)
		if l < uint64(unix.CmsgLen(0)) || l > uint64(len(oob)) {
			return nil
		}
		if int32(binary.NativeEndian.Uint32(oob[cmsgLenSize:])) == level &&
			int32(binary.NativeEndian.Uint32(oob[cmsgLenSize+4:])) == typ && l >= uint64(unix.CmsgLen(min)) {
			return oob[unix.CmsgLen(0):l]
		}
		// Control messages are padded to the alignment CmsgSpace uses.
		next := unix.CmsgSpace(int(l) - unix.CmsgLen(0))
		if next >= len(oob) {
			return nil
		}
		oob = oob[next:]
	}
	return nil
}

// appendCmsg appends a control message of the given level and type with
// room for size bytes of data, and returns b and that data, zeroed, to be
// filled.
func appendCmsg(b []byte, level, typ, size int) (out, data []byte) {
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(size))...)
	h := b[start:]
	putCmsgLen(h, unix.CmsgLen(size))
	binary.NativeEndian.PutUint32(h[cmsgLenSize:], uint32(level))
	binary.NativeEndian.PutUint32(h[cmsgLenSize+4:], uint32(typ))
	return b, h[unix.CmsgLen(0):unix.CmsgLen(size)]
}

// cmsgECN returns the ECN field of the IP_TOS (IPv4, one byte) or
// IPV6_TCLASS (a C int) control message in oob; Not-ECT when there is none.
func cmsgECN(oob []byte) ECN {
	if d := findCmsg(oob, unix.IPPROTO_IP, unix.IP_TOS, 1); d != nil {
		return ECN(d[0] & 0b11)
	}
	if d := findCmsg(oob, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, 4); d != nil {
		return ECN(binary.NativeEndian.Uint32(d) & 0b11)
	}
	return NotECT
}

// tosCmsgSpace is the room appendTOSCmsg takes.
func tosCmsgSpace(v4 bool) int {
	if v4 {
		return unix.CmsgSpace(1)
	}
	return unix.CmsgSpace(4)
}

// appendTOSCmsg appends the control message that carries the ECN field ecn
// as the kernel writes it for a reader and takes it from a sender: IP_TOS
// (one byte, as quic-go writes it) on an IPv4 socket, IPV6_TCLASS (a C
// int) on an IPv6 one.
func appendTOSCmsg(b []byte, ecn ECN, v4 bool) []byte {
	if v4 {
		b, d := appendCmsg(b, unix.IPPROTO_IP, unix.IP_TOS, 1)
		d[0] = byte(ecn)
		return b
	}
	b, d := appendCmsg(b, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, 4)
	binary.NativeEndian.PutUint32(d, uint32(ecn))
	return b
}
