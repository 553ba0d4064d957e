package zrle

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// errShort is what the decoder's input feed returns when the zlib stream
// needs bytes that have not been received: the rectangle's zlib data is
// truncated.
var errShort = errors.New("zrle: zlib data truncated")

// feed is the concatenation of all the zlib data the decoder has been
// given. It implements io.ByteReader so that compress/flate reads exactly
// the bytes it needs and never reads ahead into data not yet received.
type feed struct {
	buf []byte
	off int
}

func (f *feed) push(b []byte) {
	if f.off > 0 {
		f.buf = append(f.buf[:0], f.buf[f.off:]...)
		f.off = 0
	}
	f.buf = append(f.buf, b...)
}

func (f *feed) Read(p []byte) (int, error) {
	if f.off == len(f.buf) {
		return 0, errShort
	}
	n := copy(p, f.buf[f.off:])
	f.off += n
	return n, nil
}

func (f *feed) ReadByte() (byte, error) {
	if f.off == len(f.buf) {
		return 0, errShort
	}
	f.off++
	return f.buf[f.off-1], nil
}

// Decoder is a ZRLE decoder for one connection. It implements
// codec.Decoder. It is stateful (the connection's zlib stream, section
// 7.7.6), so it must be given the frames of one Encoder in order.
type Decoder struct {
	in  feed
	zr  io.ReadCloser
	br  *bufio.Reader // over zr; only reads decompressed bytes already inflatable
	err error         // sticky: a broken zlib stream cannot be resynchronised
	pal [maxRLEPalette]uint32
	row []byte
}

// NewDecoder returns a decoder for a new connection.
func NewDecoder() *Decoder { return &Decoder{} }

// Decode applies one encoded frame to a copy of prev (a black w x h frame
// when prev is nil) and returns the result. Malformed input is an error,
// never a panic; after an error the decoder is unusable, since the zlib
// stream is shared by every later frame.
func (d *Decoder) Decode(prev *codec.Frame, w, h int, data []byte) (*codec.Frame, error) {
	if d.err != nil {
		return nil, d.err
	}
	if w < 0 || h < 0 || w > 0xFFFF || h > 0xFFFF {
		return nil, fmt.Errorf("zrle: invalid frame size %dx%d", w, h)
	}
	var out *codec.Frame
	if prev == nil {
		out = codec.NewFrame(w, h)
	} else {
		if prev.W != w || prev.H != h || len(prev.Pix) != w*h {
			return nil, fmt.Errorf("zrle: previous frame is %dx%d, want %dx%d", prev.W, prev.H, w, h)
		}
		out = prev.Clone()
	}
	if err := d.decode(out, data); err != nil {
		d.err = err
		return nil, err
	}
	return out, nil
}

// DecodeRect decodes one ZRLE rectangle at x, y of w x h pixels, whose zlib
// data (the bytes after its length, section 7.7.6) is zdata, straight into
// out: what an RFB client does with each ZRLE rectangle of a
// FramebufferUpdate as it reads them off its connection, where other
// encodings may come between. The rectangles of one connection must come
// in order, as for Decode; an error is sticky in the same way.
func (d *Decoder) DecodeRect(out *codec.Frame, x, y, w, h int, zdata []byte) error {
	if d.err != nil {
		return d.err
	}
	if out == nil || len(out.Pix) != out.W*out.H || x < 0 || y < 0 || w < 0 || h < 0 || x+w > out.W || y+h > out.H {
		return fmt.Errorf("zrle: rectangle (%d,%d %dx%d) outside the frame", x, y, w, h)
	}
	d.in.push(zdata)
	if w == 0 || h == 0 {
		return nil
	}
	if err := d.inflate(out, x, y, w, h); err != nil {
		d.err = fmt.Errorf("zrle: rectangle at %d,%d: %w", x, y, err)
		return d.err
	}
	return nil
}

// inflate decodes one rectangle whose zlib data has been pushed.
func (d *Decoder) inflate(out *codec.Frame, x, y, w, h int) error {
	if d.zr == nil {
		// The stream's zlib header arrives with the first rectangle.
		zr, err := zlib.NewReader(&d.in)
		if err != nil {
			return err
		}
		d.zr = zr
		d.br = bufio.NewReader(zr)
	}
	return d.rect(out, x, y, w, h)
}

func (d *Decoder) decode(out *codec.Frame, data []byte) error {
	if len(data) < 2 {
		return errors.New("zrle: truncated rectangle count")
	}
	n := int(binary.BigEndian.Uint16(data))
	data = data[2:]
	for i := range n {
		if len(data) < 16 {
			return fmt.Errorf("zrle: rectangle %d: truncated header", i)
		}
		x := int(binary.BigEndian.Uint16(data[0:]))
		y := int(binary.BigEndian.Uint16(data[2:]))
		rw := int(binary.BigEndian.Uint16(data[4:]))
		rh := int(binary.BigEndian.Uint16(data[6:]))
		enc := int32(binary.BigEndian.Uint32(data[8:]))
		length := binary.BigEndian.Uint32(data[12:])
		data = data[16:]
		if enc != EncodingType {
			return fmt.Errorf("zrle: rectangle %d: encoding %d, want %d", i, enc, EncodingType)
		}
		if x+rw > out.W || y+rh > out.H {
			return fmt.Errorf("zrle: rectangle %d (%d,%d %dx%d) outside %dx%d frame", i, x, y, rw, rh, out.W, out.H)
		}
		if uint64(length) > uint64(len(data)) {
			return fmt.Errorf("zrle: rectangle %d: zlib length %d exceeds the %d bytes left", i, length, len(data))
		}
		d.in.push(data[:length])
		data = data[length:]
		if rw == 0 || rh == 0 {
			continue
		}
		if err := d.inflate(out, x, y, rw, rh); err != nil {
			return fmt.Errorf("zrle: rectangle %d: %w", i, err)
		}
	}
	if len(data) != 0 {
		return fmt.Errorf("zrle: %d trailing bytes", len(data))
	}
	return nil
}

