package netem

const (
	// maxGSOSegments is the most datagrams one UDP_SEGMENT message carries:
	// the kernel's limit (UDP_MAX_SEGMENTS) was 64 until Linux 6.x raised it,
	// so 64 is accepted everywhere GSO exists.
	maxGSOSegments = 64
	// maxGSOBytes bounds a coalesced message's payload: it still has to fit
	// one IPv4 packet before the kernel cuts it into segments.
	maxGSOBytes = maxUDPPayload
	// proxyReadBuf is the size of a receive buffer: with GRO a read may return
	// up to 64 KiB of coalesced datagrams, a little more than the largest
	// single IPv4 datagram, and a short buffer would cut off the last ones.
	proxyReadBuf = 1 << 16
)

// gsoRun is how many packets from the start of pks one UDP_SEGMENT message
// can carry: a run to the same destination whose payloads all have the
// first one's size, except that the last may be shorter (the kernel cuts the
// message every segment size bytes, so only the tail can be short), with
// the same ECN bits (the message's one IP_TOS gives every segment its), at most
// maxGSOSegments of them and maxGSOBytes in all. A zero-length datagram
// cannot be a segment. A result of 1 means the packet goes alone.
func gsoRun(pks []*Packet) int {
	if len(pks) == 0 {
		return 0
	}
	seg := len(pks[0].Data)
	if seg == 0 {
		return 1
	}
	n, total := 1, seg
	for n < len(pks) && n < maxGSOSegments {
		pk := pks[n]
		size := len(pk.Data)
		if pk.To != pks[0].To || pk.ECN != pks[0].ECN || size == 0 || size > seg || total+size > maxGSOBytes {
			break
		}
		n++
		total += size
		if size < seg {
			break
		}
	}
	return n
}

// nextSegment cuts the first datagram off msg, a message that GRO may have
// coalesced from datagrams of seg bytes (the last one possibly shorter); seg
// is 0 when the kernel reported no segment size, and msg is then one
// datagram. rest is empty once msg is used up.
func nextSegment(msg []byte, seg int) (dgram, rest []byte) {
	if seg <= 0 || seg >= len(msg) {
		return msg, nil
	}
	return msg[:seg], msg[seg:]
}
