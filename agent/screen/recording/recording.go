// Package recording owns the lab's recorded screens: what a real desktop
// showed, frame by frame, with the damage its X server reported, stored
// losslessly and compactly, and read back as an index (cheap: when each
// frame came, what changed, how detailed it is) or as pixels.
//
// The pixels are stored with the lab's own tile XOR+zstd codec
// (agent/codec/tile): each frame's damaged tiles XORed against the frame
// before, so a recording costs what changed. Each frame's index entry sits
// in front of its pixels with the pixels' length, so the index is read by
// skipping them: a screen model that replays a recording (its times, its
// damage, its detail) never decompresses a pixel.
//
// # File
//
//	magic    8 bytes  "LABSCREC"
//	version  byte     2 (1 is read too: its frames have no moved)
//	meta     uvarint length, then Meta as JSON
//	frames, each until the end of the file:
//	  at      uvarint  nanoseconds from the recording's start
//	  rects   uvarint  count, then x, y, w, h as uvarints each
//	  changed 8 bytes  float64 bits, little-endian: Frame.Changed
//	  detail  8 bytes  float64 bits, little-endian: Frame.Detail
//	  moved   8 bytes  float64 bits, little-endian: Frame.Moved (not in
//	                   version 1)
//	  pixels  uvarint  length, then the tile codec's encoding of the
//	                   frame on top of the one before (the first against
//	                   nothing: a keyframe)
//
// The first frame is the whole screen, whatever damage was given for it.
package recording

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/codec/tile"
)

// magic opens every recording.
const magic = "LABSCREC"

// formatVersion is the file format's version that Writer writes. A
// reader reads it and firstVersion, and refuses others.
const formatVersion = 2

// firstVersion is the format before Frame.Moved: its frames read with
// Moved 0, as if nothing in them moved (what a screen made of them
// assumed before it was measured).
const firstVersion = 1

// maxMeta bounds the metadata a reader accepts, so that a damaged file
// cannot make it allocate without end.
const maxMeta = 1 << 20

// maxRects bounds the damage rectangles of one frame a reader accepts.
const maxRects = 1 << 16

// Meta says what a recording shows and how it was made: what the corpus's
// manifest repeats and a test checks against the file.
type Meta struct {
	// Width and Height are the screen's size in pixels.
	Width  int `json:"width"`
	Height int `json:"height"`
	// Refresh is the rate the screen was sampled at, in Hz.
	Refresh float64 `json:"refresh"`
	// Kind is the content's kind ("typing", "scrolling", ...).
	Kind string `json:"kind"`
	// App is the application shown, with its Debian package's version
	// ("xterm 398-1").
	App string `json:"app"`
	// Script is what was done on the screen, in words.
	Script string `json:"script"`
	// Command remakes the recording.
	Command string `json:"command"`
}

func (m Meta) check() error {
	if m.Width <= 0 || m.Height <= 0 {
		return fmt.Errorf("recording: size %dx%d: want positive sides", m.Width, m.Height)
	}
	if !(m.Refresh > 0 && m.Refresh <= 1000) {
		return fmt.Errorf("recording: refresh %v Hz: want more than 0 and at most 1000", m.Refresh)
	}
	return nil
}

// Frame is one recorded frame's index entry.
type Frame struct {
	// At is when the frame was taken, from the recording's start.
	At time.Duration
	// Damage is what the X server reported changed since the frame before
	// (the whole screen for the first frame).
	Damage []codec.Rect
	// Changed is the fraction of the screen's pixels that differ from the
	// frame before (1 for the first): damage can cover pixels that were
	// drawn again unchanged.
	Changed float64
	// Detail is the spatial detail of the damaged pixels: the mean
	// absolute difference of luma between neighbouring pixels (see
	// Detail), 0 for flat colour.
	Detail float64
	// Moved is the share of the changed pixels that the best single shift
	// of the frame before gives exactly (up to MaxShift pixels along each
	// axis): a dragged window or a scrolled page, what an encoder's
	// motion search codes for little. 0 for the first frame, for new
	// content, and in files of format version 1, which did not measure it.
	Moved float64
}

// DamagedShare is the share of a screen of meta's size that the frame's
// damage covers, rectangles that overlap counted twice (the recorder merges
// them, so they seldom do).
func (f *Frame) DamagedShare(meta Meta) float64 {
	a := 0
	for _, d := range f.Damage {
		a += d.W * d.H
	}
	return float64(a) / float64(meta.Width*meta.Height)
}

// Writer writes a recording frame by frame. It is not safe for concurrent
// use.
type Writer struct {
	w    *bufio.Writer
	meta Meta
	enc  *tile.Encoder
	prev *codec.Frame
	last time.Duration
	n    int
	buf  []byte
	err  error
	// version is the format written: formatVersion, firstVersion in
	// tests of the reader's compatibility.
	version byte
	motion  motion
}

