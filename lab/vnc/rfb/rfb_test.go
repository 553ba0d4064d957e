package rfb

import (
	"bytes"
	"crypto/des"
	"encoding/binary"
	"io"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/frames"
	"github.com/nuvirahub/latencylab/agent/codec/hextile"
	"github.com/nuvirahub/latencylab/agent/codec/zrle"
)

// server is a scripted server: what it sends is prepared in out, what the
// client sends is collected in in.
type server struct {
	out *bytes.Reader
	in  bytes.Buffer
}

func (s *server) Read(p []byte) (int, error)  { return s.out.Read(p) }
func (s *server) Write(p []byte) (int, error) { return s.in.Write(p) }

func u16(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func u32(b []byte, v int) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// serverInit is a ServerInit for a w x h desktop named name.
func serverInit(w, h int, name string) []byte {
	b := u16(u16(nil, w), h)
	b = append(b, make([]byte, 16)...) // the server's own pixel format: the client sets its own
	b = u32(b, len(name))
	return append(b, name...)
}

// rectHeader is a rectangle's header.
func rectHeader(x, y, w, h int, enc int32) []byte {
	return u32(u16(u16(u16(u16(nil, x), y), w), h), int(enc))
}

// The 3.8 handshake with VNC Authentication, the client's messages, and an
// update of every encoding, each checked against the frame the codec lab
// encoded: the framebuffer ends up exactly that frame.
func TestHandshakeAndUpdate(t *testing.T) {
	const w, h = 96, 64
	want := frames.Keyframe(frames.Gradient, w, h, 3)
	// Rows 0-15 raw, 16-31 Hextile, 32-63 ZRLE, then a CopyRect that
	// moves the top-left 20x10 to 50,40 (and the frame with it).
	challenge := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	s := []byte("RFB 003.008\n")
	s = append(s, 2, 16, SecurityVNCAuth) // two types offered: 16 (Tight) and VNC auth
	s = append(s, challenge[:]...)
	s = u32(s, 0) // SecurityResult: OK
	s = append(s, serverInit(w, h, "lab")...)

	upd := []byte{MsgFramebufferUpdate, 0}
	upd = u16(upd, 4)
	upd = append(upd, rectHeader(0, 0, w, 16, EncodingRaw)...)
	for _, p := range want.Pix[:w*16] {
		upd = binary.LittleEndian.AppendUint32(upd, p|0xAB000000) // the padding byte is ignored
	}
	hx, err := hextile.NewEncoder().Encode(nil, nil, want, []codec.Rect{{X: 0, Y: 16, W: w, H: 16}})
	require.NoError(t, err)
	upd = append(upd, hx[2:]...) // without the lab's rectangle count
	zr, err := zrle.NewEncoder().Encode(nil, nil, want, []codec.Rect{{X: 0, Y: 32, W: w, H: 32}})
	require.NoError(t, err)
	upd = append(upd, zr[2:]...)
	upd = append(upd, rectHeader(50, 40, 20, 10, EncodingCopyRect)...)
	upd = u16(u16(upd, 0), 0)
	s = append(s, upd...)
	s = append(s, MsgBell, MsgServerCutText, 0, 0, 0)
	s = u32(s, 2)
	s = append(s, "hi"...)

	srv := &server{out: bytes.NewReader(s)}
	c, err := Handshake(srv, Config{Password: "secret", Encodings: []int32{EncodingZRLE, EncodingHextile, EncodingCopyRect}})
	require.NoError(t, err)
	require.Equal(t, "3.8", c.Version)
	require.Equal(t, SecurityVNCAuth, c.Security)
	require.Equal(t, "lab", c.Name)
	w2, h2 := c.Size()
	require.Equal(t, [2]int{w, h}, [2]int{w2, h2})

	// What the client said: version, security type, the DES answer with
	// bit-reversed key bytes, shared, SetPixelFormat, SetEncodings.
	var key [8]byte
	copy(key[:], "secret")
	for i := range key {
		key[i] = bits.Reverse8(key[i])
	}
	block, err := des.NewCipher(key[:])
	require.NoError(t, err)
	var answer [16]byte
	block.Encrypt(answer[:8], challenge[:8])
	block.Encrypt(answer[8:], challenge[8:])
	said := []byte("RFB 003.008\n")
	said = append(said, SecurityVNCAuth)
	said = append(said, answer[:]...)
	said = append(said, 1, 0, 0, 0, 0)
	said = append(said, PixelFormat[:]...)
	said = append(said, 2, 0, 0, 3, 0, 0, 0, 16, 0, 0, 0, 5, 0, 0, 0, 1)
	require.Equal(t, said, srv.in.Bytes())

	require.NoError(t, c.Request(true))
	require.Equal(t, []byte{3, 1, 0, 0, 0, 0, 0, w, 0, h}, srv.in.Bytes()[len(said):])

	m, err := c.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, MsgFramebufferUpdate, m.Type)
	require.Len(t, m.Rects, 4)
	require.Equal(t, int64(len(upd)), m.Bytes)
	var sum int64
	for _, r := range m.Rects {
		sum += r.Bytes
	}
	require.Equal(t, int64(len(upd)-4), sum, "the rectangles' bytes add up to the update's, less its 4-byte header")
	require.Equal(t, int64(12+w*16*4), m.Rects[0].Bytes)
	require.Equal(t, int64(len(hx)-2), m.Rects[1].Bytes)
	require.Equal(t, int64(len(zr)-2), m.Rects[2].Bytes)
	require.Equal(t, int64(16), m.Rects[3].Bytes)

	moved := want.Clone()
	for y := range 10 {
		copy(moved.Pix[(40+y)*w+50:(40+y)*w+70], want.Pix[y*w:y*w+20])
	}
	require.Equal(t, moved.Pix, c.Framebuffer().Pix)

	m, err = c.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, MsgBell, m.Type)
	m, err = c.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "hi", m.Text)
	require.Equal(t, int64(len(s)), c.Received())
	_, err = c.ReadMessage()
	require.ErrorIs(t, err, io.EOF)
}

