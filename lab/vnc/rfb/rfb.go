// Package rfb is the lab's VNC client: the Remote Framebuffer protocol of
// RFC 6143 from the viewer's side, enough to measure a real VNC server. It
// owns the handshake (protocol versions 3.3, 3.7 and 3.8; security types
// None and VNC Authentication), the client's messages (SetPixelFormat,
// SetEncodings, FramebufferUpdateRequest) and the reading of the server's
// messages into a framebuffer, decoding Raw, CopyRect, Hextile and ZRLE
// rectangles with the codec lab's decoders (agent/codec/hextile,
// agent/codec/zrle).
//
// The client always asks for the pixel format the codec lab assumes: 32
// bits per pixel, depth 24, little-endian, true colour, 8 bits a channel
// at shifts 16, 8 and 0, so that a pixel arrives as B, G, R, 0 and is
// stored as a codec.Frame's 0x00RRGGBB.
//
// Every length and size read from the server is checked before it is used
// (rectangles inside the framebuffer, a bounded framebuffer, text read
// without allocating what the server claims), so a broken or hostile
// server makes an error, never a panic or a huge allocation: FuzzClient
// holds it to that.
package rfb

import (
	"bufio"
	"bytes"
	"crypto/des"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/hextile"
	"github.com/nuvirahub/latencylab/agent/codec/zrle"
)

// Encoding numbers (RFC 6143 section 7.7).
const (
	EncodingRaw      int32 = 0
	EncodingCopyRect int32 = 1
	EncodingHextile        = hextile.EncodingType
	EncodingZRLE           = zrle.EncodingType
)

// Security types (RFC 6143 section 7.2).
const (
	SecurityNone    = 1
	SecurityVNCAuth = 2
)

// Message types of the server (RFC 6143 section 7.6).
const (
	MsgFramebufferUpdate   = 0
	MsgSetColourMapEntries = 1
	MsgBell                = 2
	MsgServerCutText       = 3
)

// DefaultMaxPixels bounds the framebuffer a server may announce when
// Config.MaxPixels is zero: 4096 x 4096, 64 MB of pixels.
const DefaultMaxPixels = 4096 * 4096

// maxText bounds the server's name and a cut text the client keeps; longer
// ones are read and dropped (a cut text) or refused (a name).
const maxText = 1 << 16

// Errors the client returns, wrapped with detail.
var (
	// ErrProtocol: the server sent something RFC 6143 does not allow, or
	// that this client does not speak.
	ErrProtocol = errors.New("rfb: protocol error")
	// ErrAuth: the server refused the connection or its authentication.
	ErrAuth = errors.New("rfb: authentication failed")
)

// Config is what a client asks for. The zero value connects without a
// password and asks for Raw only.
type Config struct {
	// Password is for VNC Authentication, used when the server offers
	// no None; only its first 8 bytes count (RFC 6143 section 7.2.2).
	Password string
	// Encodings are sent in SetEncodings, in order of preference; Raw is
	// always understood. Only Raw, CopyRect, Hextile and ZRLE may be
	// listed.
	Encodings []int32
	// MaxPixels bounds the framebuffer's width times height (0:
	// DefaultMaxPixels).
	MaxPixels int
}

// PixelFormat is the one the client asks for (see the package comment),
// in the 16 bytes of RFC 6143 section 7.4.
var PixelFormat = [16]byte{32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0, 0, 0, 0}

// Client is one connection to a server, after the handshake. It is not
// safe for concurrent use, except that Request may be called while another
// goroutine is in ReadMessage (they use the two directions).
type Client struct {
	r   *countingReader
	br  *bufio.Reader
	w   io.Writer
	fb  *codec.Frame
	zr  *zrle.Decoder
	buf bytes.Buffer // a ZRLE rectangle's data
	row []byte       // a Raw row
	// Name is the desktop's name from ServerInit.
	Name string
	// Version is the protocol version agreed, "3.8" for instance.
	Version string
	// Security is the security type used.
	Security int
}