// NewWriter writes a recording's header to w and returns a Writer for its
// frames. Close flushes what is buffered; it does not close w.
func NewWriter(w io.Writer, meta Meta) (*Writer, error) {
	return newWriter(w, meta, formatVersion)
}

func newWriter(w io.Writer, meta Meta, version byte) (*Writer, error) {
	if err := meta.check(); err != nil {
		return nil, err
	}
	enc, err := tile.NewEncoder(tile.Options{})
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString(magic)
	bw.WriteByte(version)
	writeUvarint(bw, uint64(len(js)))
	bw.Write(js)
	return &Writer{w: bw, meta: meta, enc: enc, version: version}, nil
}

// Buffered is how many bytes of the recording the Writer holds that it
// has not yet written to the writer it was given: with those, what a
// progress line counts as written before the file is.
func (w *Writer) Buffered() int { return w.w.Buffered() }

// Add appends a frame taken at at (from the recording's start, never
// before the frame before) with the damage reported since the frame
// before. The writer keeps f, so the caller must not change it afterwards.
func (w *Writer) Add(at time.Duration, f *codec.Frame, damage []codec.Rect) error {
	if w.err != nil {
		return w.err
	}
	if f.W != w.meta.Width || f.H != w.meta.Height {
		return fmt.Errorf("recording: frame %d is %dx%d, the recording %dx%d", w.n, f.W, f.H, w.meta.Width, w.meta.Height)
	}
	if at < w.last || at < 0 {
		return fmt.Errorf("recording: frame %d at %v, before the frame before (%v)", w.n, at, w.last)
	}
	if w.prev == nil {
		damage = []codec.Rect{{X: 0, Y: 0, W: f.W, H: f.H}}
	}
	for _, r := range damage {
		if r.W <= 0 || r.H <= 0 || r.X < 0 || r.Y < 0 || r.X+r.W > f.W || r.Y+r.H > f.H {
			return fmt.Errorf("recording: frame %d: damage %+v outside the %dx%d screen", w.n, r, f.W, f.H)
		}
	}
	// The changed pixels are found once, for the changed share and for
	// the motion search.
	changed, moved := 1.0, 0.0
	if w.prev != nil {
		n, box := w.motion.changed(w.prev, f, damage)
		changed = float64(n) / float64(len(f.Pix))
		if w.version >= 2 {
			moved = w.motion.movedOf(w.prev, f, n, box)
		}
	}
	pix, err := w.enc.Encode(w.buf[:0], w.prev, f, damage)
	if err != nil {
		return fmt.Errorf("recording: frame %d: %w", w.n, err)
	}
	w.buf = pix
	writeUvarint(w.w, uint64(at))
	writeUvarint(w.w, uint64(len(damage)))
	for _, r := range damage {
		writeUvarint(w.w, uint64(r.X))
		writeUvarint(w.w, uint64(r.Y))
		writeUvarint(w.w, uint64(r.W))
		writeUvarint(w.w, uint64(r.H))
	}
	var f8 [8]byte
	binary.LittleEndian.PutUint64(f8[:], math.Float64bits(changed))
	w.w.Write(f8[:])
	binary.LittleEndian.PutUint64(f8[:], math.Float64bits(Detail(f, damage)))
	w.w.Write(f8[:])
	if w.version >= 2 {
		binary.LittleEndian.PutUint64(f8[:], math.Float64bits(moved))
		w.w.Write(f8[:])
	}
	writeUvarint(w.w, uint64(len(pix)))
	_, err = w.w.Write(pix)
	w.err = err
	w.prev, w.last = f, at
	w.n++
	return err
}

// Frames is how many frames have been added.
func (w *Writer) Frames() int { return w.n }

// Close flushes the recording.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

func writeUvarint(w *bufio.Writer, v uint64) {
	var b [binary.MaxVarintLen64]byte
	w.Write(b[:binary.PutUvarint(b[:], v)])
}

// Recording is a recording's metadata and index, read from its file.
type Recording struct {
	// Path is the file it was read from.
	Path string
	Meta Meta
	// Frames is the index, in order.
	Frames []Frame
	// offsets[i] is where frame i's pixels start in the file, sizes[i]
	// their length.
	offsets []int64
	sizes   []int
	version byte
}

// Duration is the recording's length: the last frame's instant plus one
// refresh interval, for which it stays on screen.
func (r *Recording) Duration() time.Duration {
	if len(r.Frames) == 0 {
		return 0
	}
	return r.Frames[len(r.Frames)-1].At + time.Duration(float64(time.Second)/r.Meta.Refresh)
}

