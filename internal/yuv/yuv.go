// Package yuv owns the lab's pictures in the form H.264 encoders take and
// decoders give back: I420 (planar 4:2:0, 8 bits a sample, a full-size
// luma plane and two chroma planes of half the width and half the height),
// and how far a decoded picture is from its source (PSNR).
package yuv

import (
	"fmt"
	"math"
)

// I420 is a picture in planar 4:2:0. W and H are even; the planes have no
// padding: Y holds W*H samples row by row, U and V (W/2)*(H/2) each.
type I420 struct {
	W, H    int
	Y, U, V []byte
}

// New returns a black picture (Y 16, U and V 128, as BT.601's limited
// range has it) of w x h pixels. It panics on an odd or non-positive size,
// a programming error: 4:2:0 needs whole chroma samples.
func New(w, h int) *I420 {
	if w <= 0 || h <= 0 || w%2 != 0 || h%2 != 0 {
		panic(fmt.Sprintf("yuv: bad size %dx%d: need positive even sides", w, h))
	}
	p := &I420{W: w, H: h, Y: make([]byte, w*h), U: make([]byte, w*h/4), V: make([]byte, w*h/4)}
	fill(p.Y, 16)
	fill(p.U, 128)
	fill(p.V, 128)
	return p
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// Clone returns a deep copy of p.
func (p *I420) Clone() *I420 {
	q := &I420{W: p.W, H: p.H, Y: make([]byte, len(p.Y)), U: make([]byte, len(p.U)), V: make([]byte, len(p.V))}
	q.CopyFrom(p)
	return q
}

// CopyFrom makes p a copy of q, a picture of the same size.
func (p *I420) CopyFrom(q *I420) {
	if p.W != q.W || p.H != q.H {
		panic(fmt.Sprintf("yuv: copy of a %dx%d picture into a %dx%d one", q.W, q.H, p.W, p.H))
	}
	copy(p.Y, q.Y)
	copy(p.U, q.U)
	copy(p.V, q.V)
}

// Equal tells whether two pictures have the same size and samples.
func Equal(a, b *I420) bool {
	return a.W == b.W && a.H == b.H && string(a.Y) == string(b.Y) && string(a.U) == string(b.U) && string(a.V) == string(b.V)
}

// MaxPSNR is the PSNR reported for identical planes, whose true PSNR is
// infinite: 100 dB, as video tools cap it, so that a figure stays a number
// in JSON and in a median.
const MaxPSNR = 100.0

// PSNR is the peak signal-to-noise ratio of the luma of got against want,
// in dB: 10 log10(255^2 / MSE), MaxPSNR when they are identical. Luma is
// what a codec comparison quotes first, and what the eye reads text and
// edges by. It panics on pictures of different sizes, a programming error.
func PSNR(want, got *I420) float64 {
	if want.W != got.W || want.H != got.H {
		panic(fmt.Sprintf("yuv: PSNR of a %dx%d picture against a %dx%d one", got.W, got.H, want.W, want.H))
	}
	return psnr(sumSquares(want.Y, got.Y), len(want.Y))
}

// psnr turns a sum of squared differences over n samples into dB.
func psnr(sse uint64, n int) float64 {
	if sse == 0 {
		return MaxPSNR
	}
	mse := float64(sse) / float64(n)
	return min(MaxPSNR, 10*math.Log10(255*255/mse))
}

// sumSquares is the sum of the squared differences of two planes.
func sumSquares(a, b []byte) uint64 {
	var s uint64
	b = b[:len(a)]
	for i, x := range a {
		d := int64(x) - int64(b[i])
		s += uint64(d * d)
	}
	return s
}

// FromRGB converts pixels in the 0x00RRGGBB form (row-major, w x h, both
// even) into p with BT.601's limited-range integer matrix, each chroma
// sample the mean of its 2x2 block. It is how the painter turns its
// textures into what an encoder takes, once per texture.
func (p *I420) FromRGB(pix []uint32, w, h int) {
	if w != p.W || h != p.H || len(pix) < w*h {
		panic(fmt.Sprintf("yuv: %dx%d pixels into a %dx%d picture", w, h, p.W, p.H))
	}
	for y := 0; y < h; y += 2 {
		for x := 0; x < w; x += 2 {
			var su, sv int32
			for dy := range 2 {
				for dx := range 2 {
					c := pix[(y+dy)*w+x+dx]
					r, g, b := int32(c>>16&0xff), int32(c>>8&0xff), int32(c&0xff)
					p.Y[(y+dy)*w+x+dx] = byte((66*r+129*g+25*b+128)>>8 + 16)
					su += (-38*r - 74*g + 112*b + 128) >> 8
					sv += (112*r - 94*g - 18*b + 128) >> 8
				}
			}
			i := (y/2)*(w/2) + x/2
			p.U[i] = byte(su/4 + 128)
			p.V[i] = byte(sv/4 + 128)
		}
	}
}

// ToRGB converts p into pixels of the 0x00RRGGBB form (row-major, p.W x
// p.H), BT.601's limited-range integer inverse of FromRGB, each chroma
// sample shared by its 2x2 block. It is how a painted picture is shown on
// a real display (lab vnc's screen driver).
func (p *I420) ToRGB(pix []uint32) {
	if len(pix) < p.W*p.H {
		panic(fmt.Sprintf("yuv: a %dx%d picture into %d pixels", p.W, p.H, len(pix)))
	}
	clip := func(v int32) uint32 { return uint32(min(max(v, 0), 255)) }
	for y := range p.H {
		for x := range p.W {
			c := 298 * (int32(p.Y[y*p.W+x]) - 16)
			i := (y/2)*(p.W/2) + x/2
			d, e := int32(p.U[i])-128, int32(p.V[i])-128
			pix[y*p.W+x] = clip((c+409*e+128)>>8)<<16 | clip((c-100*d-208*e+128)>>8)<<8 | clip((c+516*d+128)>>8)
		}
	}
}