// countingReader counts the bytes the server sent.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Handshake runs the protocol's opening over conn (RFC 6143 sections 7.1
// to 7.3), then sets the pixel format and the encodings: on success the
// client is ready for Request.
func Handshake(conn io.ReadWriter, cfg Config) (*Client, error) {
	for _, e := range cfg.Encodings {
		switch e {
		case EncodingRaw, EncodingCopyRect, EncodingHextile, EncodingZRLE:
		default:
			return nil, fmt.Errorf("rfb: encoding %d: this client decodes only Raw (0), CopyRect (1), Hextile (5) and ZRLE (16)", e)
		}
	}
	maxPixels := cfg.MaxPixels
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	cr := &countingReader{r: conn}
	c := &Client{r: cr, br: bufio.NewReaderSize(cr, 64<<10), w: conn, zr: zrle.NewDecoder()}

	// 7.1.1 ProtocolVersion.
	var ver [12]byte
	if _, err := io.ReadFull(c.br, ver[:]); err != nil {
		return nil, fmt.Errorf("rfb: reading the server's version: %w", err)
	}
	major, minor, ok := parseVersion(ver)
	if !ok {
		return nil, fmt.Errorf("%w: not an RFB server: version %q", ErrProtocol, ver[:])
	}
	if major < 3 || (major == 3 && minor < 3) {
		return nil, fmt.Errorf("%w: server speaks RFB %d.%d, older than 3.3", ErrProtocol, major, minor)
	}
	// Versions other than 3.3, 3.7 and 3.8 are to be taken as 3.3 (section
	// 7.1.1); anything newer than 3.8 gets 3.8.
	switch {
	case major > 3 || minor >= 8:
		minor = 8
	case minor == 7:
	default:
		minor = 3
	}
	c.Version = "3." + strconv.Itoa(minor)
	if _, err := fmt.Fprintf(c.w, "RFB 003.%03d\n", minor); err != nil {
		return nil, fmt.Errorf("rfb: sending the version: %w", err)
	}

	// 7.1.2 Security.
	if err := c.security(minor, cfg.Password); err != nil {
		return nil, err
	}

	// 7.3.1 ClientInit: shared, so that a measurement does not throw a
	// user's own viewer off the server.
	if _, err := c.w.Write([]byte{1}); err != nil {
		return nil, fmt.Errorf("rfb: ClientInit: %w", err)
	}
	// 7.3.2 ServerInit.
	var si [24]byte
	if _, err := io.ReadFull(c.br, si[:]); err != nil {
		return nil, fmt.Errorf("rfb: ServerInit: %w", err)
	}
	w, h := int(binary.BigEndian.Uint16(si[0:])), int(binary.BigEndian.Uint16(si[2:]))
	if w == 0 || h == 0 || w*h > maxPixels {
		return nil, fmt.Errorf("%w: framebuffer %dx%d (at most %d pixels, none empty)", ErrProtocol, w, h, maxPixels)
	}
	name, err := c.readText(binary.BigEndian.Uint32(si[20:]), "desktop name")
	if err != nil {
		return nil, err
	}
	c.Name = name
	c.fb = codec.NewFrame(w, h)

	// 7.5.1 SetPixelFormat, 7.5.2 SetEncodings.
	msg := append([]byte{0, 0, 0, 0}, PixelFormat[:]...)
	msg = append(msg, 2, 0)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(cfg.Encodings)))
	for _, e := range cfg.Encodings {
		msg = binary.BigEndian.AppendUint32(msg, uint32(e))
	}
	if _, err := c.w.Write(msg); err != nil {
		return nil, fmt.Errorf("rfb: SetPixelFormat and SetEncodings: %w", err)
	}
	return c, nil
}