// Open reads a recording's metadata and index, skipping its pixels.
func Open(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := readIndex(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.Path = path
	return r, nil
}

// countingReader counts the bytes read through it, so that the index knows
// where each frame's pixels lie.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(c.r, p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) discard(n int) error {
	d, err := c.r.Discard(n)
	c.n += int64(d)
	return err
}

func readIndex(f io.Reader) (*Recording, error) {
	c := &countingReader{r: bufio.NewReaderSize(f, 1<<16)}
	head := make([]byte, len(magic)+1)
	if _, err := c.Read(head); err != nil || string(head[:len(magic)]) != magic {
		return nil, errors.New("not a screen recording (no LABSCREC header)")
	}
	version := head[len(magic)]
	if version != formatVersion && version != firstVersion {
		return nil, fmt.Errorf("format version %d: this lab reads versions %d and %d", version, firstVersion, formatVersion)
	}
	n, err := binary.ReadUvarint(c)
	if err != nil || n > maxMeta {
		return nil, fmt.Errorf("metadata: length unreadable or over %d bytes", maxMeta)
	}
	js := make([]byte, n)
	if _, err := c.Read(js); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	r := &Recording{version: version}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r.Meta); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if err := r.Meta.check(); err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		at, err := binary.ReadUvarint(c)
		if err == io.EOF {
			break
		}
		fr, size, err := readEntry(c, at, err, r.Meta, version)
		if err != nil {
			return nil, fmt.Errorf("frame %d: %w", i, err)
		}
		if k := len(r.Frames); k > 0 && fr.At < r.Frames[k-1].At {
			return nil, fmt.Errorf("frame %d at %v, before the frame before (%v)", i, fr.At, r.Frames[k-1].At)
		}
		r.offsets = append(r.offsets, c.n)
		r.sizes = append(r.sizes, size)
		if err := c.discard(size); err != nil {
			return nil, fmt.Errorf("frame %d: pixels cut short: %w", i, err)
		}
		r.Frames = append(r.Frames, fr)
	}
	if len(r.Frames) == 0 {
		return nil, errors.New("no frames")
	}
	return r, nil
}

// readEntry reads one frame's index entry after its instant (at, or the
// error reading it) and returns it with its pixels' length.
func readEntry(c *countingReader, at uint64, atErr error, m Meta, version byte) (Frame, int, error) {
	if atErr != nil || at > math.MaxInt64 {
		return Frame{}, 0, errors.New("instant unreadable")
	}
	fr := Frame{At: time.Duration(at)}
	nr, err := binary.ReadUvarint(c)
	if err != nil || nr > maxRects {
		return Frame{}, 0, fmt.Errorf("damage: count unreadable or over %d", maxRects)
	}
	fr.Damage = make([]codec.Rect, nr)
	for j := range fr.Damage {
		var v [4]uint64
		for k := range v {
			if v[k], err = binary.ReadUvarint(c); err != nil || v[k] > 1<<20 {
				return Frame{}, 0, errors.New("damage: rectangle unreadable")
			}
		}
		rc := codec.Rect{X: int(v[0]), Y: int(v[1]), W: int(v[2]), H: int(v[3])}
		if rc.W <= 0 || rc.H <= 0 || rc.X+rc.W > m.Width || rc.Y+rc.H > m.Height {
			return Frame{}, 0, fmt.Errorf("damage %+v outside the %dx%d screen", rc, m.Width, m.Height)
		}
		fr.Damage[j] = rc
	}
	var f8 [24]byte
	figures := f8[:16]
	if version >= 2 {
		figures = f8[:24]
	}
	if _, err := c.Read(figures); err != nil {
		return Frame{}, 0, errors.New("changed share, detail and moved share cut short")
	}
	fr.Changed = math.Float64frombits(binary.LittleEndian.Uint64(f8[:8]))
	fr.Detail = math.Float64frombits(binary.LittleEndian.Uint64(f8[8:16]))
	fr.Moved = math.Float64frombits(binary.LittleEndian.Uint64(f8[16:]))
	if !(fr.Moved >= 0 && fr.Moved <= 1) {
		return Frame{}, 0, fmt.Errorf("moved share %v outside [0, 1]", fr.Moved)
	}
	size, err := binary.ReadUvarint(c)
	if err != nil || size > 1<<30 {
		return Frame{}, 0, errors.New("pixels: length unreadable")
	}
	return fr, int(size), nil
}

// Version is the format version of the file the recording was read from.
func (r *Recording) Version() int { return int(r.version) }

