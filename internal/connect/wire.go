package connect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/nuvirahub/latencylab/netem/relay"
)

// errMalformed is wrapped by the error for a message that does not parse.
var errMalformed = errors.New("connect: malformed message")

// Message layout: a 24-byte header, then a body that depends on the type.
//
//	0      0x00
//	1..4   magic
//	5      version
//	6      type
//	7..22  session
//	23     role
//
// A QUIC packet always has the fixed bit (0x40) set in its first byte, and
// quic-go hands a datagram whose first byte has neither of its top two bits
// set to Transport.ReadNonQUICPacket: so the broker's messages and the peers'
// probes share one socket with QUIC, as the relay's control messages do, and
// the magic (not the relay's) keeps the two protocols apart.
const (
	msgVersion = 1
	headerLen  = 1 + len(msgMagic) + 1 + 1 + len(relay.SessionID{}) + 1
	addrLen    = 16 + 2
	// maxCandidates bounds the local candidates a peer offers: a PC has
	// a few interfaces, and a bound keeps every message small.
	maxCandidates = 8
)

var msgMagic = [4]byte{'N', 'V', 'B', 'K'}

// msgType is a message's type.
type msgType uint8

const (
	// msgRegister: a peer to the broker, with its local candidates.
	msgRegister msgType = 1
	// msgAnswer: the broker to a peer, with the peer's reflexive address
	// and, once the other role registered, the other peer's addresses.
	msgAnswer msgType = 2
	// msgRefused: the broker to a peer whose session it does not know.
	msgRefused msgType = 3
	// msgProbe: a peer to a candidate address of the other peer.
	msgProbe msgType = 4
	// msgAck: the answer to a probe, sent to the probe's source.
	msgAck msgType = 5
)

// peerInfo is what the broker knows of one role of a session.
type peerInfo struct {
	// reflexive is the peer's address as the broker saw it.
	reflexive netip.AddrPort
	// local are the addresses the peer reported itself.
	local []netip.AddrPort
}

// message is a decoded message; which fields count depends on typ.
type message struct {
	typ     msgType
	session relay.SessionID
	// role is the sender's, except in an answer or refusal, where it is
	// the role of the peer addressed.
	role relay.Role
	// local: msgRegister's candidates.
	local []netip.AddrPort
	// reflexive: msgAnswer's address the broker saw the peer at.
	reflexive netip.AddrPort
	// other: msgAnswer's other peer, nil until it registered.
	other *peerInfo
	// tx: msgProbe's and msgAck's transaction, which the ack echoes.
	tx uint64
}

func appendAddr(b []byte, a netip.AddrPort) []byte {
	ip := a.Addr().As16()
	b = append(b, ip[:]...)
	return binary.BigEndian.AppendUint16(b, a.Port())
}

func appendAddrs(b []byte, as []netip.AddrPort) []byte {
	b = append(b, byte(len(as)))
	for _, a := range as {
		b = appendAddr(b, a)
	}
	return b
}

// appendTo appends m's wire form to b.
func (m message) appendTo(b []byte) []byte {
	b = append(b, 0x00)
	b = append(b, msgMagic[:]...)
	b = append(b, msgVersion, byte(m.typ))
	b = append(b, m.session[:]...)
	b = append(b, byte(m.role))
	switch m.typ {
	case msgRegister:
		b = appendAddrs(b, m.local)
	case msgAnswer:
		b = appendAddr(b, m.reflexive)
		if m.other == nil {
			return append(b, 0)
		}
		b = append(b, 1)
		b = appendAddr(b, m.other.reflexive)
		b = appendAddrs(b, m.other.local)
	case msgProbe, msgAck:
		b = binary.BigEndian.AppendUint64(b, m.tx)
	}
	return b
}

// reader consumes a message body, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = fmt.Errorf("%w: truncated", errMalformed)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) addr() netip.AddrPort {
	b := r.take(addrLen)
	if b == nil {
		return netip.AddrPort{}
	}
	a := netip.AddrFrom16([16]byte(b[:16])).Unmap()
	if !a.IsValid() || a.IsUnspecified() {
		r.err = fmt.Errorf("%w: unspecified address", errMalformed)
	}
	return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[16:]))
}

func (r *reader) addrs() []netip.AddrPort {
	n := r.take(1)
	if n == nil {
		return nil
	}
	if int(n[0]) > maxCandidates {
		r.err = fmt.Errorf("%w: %d candidates, at most %d", errMalformed, n[0], maxCandidates)
		return nil
	}
	var out []netip.AddrPort
	for range int(n[0]) {
		out = append(out, r.addr())
	}
	return out
}

// parseMessage decodes a message. It is strict: exactly what appendTo
// writes parses, so that nothing else can register a peer or pass for a
// probe.
func parseMessage(b []byte) (message, error) {
	if len(b) < headerLen {
		return message{}, fmt.Errorf("%w: %d bytes, want at least %d", errMalformed, len(b), headerLen)
	}
	if b[0] != 0x00 || [4]byte(b[1:5]) != msgMagic {
		return message{}, fmt.Errorf("%w: bad magic", errMalformed)
	}
	if b[5] != msgVersion {
		return message{}, fmt.Errorf("%w: version %d, want %d", errMalformed, b[5], msgVersion)
	}
	m := message{typ: msgType(b[6]), session: relay.SessionID(b[7:23]), role: relay.Role(b[23])}
	if m.role != relay.Agent && m.role != relay.Viewer {
		return message{}, fmt.Errorf("%w: role %d", errMalformed, b[23])
	}
	r := &reader{b: b[headerLen:]}
	switch m.typ {
	case msgRegister:
		m.local = r.addrs()
	case msgAnswer:
		m.reflexive = r.addr()
		switch has := r.take(1); {
		case has == nil:
		case has[0] == 1:
			m.other = &peerInfo{reflexive: r.addr(), local: r.addrs()}
		case has[0] != 0:
			r.err = fmt.Errorf("%w: peer flag %d", errMalformed, has[0])
		}
	case msgRefused:
	case msgProbe, msgAck:
		if tx := r.take(8); tx != nil {
			m.tx = binary.BigEndian.Uint64(tx)
		}
	default:
		return message{}, fmt.Errorf("%w: type %d", errMalformed, m.typ)
	}
	if r.err != nil {
		return message{}, r.err
	}
	if len(r.b) != 0 {
		return message{}, fmt.Errorf("%w: %d trailing bytes", errMalformed, len(r.b))
	}
	return m, nil
}
