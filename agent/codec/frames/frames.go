// Package frames generates the synthetic screens of the codec benchmark
// matrix (findings E3, E5, E6): keyframes (solid colour, gradient, noise) and
// P-frames that change a chosen percentage of the previous frame's pixels as
// scattered points, solid blocks, scattered noise or one block of noise.
//
// It also owns the Painter, the text and photo content that the lossless
// encoders paint the screen model's changes with and the screen painter
// (agent/screen/paint) paints its textures with.
//
// Every frame is a pure function of its arguments: the only randomness is a
// math/rand/v2 PCG seeded from the seed argument, so a benchmark run can be
// repeated byte for byte and every codec sees exactly the same screens.
package frames

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// The resolutions of the keyframe matrix (E5, E6), width and height.
const (
	Width720p   = 1280
	Height720p  = 720
	Width1080p  = 1920
	Height1080p = 1080
	Width4K     = 3840
	Height4K    = 2160
)

// Keyframe kinds.
const (
	Solid    = "solid"    // one colour everywhere
	Gradient = "gradient" // no two pixels equal (E6), smooth along x and y
	Noise    = "noise"    // every pixel an independent random colour
)

// P-frame kinds.
const (
	Points     = "points"      // scattered single-pixel edits, all one colour
	Blocks     = "blocks"      // solid single-colour blocks of edits
	NoisePts   = "noise"       // scattered single pixels of random colour
	NoiseBlock = "noise-block" // one rectangle of random pixels ("video in a corner")
)

// Percentages is the change matrix of the P-frame cases; 0 is a static frame.
var Percentages = []float64{0, 1, 5, 10, 25, 50, 90}

// BlockSize is the side of the edit blocks of the "blocks" kind. It is not a
// multiple of codec.TileSize on purpose: real edits (windows, text boxes) do
// not line up with the codec grid, and aligned blocks would flatter tile
// codecs.
const BlockSize = 48

// colourMask keeps pixels in the 0x00RRGGBB form codec.Frame documents.
const colourMask = 0x00ffffff

// newRand returns the generator for seed. The second PCG word is a fixed
// constant so that the stream depends on the seed only.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

// Keyframe returns a w x h frame of the given kind (Solid, Gradient or
// Noise). It panics on an unknown kind or a non-positive size, since both are
// programming errors in a benchmark table.
//
// Gradient frames have no two equal pixels as long as w and h are at most
// 4096 (which covers 4K): the pixel is x<<12|y plus a seeded offset, modulo
// 2^24, a bijection on the 24-bit colour space.
func Keyframe(kind string, w, h int, seed uint64) *codec.Frame {
	if w <= 0 || h <= 0 {
		panic(fmt.Sprintf("frames: bad size %dx%d", w, h))
	}
	r := newRand(seed)
	f := codec.NewFrame(w, h)
	switch kind {
	case Solid:
		c := r.Uint32() & colourMask
		for i := range f.Pix {
			f.Pix[i] = c
		}
	case Gradient:
		off := r.Uint32() & colourMask
		for y := range h {
			row := f.Pix[y*w : (y+1)*w]
			for x := range row {
				row[x] = ((uint32(x)<<12 | uint32(y)) + off) & colourMask
			}
		}
	case Noise:
		for i := range f.Pix {
			f.Pix[i] = r.Uint32() & colourMask
		}
	default:
		panic(fmt.Sprintf("frames: unknown keyframe kind %q", kind))
	}
	return f
}

// PFrame returns the frame that follows prev with pct percent (0 to 100) of
// its pixels changed in the manner of kind (Points, Blocks, NoisePts or
// NoiseBlock). prev is not modified. pct 0 returns an identical copy (the
// static case). The number of changed pixels is round(pct/100*W*H) exactly,
// except in the degenerate case where a single-colour kind cannot find a
// colour absent from prev (see pickColour). It panics on an unknown kind or
// a pct outside [0, 100].
func PFrame(prev *codec.Frame, kind string, pct float64, seed uint64) *codec.Frame {
	if pct < 0 || pct > 100 || math.IsNaN(pct) {
		panic(fmt.Sprintf("frames: bad percentage %v", pct))
	}
	r := newRand(seed)
	f := prev.Clone()
	total := len(f.Pix)
	n := int(math.Round(pct / 100 * float64(total)))
	switch kind {
	case Points:
		c := pickColour(r, prev)
		scatter(r, f, n, func(uint32) uint32 { return c })
	case NoisePts:
		scatter(r, f, n, func(old uint32) uint32 { return noisePixel(r, old) })
	case Blocks:
		blocks(r, f, n, pickColour(r, prev))
	case NoiseBlock:
		noiseBlock(r, f, n)
	default:
		panic(fmt.Sprintf("frames: unknown P-frame kind %q", kind))
	}
	return f
}

