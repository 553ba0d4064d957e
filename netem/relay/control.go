package relay

import (
	"errors"
	"fmt"
)

// SessionID names a session between one agent and one viewer. The broker
// draws it at random and hands it to both peers; knowing it is what admits a
// peer to the relay, so it must be unguessable (128 random bits).
type SessionID [16]byte

// Role is a peer's side of a session.
type Role uint8

// The two roles of a session. The zero Role is invalid, so a control message
// with its role byte left at zero is rejected rather than read as a peer.
const (
	Agent  Role = 1
	Viewer Role = 2
)

// String implements fmt.Stringer.
func (r Role) String() string {
	switch r {
	case Agent:
		return "agent"
	case Viewer:
		return "viewer"
	default:
		return fmt.Sprintf("Role(%d)", uint8(r))
	}
}

// valid reports whether r is Agent or Viewer.
func (r Role) valid() bool { return r == Agent || r == Viewer }

// other is the role a datagram from r is forwarded to.
func (r Role) other() Role {
	if r == Agent {
		return Viewer
	}
	return Agent
}

// errMalformed is wrapped by the error for a control message that does not
// parse.
var errMalformed = errors.New("relay: malformed control message")

// Control message layout, 24 bytes:
//
//	0      controlByte (0x00)
//	1..4   magic
//	5      version
//	6      type (bind, bound, refused)
//	7..22  session
//	23     role
//
// A QUIC packet always has the fixed bit (0x40) set in its first byte (RFC
// 9000 section 17.2 and 17.3; version negotiation sets the long-header bit
// 0x80), so a datagram starting with 0x00 can never be one: the relay and
// the peers tell control messages from forwarded packets by that one byte,
// without state and without touching QUIC's bytes. The exception would be a
// peer greasing the fixed bit (RFC 9287), which quic-go does not do.
const (
	controlByte    = 0x00
	controlVersion = 1
	controlLen     = 1 + len(controlMagic) + 1 + 1 + len(SessionID{}) + 1
)

// controlMagic keeps a stray datagram that happens to start with 0x00 from
// being taken for a control message.
var controlMagic = [4]byte{'N', 'V', 'R', 'L'}

// msgType is a control message's type.
type msgType uint8

const (
	// msgBind asks the relay to bind the sender's address to a session's role.
	msgBind msgType = 1
	// msgBound confirms a bind.
	msgBound msgType = 2
	// msgRefused answers a bind for a session the relay does not know.
	msgRefused msgType = 3
)

// control is a decoded control message.
type control struct {
	typ     msgType
	session SessionID
	role    Role
}

// isControl reports whether a datagram is for the relay protocol rather than
// a QUIC packet to forward.
func isControl(b []byte) bool { return len(b) > 0 && b[0] == controlByte }

// appendTo appends m's wire form to b.
func (m control) appendTo(b []byte) []byte {
	b = append(b, controlByte)
	b = append(b, controlMagic[:]...)
	b = append(b, controlVersion, byte(m.typ))
	b = append(b, m.session[:]...)
	return append(b, byte(m.role))
}

// parseControl decodes a control message. It is strict, so that exactly the
// messages appendTo writes are accepted: anything else is a fault or an
// attack, and must not bind an address.
func parseControl(b []byte) (control, error) {
	if len(b) != controlLen {
		return control{}, fmt.Errorf("%w: %d bytes, want %d", errMalformed, len(b), controlLen)
	}
	if b[0] != controlByte {
		return control{}, fmt.Errorf("%w: first byte %#02x", errMalformed, b[0])
	}
	if [4]byte(b[1:5]) != controlMagic {
		return control{}, fmt.Errorf("%w: bad magic %x", errMalformed, b[1:5])
	}
	if b[5] != controlVersion {
		return control{}, fmt.Errorf("%w: version %d, want %d", errMalformed, b[5], controlVersion)
	}
	m := control{typ: msgType(b[6]), session: SessionID(b[7:23]), role: Role(b[23])}
	if m.typ < msgBind || m.typ > msgRefused {
		return control{}, fmt.Errorf("%w: type %d", errMalformed, m.typ)
	}
	if !m.role.valid() {
		return control{}, fmt.Errorf("%w: role %d", errMalformed, b[23])
	}
	return m, nil
}
