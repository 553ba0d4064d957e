package netem

// The ECN bits of the IP header, as a sender asks for them in a control
// message (IP_TOS, IPV6_TCLASS) and a receiver reads them in one. These two
// functions are the one place where an endpoint's control messages meet
// the packet. Today the in-memory path clears the bits of what is sent
// through control messages, as some real paths do (ECN bleaching): quic-go,
// whose marked packets come back unmarked, fails its ECN validation and
// stops marking (RFC 9000, section 13.4.2). Plain writers set a packet's
// codepoint with PacketConn.SetECN and read it with ReadFromECN.

// sentECN is the codepoint of a datagram whose sender asked for the ECN
// bits in tos (its low two bits): Not-ECT, the path clears them.
func sentECN(tos byte) ECN { return NotECT }

// receivedECN is the ECN byte a control message reports for p: Not-ECT
// (0), the path clears it.
func receivedECN(*Packet) byte { return 0 }