// parseVersion reads "RFB xxx.yyy\n".
func parseVersion(v [12]byte) (major, minor int, ok bool) {
	if string(v[:4]) != "RFB " || v[7] != '.' || v[11] != '\n' {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(string(v[4:7]))
	minor, err2 := strconv.Atoi(string(v[8:11]))
	return major, minor, err1 == nil && err2 == nil && major >= 0 && minor >= 0
}

// security chooses and runs the security type (sections 7.1.2, 7.1.3,
// 7.2), for version 3.minor.
func (c *Client) security(minor int, password string) error {
	var offered []byte
	if minor == 3 {
		// 3.3: the server decides, a U32.
		var b [4]byte
		if _, err := io.ReadFull(c.br, b[:]); err != nil {
			return fmt.Errorf("rfb: security type: %w", err)
		}
		t := binary.BigEndian.Uint32(b[:])
		if t == 0 {
			return c.failure("connection refused")
		}
		if t > 255 {
			return fmt.Errorf("%w: security type %d", ErrProtocol, t)
		}
		offered = []byte{byte(t)}
	} else {
		n, err := c.br.ReadByte()
		if err != nil {
			return fmt.Errorf("rfb: number of security types: %w", err)
		}
		if n == 0 {
			return c.failure("connection refused")
		}
		offered = make([]byte, n)
		if _, err := io.ReadFull(c.br, offered); err != nil {
			return fmt.Errorf("rfb: security types: %w", err)
		}
	}
	chosen := 0
	for _, t := range offered {
		if t == SecurityNone {
			chosen = SecurityNone
			break
		}
		if t == SecurityVNCAuth {
			chosen = SecurityVNCAuth
		}
	}
	if chosen == 0 {
		return fmt.Errorf("%w: the server offers security types %v, this client speaks None (1) and VNC Authentication (2)", ErrProtocol, offered)
	}
	c.Security = chosen
	if minor != 3 {
		if _, err := c.w.Write([]byte{byte(chosen)}); err != nil {
			return fmt.Errorf("rfb: choosing security: %w", err)
		}
	}
	if chosen == SecurityVNCAuth {
		var challenge [16]byte
		if _, err := io.ReadFull(c.br, challenge[:]); err != nil {
			return fmt.Errorf("rfb: VNC Authentication challenge: %w", err)
		}
		resp := VNCAuthResponse(password, challenge)
		if _, err := c.w.Write(resp[:]); err != nil {
			return fmt.Errorf("rfb: VNC Authentication response: %w", err)
		}
	} else if minor < 8 {
		return nil // before 3.8, None has no SecurityResult
	}
	// 7.1.3 SecurityResult.
	var b [4]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return fmt.Errorf("rfb: SecurityResult: %w", err)
	}
	if binary.BigEndian.Uint32(b[:]) != 0 {
		if minor == 8 {
			return c.failure("security handshake failed")
		}
		return fmt.Errorf("%w: security handshake failed", ErrAuth)
	}
	return nil
}

// failure reads the reason string that follows a refusal.
func (c *Client) failure(what string) error {
	var b [4]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return fmt.Errorf("%w: %s (no reason: %w)", ErrAuth, what, err)
	}
	reason, err := c.readText(binary.BigEndian.Uint32(b[:]), "reason")
	if err != nil {
		return fmt.Errorf("%w: %s (%w)", ErrAuth, what, err)
	}
	return fmt.Errorf("%w: %s: %q", ErrAuth, what, reason)
}

// readText reads a string of n bytes the server announced, refusing one
// longer than maxText.
func (c *Client) readText(n uint32, what string) (string, error) {
	if n > maxText {
		return "", fmt.Errorf("%w: %s of %d bytes (at most %d)", ErrProtocol, what, n, maxText)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.br, b); err != nil {
		return "", fmt.Errorf("rfb: %s: %w", what, err)
	}
	return string(b), nil
}

// VNCAuthResponse is the answer to a VNC Authentication challenge (RFC
// 6143 section 7.2.2): the challenge encrypted with DES, keyed by the
// password's first 8 bytes (padded with zeros), each byte's bits in
// reverse order as every VNC implementation has it (the RFC's errata).
func VNCAuthResponse(password string, challenge [16]byte) [16]byte {
	block := vncCipher(password)
	var out [16]byte
	block.Encrypt(out[:8], challenge[:8])
	block.Encrypt(out[8:], challenge[8:])
	return out
}

func vncCipher(password string) interface{ Encrypt(dst, src []byte) } {
	var key [8]byte
	copy(key[:], password)
	for i, b := range key {
		key[i] = bits.Reverse8(b)
	}
	block, err := des.NewCipher(key[:])
	if err != nil {
		panic(err) // an 8-byte key is always valid
	}
	return block
}

// PasswordFile is the contents of a VNC password file (vncpasswd's and
// x11vnc -storepasswd's format, which x11vnc -rfbauth and Xvnc
// -PasswordFile read): the password's 8 bytes encrypted with DES under
// the fixed key every VNC implementation uses for it, whose bytes are bit
// reversed for standard DES as a password's are for the challenge.
func PasswordFile(password string) []byte {
	fixed := string([]byte{23, 82, 107, 6, 35, 78, 88, 7})
	var plain, out [8]byte
	copy(plain[:], password)
	vncCipher(fixed).Encrypt(out[:], plain[:])
	return out[:]
}