// Rewrite writes the recording again, in the format Writer writes, to w:
// the same metadata, instants, damage and pixels, with what the older
// format did not measure (Frame.Moved) measured from the pixels. The
// pixels' encoding is the same, so a rewritten file's pixels are
// byte-identical to the old one's.
func (r *Recording) Rewrite(w io.Writer) error {
	wr, err := NewWriter(w, r.Meta)
	if err != nil {
		return err
	}
	p, err := r.Play()
	if err != nil {
		return err
	}
	defer p.Close()
	for {
		i, f, err := p.Next()
		if errors.Is(err, io.EOF) {
			return wr.Close()
		}
		if err != nil {
			return err
		}
		if err := wr.Add(r.Frames[i].At, f, r.Frames[i].Damage); err != nil {
			return err
		}
	}
}

// Player decodes a recording's pixels in order.
type Player struct {
	rec  *Recording
	f    *os.File
	dec  *tile.Decoder
	cur  *codec.Frame
	next int
	buf  []byte
}

// Play opens the recording's file to decode its pixels from the first
// frame. Close the Player when done.
func (r *Recording) Play() (*Player, error) {
	f, err := os.Open(r.Path)
	if err != nil {
		return nil, err
	}
	dec, err := tile.NewDecoder()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Player{rec: r, f: f, dec: dec}, nil
}

// Next decodes the next frame and returns its index (0 for the first) and
// its pixels, a frame the caller may keep: io.EOF after the last.
func (p *Player) Next() (int, *codec.Frame, error) {
	i := p.next
	if i >= len(p.rec.Frames) {
		return i, nil, io.EOF
	}
	size := p.rec.sizes[i]
	if cap(p.buf) < size {
		p.buf = make([]byte, size)
	}
	buf := p.buf[:size]
	if _, err := p.f.ReadAt(buf, p.rec.offsets[i]); err != nil {
		return i, nil, fmt.Errorf("%s: frame %d: %w", p.rec.Path, i, err)
	}
	f, err := p.dec.Decode(p.cur, p.rec.Meta.Width, p.rec.Meta.Height, buf)
	if err != nil {
		return i, nil, fmt.Errorf("%s: frame %d: %w", p.rec.Path, i, err)
	}
	p.cur, p.next = f, i+1
	return i, f, nil
}

// Close closes the recording's file.
func (p *Player) Close() error { return p.f.Close() }

// luma is a pixel's luma as the encoders see it: BT.601's limited-range
// integer matrix, the same as yuv's FromRGB, so that Detail over a
// recorded frame equals DetailLuma over its I420 picture, the painter's
// pictures' form. Detail is what the eye and the encoders see in luma.
func luma(px uint32) int {
	r, g, b := int(px>>16&0xff), int(px>>8&0xff), int(px&0xff)
	return (66*r+129*g+25*b+128)>>8 + 16
}

// Detail is the spatial detail of the pixels of f inside rects: the mean
// absolute difference of luma between each pixel and its right and lower
// neighbours (within f), luma as the encoders see it (16 to 235): 0 for
// flat colour, about 47 for noise uniform in R, G and B, 219 for a
// one-pixel checkerboard of black and white.
// Overlapping rectangles count their shared pixels more than once.
func Detail(f *codec.Frame, rects []codec.Rect) float64 {
	var sum, n int64
	for _, r := range rects {
		for y := r.Y; y < r.Y+r.H; y++ {
			row := f.Pix[y*f.W:]
			for x := r.X; x < r.X+r.W; x++ {
				l := luma(row[x])
				if x+1 < f.W {
					sum += int64(abs(l - luma(row[x+1])))
					n++
				}
				if y+1 < f.H {
					sum += int64(abs(l - luma(f.Pix[(y+1)*f.W+x])))
					n++
				}
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// DetailLuma is Detail over a luma plane of w x h samples (an I420
// picture's Y), so that pictures painted by the lab and recorded ones are
// measured alike.
func DetailLuma(y []byte, w, h int, rects []codec.Rect) float64 {
	var sum, n int64
	for _, r := range rects {
		for yy := r.Y; yy < r.Y+r.H; yy++ {
			for x := r.X; x < r.X+r.W; x++ {
				l := int(y[yy*w+x])
				if x+1 < w {
					sum += int64(abs(l - int(y[yy*w+x+1])))
					n++
				}
				if yy+1 < h {
					sum += int64(abs(l - int(y[(yy+1)*w+x])))
					n++
				}
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// ChangedShare is the fraction of the screen's pixels inside damage that
// differ between prev and cur (1 when prev is nil: everything is new).
// Pixels covered by two rectangles count once.
func ChangedShare(prev, cur *codec.Frame, damage []codec.Rect) float64 {
	if prev == nil {
		return 1
	}
	var m motion
	n, _ := m.changed(prev, cur, damage)
	return float64(n) / float64(len(cur.Pix))
}
