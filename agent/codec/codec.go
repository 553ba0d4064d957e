// Package codec is the lab's screen-codec comparison (findings E1-E13): the
// frame and rectangle types every codec shares, and the interface each
// lossless encoder and decoder implements, so that the tile XOR+zstd codec
// (EVRTCK-like), VNC's Hextile and ZRLE run on the same synthetic screens and
// are charged the same dirty-tile detection.
package codec

// TileSize is the side of the grid every codec and the dirty detector use
// (E1: 32x32 tiles).
const TileSize = 32

// Frame is a screen image: W x H pixels, row-major, each 0x00RRGGBB (the
// top byte is unused and always zero).
type Frame struct {
	W, H int
	Pix  []uint32
}

// NewFrame returns a black frame of w x h pixels.
func NewFrame(w, h int) *Frame { return &Frame{W: w, H: h, Pix: make([]uint32, w*h)} }

// Clone returns a deep copy of f.
func (f *Frame) Clone() *Frame {
	return &Frame{W: f.W, H: f.H, Pix: append([]uint32(nil), f.Pix...)}
}

// At returns the pixel at x, y.
func (f *Frame) At(x, y int) uint32 { return f.Pix[y*f.W+x] }

// Rect is a rectangle of pixels.
type Rect struct{ X, Y, W, H int }

// Encoder encodes one frame. prev is the frame the decoder already has (nil
// for a keyframe: nothing to diff against); dirty lists the rectangles that
// changed since prev, as the shared detector found them (all tiles for a
// keyframe). Encode appends the encoded bytes to dst. An encoder may keep
// state across frames (ZRLE's zlib stream is one per connection).
type Encoder interface {
	Name() string
	Encode(dst []byte, prev, cur *Frame, dirty []Rect) ([]byte, error)
}

// Decoder applies one encoded frame to the frame it has (prev, nil before
// the first) and returns the new frame. It must reject malformed input with
// an error, never panic. A decoder may keep state across frames.
type Decoder interface {
	Decode(prev *Frame, w, h int, data []byte) (*Frame, error)
}