// Size is the framebuffer's width and height.
func (c *Client) Size() (w, h int) { return c.fb.W, c.fb.H }

// Framebuffer is the client's picture of the server's screen, as the
// updates read so far left it. It is the client's own: it changes at the
// next ReadMessage.
func (c *Client) Framebuffer() *codec.Frame { return c.fb }

// Received is the number of bytes the server has sent so far.
func (c *Client) Received() int64 { return c.r.n }

// Request asks for an update of the whole framebuffer (section 7.5.3);
// incremental asks only for what changed since the last one.
func (c *Client) Request(incremental bool) error {
	msg := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if incremental {
		msg[1] = 1
	}
	binary.BigEndian.PutUint16(msg[6:], uint16(c.fb.W))
	binary.BigEndian.PutUint16(msg[8:], uint16(c.fb.H))
	if _, err := c.w.Write(msg); err != nil {
		return fmt.Errorf("rfb: FramebufferUpdateRequest: %w", err)
	}
	return nil
}

// Rect is one rectangle of an update as it came: where, its encoding, and
// the bytes it took on the wire (its 12-byte header included).
type Rect struct {
	X, Y, W, H int
	Encoding   int32
	Bytes      int64
}

// Message is one message of the server. For a FramebufferUpdate, Rects
// lists its rectangles and the framebuffer holds the result.
type Message struct {
	// Type is the message type (MsgFramebufferUpdate and the others).
	Type int
	// Rects are a FramebufferUpdate's rectangles.
	Rects []Rect
	// Bytes is the message's size on the wire.
	Bytes int64
	// Text is a ServerCutText's text (cut to 64 KB).
	Text string
}

// ReadMessage reads the server's next message and applies it: a
// FramebufferUpdate's rectangles are decoded into the framebuffer before it
// returns.
func (c *Client) ReadMessage() (Message, error) {
	start := c.r.n - int64(c.br.Buffered())
	t, err := c.br.ReadByte()
	if err != nil {
		return Message{}, fmt.Errorf("rfb: message type: %w", err)
	}
	m := Message{Type: int(t)}
	switch t {
	case MsgFramebufferUpdate:
		err = c.update(&m)
	case MsgSetColourMapEntries:
		// The client asked for true colour; a server may still send one.
		var b [5]byte
		if _, err = io.ReadFull(c.br, b[:]); err == nil {
			_, err = c.br.Discard(int(binary.BigEndian.Uint16(b[3:])) * 6)
		}
	case MsgBell:
	case MsgServerCutText:
		var b [7]byte
		if _, err = io.ReadFull(c.br, b[:]); err == nil {
			n := int64(binary.BigEndian.Uint32(b[3:]))
			var text bytes.Buffer
			_, err = io.CopyN(&text, c.br, min(n, maxText))
			if err == nil && n > maxText {
				_, err = io.CopyN(io.Discard, c.br, n-maxText)
			}
			m.Text = text.String()
		}
	default:
		return m, fmt.Errorf("%w: server message type %d", ErrProtocol, t)
	}
	if err != nil {
		return m, fmt.Errorf("rfb: server message %d: %w", t, err)
	}
	m.Bytes = c.r.n - int64(c.br.Buffered()) - start
	return m, nil
}

// update reads a FramebufferUpdate after its type (section 7.6.1).
func (c *Client) update(m *Message) error {
	var b [3]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return err
	}
	n := int(binary.BigEndian.Uint16(b[1:]))
	m.Rects = make([]Rect, 0, n)
	for i := range n {
		before := c.r.n - int64(c.br.Buffered())
		var h [12]byte
		if _, err := io.ReadFull(c.br, h[:]); err != nil {
			return fmt.Errorf("rectangle %d: %w", i, err)
		}
		r := Rect{X: int(binary.BigEndian.Uint16(h[0:])), Y: int(binary.BigEndian.Uint16(h[2:])),
			W: int(binary.BigEndian.Uint16(h[4:])), H: int(binary.BigEndian.Uint16(h[6:])),
			Encoding: int32(binary.BigEndian.Uint32(h[8:]))}
		if r.X+r.W > c.fb.W || r.Y+r.H > c.fb.H {
			return fmt.Errorf("%w: rectangle %d at %d,%d of %dx%d outside the %dx%d framebuffer",
				ErrProtocol, i, r.X, r.Y, r.W, r.H, c.fb.W, c.fb.H)
		}
		if err := c.rect(r); err != nil {
			return fmt.Errorf("rectangle %d (%s at %d,%d of %dx%d): %w", i, EncodingName(r.Encoding), r.X, r.Y, r.W, r.H, err)
		}
		r.Bytes = c.r.n - int64(c.br.Buffered()) - before
		m.Rects = append(m.Rects, r)
	}
	return nil
}