// Version 3.3: the server decides the security type, and None has no
// SecurityResult. A server newer than 3.8 is answered with 3.8, a refusal
// carries its reason.
func TestVersions(t *testing.T) {
	s := append([]byte("RFB 003.003\n"), 0, 0, 0, SecurityNone)
	s = append(s, serverInit(4, 4, "")...)
	srv := &server{out: bytes.NewReader(s)}
	c, err := Handshake(srv, Config{})
	require.NoError(t, err)
	require.Equal(t, "3.3", c.Version)
	require.Equal(t, "RFB 003.003\n\x01", srv.in.String()[:13])

	s = append([]byte("RFB 004.001\n"), 0)
	s = u32(s, 6)
	s = append(s, "no way"...)
	srv = &server{out: bytes.NewReader(s)}
	_, err = Handshake(srv, Config{})
	require.ErrorIs(t, err, ErrAuth)
	require.ErrorContains(t, err, `"no way"`)
	require.Equal(t, "RFB 003.008\n", srv.in.String())

	_, err = Handshake(&server{out: bytes.NewReader([]byte("SSH-2.0-x\r\n\n"))}, Config{})
	require.ErrorIs(t, err, ErrProtocol)

	s = append([]byte("RFB 003.008\n"), 1, SecurityNone)
	s = u32(s, 0)
	s = append(s, serverInit(5000, 5000, "")...)
	_, err = Handshake(&server{out: bytes.NewReader(s)}, Config{})
	require.ErrorIs(t, err, ErrProtocol, "a framebuffer over the bound")

	_, err = Handshake(&server{out: bytes.NewReader(nil)}, Config{Encodings: []int32{7}})
	require.ErrorContains(t, err, "encoding 7")
}

// A rectangle outside the framebuffer, or of an encoding not asked for, is
// a protocol error.
func TestUpdateRejects(t *testing.T) {
	for name, rect := range map[string][]byte{
		"outside":               rectHeader(3, 0, 2, 1, EncodingRaw),
		"outside below":         rectHeader(0, 3, 1, 2, EncodingRaw),
		"encoding":              rectHeader(0, 0, 1, 1, 7),
		"copyrect":              append(rectHeader(0, 0, 2, 2, EncodingCopyRect), 0, 3, 0, 3),
		"copyrect source right": append(rectHeader(0, 0, 2, 2, EncodingCopyRect), 0, 3, 0, 0),
		"copyrect source below": append(rectHeader(0, 0, 2, 2, EncodingCopyRect), 0, 0, 0, 3),
	} {
		s := append([]byte("RFB 003.008\n"), 1, SecurityNone)
		s = u32(s, 0)
		s = append(s, serverInit(4, 4, "")...)
		s = append(s, MsgFramebufferUpdate, 0, 0, 1)
		s = append(s, rect...)
		c, err := Handshake(&server{out: bytes.NewReader(s)}, Config{})
		require.NoError(t, err)
		_, err = c.ReadMessage()
		require.ErrorIs(t, err, ErrProtocol, name)
	}
}

// The password file is the one vncpasswd writes: "secret" encrypted under
// the fixed key gives these bytes (checked against Debian's vncpasswd).
func TestPasswordFile(t *testing.T) {
	// printf 'secret\n' | vncpasswd -f | od -An -tx1
	require.Equal(t, []byte{0x2e, 0x2d, 0xbf, 0x57, 0x6e, 0xb0, 0x6c, 0x9e}, PasswordFile("secret"))
	require.NotEqual(t, PasswordFile("secret"), PasswordFile("secreT"))
	require.Equal(t, PasswordFile("12345678"), PasswordFile("123456789"), "only 8 bytes count")
}

// FuzzClient feeds arbitrary server bytes to the handshake and the message
// reader: every outcome is a result or an error, never a panic, a hang or
// a huge allocation.
func FuzzClient(f *testing.F) {
	base := append([]byte("RFB 003.008\n"), 1, SecurityNone)
	base = u32(base, 0)
	base = append(base, serverInit(40, 30, "x")...)
	f.Add(base)
	hx, _ := hextile.NewEncoder().Encode(nil, nil, frames.Keyframe(frames.Noise, 40, 30, 1), []codec.Rect{{W: 40, H: 30}})
	f.Add(append(append(append([]byte(nil), base...), MsgFramebufferUpdate, 0), hx...))
	zr, _ := zrle.NewEncoder().Encode(nil, nil, frames.Keyframe(frames.Gradient, 40, 30, 1), []codec.Rect{{W: 40, H: 30}})
	f.Add(append(append(append([]byte(nil), base...), MsgFramebufferUpdate, 0), zr...))
	f.Add(append(append(append([]byte(nil), base...), MsgServerCutText, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF), "abc"...))
	f.Add(append([]byte("RFB 003.003\n"), 0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0, 0, 0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Handshake(&server{out: bytes.NewReader(data)}, Config{MaxPixels: 128 * 128,
			Encodings: []int32{EncodingZRLE, EncodingHextile, EncodingCopyRect}})
		if err != nil {
			return
		}
		for range 64 {
			m, err := c.ReadMessage()
			if err != nil {
				return
			}
			_ = m
			fb := c.Framebuffer()
			for _, p := range fb.Pix {
				if p>>24 != 0 {
					t.Fatalf("pixel %#x has its padding byte set", p)
				}
			}
		}
	})
}
