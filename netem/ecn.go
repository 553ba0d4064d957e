package netem

// The ECN bits of the IP header, as a sender asks for them in a control
// message (IP_TOS, IPV6_TCLASS) and a receiver reads them in one. These two
// methods are the one place where an endpoint's control messages meet the
// packet. An endpoint passes them only when its owner chose ECN
// (PacketConn.PassECN): a scenario's ECN-capable session or flow. Otherwise
// the path clears them, as some real paths do (ECN bleaching), and quic-go,
// whose marked packets then come back unmarked, fails its ECN validation
// and stops marking (RFC 9000, section 13.4.2), which keeps a QUIC flow
// that did not choose ECN as it was before packets carried the bits. Plain
// writers set a packet's codepoint with SetECN and read it with
// ReadFromECN, whatever PassECN says.

// PassECN sets whether the ECN bits the endpoint's owner writes and reads
// through control messages (quic-go's out-of-band API: WriteMsgUDP,
// ReadMsgUDP, ReadBatch) travel with its datagrams. Off (the default), a
// datagram sent leaves Not-ECT and one received reports Not-ECT, as on a
// path that clears the bits.
func (c *PacketConn) PassECN(on bool) { c.passECN.Store(on) }

// MarkedArrivals is the count of datagrams that arrived at the endpoint
// CE-marked (a queue on the way signalled congestion on them), whether or
// not its owner reads the bits: the marks a flow received.
func (c *PacketConn) MarkedArrivals() uint64 { return c.markedArrivals.Load() }

// sentECN is the codepoint of a datagram whose sender asked for the ECN
// field asked in a control message.
func (c *PacketConn) sentECN(asked ECN) ECN {
	if !c.passECN.Load() {
		return NotECT
	}
	return asked
}

// receivedECN is the ECN field a control message reports for p.
func (c *PacketConn) receivedECN(p *Packet) ECN {
	if !c.passECN.Load() {
		return NotECT
	}
	return p.ECN
}