// rect decodes the 64x64 tiles of one rectangle, left to right and top to
// bottom (section 7.7.6).
func (d *Decoder) rect(out *codec.Frame, x, y, w, h int) error {
	for ty := y; ty < y+h; ty += TileSize {
		th := min(TileSize, y+h-ty)
		for tx := x; tx < x+w; tx += TileSize {
			tw := min(TileSize, x+w-tx)
			if err := d.tile(out, tx, ty, tw, th); err != nil {
				return fmt.Errorf("tile at %d,%d: %w", tx, ty, err)
			}
		}
	}
	return nil
}

func (d *Decoder) readByte() (byte, error) {
	b, err := d.br.ReadByte()
	if err != nil {
		return 0, truncated(err)
	}
	return b, nil
}

// truncated maps the end of the available zlib data to a clear error.
func truncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errShort
	}
	return err
}

func (d *Decoder) cpixel() (uint32, error) {
	var b [cpixelSize]byte
	if _, err := io.ReadFull(d.br, b[:]); err != nil {
		return 0, truncated(err)
	}
	// CPIXEL is B, G, R: the low 3 bytes of a little-endian 32-bit pixel.
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16, nil
}

func (d *Decoder) palette(n int) error {
	for i := range n {
		c, err := d.cpixel()
		if err != nil {
			return err
		}
		d.pal[i] = c
	}
	return nil
}

// runLen reads a run length (section 7.7.5: one plus the sum of the bytes,
// every byte but the last being 255), rejecting runs longer than left.
func (d *Decoder) runLen(left int) (int, error) {
	l := 1
	for {
		b, err := d.readByte()
		if err != nil {
			return 0, err
		}
		l += int(b)
		if l > left {
			return 0, fmt.Errorf("run of %d+ pixels past the %d left in the tile", l, left)
		}
		if b != 255 {
			return l, nil
		}
	}
}

func (d *Decoder) tile(out *codec.Frame, tx, ty, tw, th int) error {
	sub, err := d.readByte()
	if err != nil {
		return err
	}
	// set writes the i-th pixel of the tile in tile order.
	set := func(i int, c uint32) { out.Pix[(ty+i/tw)*out.W+tx+i%tw] = c }
	total := tw * th
	switch {
	case sub == subRaw:
		for i := range total {
			c, err := d.cpixel()
			if err != nil {
				return err
			}
			set(i, c)
		}
	case sub == subSolid:
		c, err := d.cpixel()
		if err != nil {
			return err
		}
		for i := range total {
			set(i, c)
		}
	case sub >= 2 && sub <= maxPackedPalette:
		n := int(sub)
		if err := d.palette(n); err != nil {
			return err
		}
		bits := packedBits(n)
		rowBytes := (tw*bits + 7) / 8
		if cap(d.row) < rowBytes {
			d.row = make([]byte, rowBytes)
		}
		row := d.row[:rowBytes]
		mask := byte(1<<bits - 1)
		for py := range th {
			if _, err := io.ReadFull(d.br, row); err != nil {
				return truncated(err)
			}
			for px := range tw {
				bit := px * bits
				idx := int(row[bit/8]>>(8-bits-bit%8)) & int(mask)
				if idx >= n {
					return fmt.Errorf("packed palette index %d out of %d", idx, n)
				}
				out.Pix[(ty+py)*out.W+tx+px] = d.pal[idx]
			}
		}
	case sub == subPlainRLE:
		for i := 0; i < total; {
			c, err := d.cpixel()
			if err != nil {
				return err
			}
			l, err := d.runLen(total - i)
			if err != nil {
				return err
			}
			for range l {
				set(i, c)
				i++
			}
		}
	case sub >= 128+2:
		n := int(sub) - 128
		if err := d.palette(n); err != nil {
			return err
		}
		for i := 0; i < total; {
			b, err := d.readByte()
			if err != nil {
				return err
			}
			idx, l := int(b&0x7F), 1
			if idx >= n {
				return fmt.Errorf("palette RLE index %d out of %d", idx, n)
			}
			if b&0x80 != 0 {
				if l, err = d.runLen(total - i); err != nil {
					return err
				}
			}
			for range l {
				set(i, d.pal[idx])
				i++
			}
		}
	default:
		// 17-126 are unused; 127 and 129 (palette reuse) are TRLE only,
		// excluded by section 7.7.6.
		return fmt.Errorf("invalid subencoding %d", sub)
	}
	return nil
}
