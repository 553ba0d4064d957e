package relay

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestControlRoundTrip(t *testing.T) {
	for _, typ := range []msgType{msgBind, msgBound, msgRefused} {
		for _, role := range []Role{Agent, Viewer} {
			m := control{typ: typ, session: sessionID(byte(typ)), role: role}
			b := m.appendTo(nil)
			require.Len(t, b, controlLen)
			require.True(t, isControl(b))
			got, err := parseControl(b)
			require.NoError(t, err)
			require.Equal(t, m, got)
		}
	}
}

func TestControlRejectsMalformed(t *testing.T) {
	good := control{typ: msgBind, session: sessionID(1), role: Agent}.appendTo(nil)
	cases := map[string]func([]byte) []byte{
		"empty":         func([]byte) []byte { return nil },
		"short":         func(b []byte) []byte { return b[:controlLen-1] },
		"trailing byte": func(b []byte) []byte { return append(b, 0) },
		"QUIC first":    func(b []byte) []byte { b[0] = 0x40; return b },
		"magic":         func(b []byte) []byte { b[2] ^= 1; return b },
		"version":       func(b []byte) []byte { b[5] = 2; return b },
		"type zero":     func(b []byte) []byte { b[6] = 0; return b },
		"type unknown":  func(b []byte) []byte { b[6] = 4; return b },
		"role zero":     func(b []byte) []byte { b[23] = 0; return b },
		"role unknown":  func(b []byte) []byte { b[23] = 3; return b },
	}
	for name, mangle := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parseControl(mangle(bytes.Clone(good)))
			require.ErrorIs(t, err, errMalformed)
		})
	}
}

// FuzzParseControl: the parser never panics, and accepts exactly what
// appendTo writes, so no other bytes can bind an address.
func FuzzParseControl(f *testing.F) {
	for _, typ := range []msgType{msgBind, msgBound, msgRefused} {
		f.Add(control{typ: typ, session: sessionID(3), role: Viewer}.appendTo(nil))
	}
	f.Add([]byte{})
	f.Add([]byte{0x00})
	f.Add([]byte{0xc0, 0, 0, 0, 1}) // a QUIC long header's start
	f.Add(append(control{typ: msgBind, role: Agent}.appendTo(nil), 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseControl(b)
		if err != nil {
			require.ErrorIs(t, err, errMalformed)
			return
		}
		require.Equal(t, b, m.appendTo(nil), "accepted bytes that appendTo does not write")
		require.True(t, isControl(b))
	})
}