// rect decodes one rectangle's data.
func (c *Client) rect(r Rect) error {
	fb := c.fb
	switch r.Encoding {
	case EncodingRaw:
		n := r.W * hextile.BytesPerPixel
		if cap(c.row) < n {
			c.row = make([]byte, n)
		}
		row := c.row[:n]
		for y := r.Y; y < r.Y+r.H; y++ {
			if _, err := io.ReadFull(c.br, row); err != nil {
				return err
			}
			dst := fb.Pix[y*fb.W+r.X : y*fb.W+r.X+r.W]
			for x := range dst {
				dst[x] = binary.LittleEndian.Uint32(row[x*4:]) & 0x00FFFFFF
			}
		}
	case EncodingCopyRect:
		var b [4]byte
		if _, err := io.ReadFull(c.br, b[:]); err != nil {
			return err
		}
		sx, sy := int(binary.BigEndian.Uint16(b[0:])), int(binary.BigEndian.Uint16(b[2:]))
		if sx+r.W > fb.W || sy+r.H > fb.H {
			return fmt.Errorf("%w: CopyRect source %d,%d outside the framebuffer", ErrProtocol, sx, sy)
		}
		copyRect(fb, r, sx, sy)
	case EncodingHextile:
		if r.W == 0 || r.H == 0 {
			return nil // no tiles
		}
		return hextile.ReadRect(c.br, fb, r.X, r.Y, r.W, r.H)
	case EncodingZRLE:
		var b [4]byte
		if _, err := io.ReadFull(c.br, b[:]); err != nil {
			return err
		}
		c.buf.Reset()
		// Copied as it arrives, never allocated at the size claimed.
		if _, err := io.CopyN(&c.buf, c.br, int64(binary.BigEndian.Uint32(b[:]))); err != nil {
			return err
		}
		return c.zr.DecodeRect(fb, r.X, r.Y, r.W, r.H, c.buf.Bytes())
	default:
		return fmt.Errorf("%w: encoding %d was not asked for", ErrProtocol, r.Encoding)
	}
	return nil
}

// copyRect copies the w x h pixels at sx, sy to r's place; the two may
// overlap, so rows go in the order that reads each before it is written.
func copyRect(fb *codec.Frame, r Rect, sx, sy int) {
	rows := make([]int, r.H)
	for i := range rows {
		rows[i] = i
	}
	if sy < r.Y {
		for i := range rows {
			rows[i] = r.H - 1 - i
		}
	}
	for _, i := range rows {
		src := fb.Pix[(sy+i)*fb.W+sx : (sy+i)*fb.W+sx+r.W]
		dst := fb.Pix[(r.Y+i)*fb.W+r.X : (r.Y+i)*fb.W+r.X+r.W]
		copy(dst, src) // copy is memmove: a row that overlaps itself is safe
	}
}

// EncodingName names an encoding number: "zrle", "hextile", "raw",
// "copyrect", or the number.
func EncodingName(e int32) string {
	switch e {
	case EncodingRaw:
		return "raw"
	case EncodingCopyRect:
		return "copyrect"
	case EncodingHextile:
		return "hextile"
	case EncodingZRLE:
		return "zrle"
	}
	return strconv.Itoa(int(e))
}

// EncodingByName is EncodingName's inverse, for flags.
func EncodingByName(name string) (int32, error) {
	for _, e := range []int32{EncodingRaw, EncodingCopyRect, EncodingHextile, EncodingZRLE} {
		if EncodingName(e) == name {
			return e, nil
		}
	}
	return 0, fmt.Errorf("rfb: unknown encoding %q (raw, copyrect, hextile, zrle)", name)
}