// pickColour draws the edit colour of a single-colour kind. A pixel that
// already has the edit colour would not change, and the changed-pixel count
// would fall short of pct, so it retries until it finds a colour absent from
// prev (a 4K noise frame holds about 40% of all colours, so a few tries are
// enough). After 64 tries it gives up and takes the last colour.
func pickColour(r *rand.Rand, prev *codec.Frame) uint32 {
	var c uint32
	for range 64 {
		c = r.Uint32() & colourMask
		found := false
		for _, p := range prev.Pix {
			if p == c {
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return c
}

// noisePixel draws a random colour different from old, so that every noise
// edit is a real change.
func noisePixel(r *rand.Rand, old uint32) uint32 {
	for {
		if c := r.Uint32() & colourMask; c != old {
			return c
		}
	}
}

// scatter changes n distinct pixels of f chosen uniformly at random, each to
// next(old). Positions are drawn by rejection against a visited bitmap
// rather than by shuffling a permutation of all positions: it needs W*H bits
// instead of W*H words, and even at 90% change costs only about 2.3 draws
// per pixel.
func scatter(r *rand.Rand, f *codec.Frame, n int, next func(uint32) uint32) {
	total := len(f.Pix)
	visited := make([]uint64, (total+63)/64)
	changed, seen := 0, 0
	for changed < n && seen < total {
		i := r.IntN(total)
		if visited[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		visited[i/64] |= 1 << (i % 64)
		seen++
		if c := next(f.Pix[i]); c != f.Pix[i] {
			f.Pix[i] = c
			changed++
		}
	}
}

// blocks paints n pixels of f with colour c, in BlockSize x BlockSize cells
// taken in random order; the last cell is filled row by row only as far as
// needed to hit n exactly, so it stays a solid (if shorter) block.
func blocks(r *rand.Rand, f *codec.Frame, n int, c uint32) {
	cw := (f.W + BlockSize - 1) / BlockSize
	ch := (f.H + BlockSize - 1) / BlockSize
	changed := 0
	for _, cell := range r.Perm(cw * ch) {
		x0, y0 := cell%cw*BlockSize, cell/cw*BlockSize
		for y := y0; y < min(y0+BlockSize, f.H); y++ {
			for x := x0; x < min(x0+BlockSize, f.W); x++ {
				if changed == n {
					return
				}
				if i := y*f.W + x; f.Pix[i] != c {
					f.Pix[i] = c
					changed++
				}
			}
		}
	}
}

// noiseBlock fills one rectangle of f with noise. The rectangle has the
// frame's aspect ratio and just enough area for n pixels; its last row is
// filled only partly so that exactly n pixels change. It sits at a random
// position that keeps it inside the frame.
func noiseBlock(r *rand.Rand, f *codec.Frame, n int) {
	if n == 0 {
		return
	}
	frac := float64(n) / float64(len(f.Pix))
	bw := min(max(int(math.Round(float64(f.W)*math.Sqrt(frac))), 1), f.W)
	bh := min((n+bw-1)/bw, f.H)
	for bw*bh < n { // rounding left the block short: widen it
		bw++
	}
	x0 := r.IntN(f.W - bw + 1)
	y0 := r.IntN(f.H - bh + 1)
	changed := 0
	for y := y0; y < y0+bh; y++ {
		for x := x0; x < x0+bw && changed < n; x++ {
			i := y*f.W + x
			f.Pix[i] = noisePixel(r, f.Pix[i])
			changed++
		}
	}
}
