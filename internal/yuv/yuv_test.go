package yuv

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPSNRKnownAnswers(t *testing.T) {
	a := New(4, 2)
	b := a.Clone()
	require.Equal(t, MaxPSNR, PSNR(a, b), "identical pictures")
	// One luma sample of eight off by 16: MSE 256/8 = 32.
	b.Y[3] += 16
	require.InDelta(t, 10*math.Log10(255*255/32.0), PSNR(a, b), 1e-9)
	// Chroma does not count.
	c := a.Clone()
	c.U[0] = 0
	require.Equal(t, MaxPSNR, PSNR(a, c))
}

func TestFromRGB(t *testing.T) {
	p := New(2, 2)
	white := []uint32{0xffffff, 0xffffff, 0xffffff, 0xffffff}
	p.FromRGB(white, 2, 2)
	require.Equal(t, []byte{235, 235, 235, 235}, p.Y, "BT.601 limited range: white is 235")
	require.Equal(t, []byte{128}, p.U)
	require.Equal(t, []byte{128}, p.V)
	p.FromRGB([]uint32{0, 0, 0, 0}, 2, 2)
	require.Equal(t, []byte{16, 16, 16, 16}, p.Y)
	red := []uint32{0xff0000, 0xff0000, 0xff0000, 0xff0000}
	p.FromRGB(red, 2, 2)
	require.Equal(t, byte(82), p.Y[0])
	require.Equal(t, byte(240), p.V[0])
}

func TestNewRefusesOddSizes(t *testing.T) {
	require.Panics(t, func() { New(3, 2) })
	require.Panics(t, func() { New(2, 0) })
}

// ToRGB undoes FromRGB within the rounding of the integer matrices on flat
// colours, and keeps the padding byte zero.
func TestToRGB(t *testing.T) {
	p := New(2, 2)
	out := make([]uint32, 4)
	for _, c := range []uint32{0x000000, 0xffffff, 0xff0000, 0x00ff00, 0x0000ff, 0x808080, 0x123456} {
		p.FromRGB([]uint32{c, c, c, c}, 2, 2)
		p.ToRGB(out)
		for _, got := range out {
			require.Zero(t, got>>24)
			for sh := 0; sh < 24; sh += 8 {
				require.InDelta(t, float64(c>>sh&0xff), float64(got>>sh&0xff), 3, "colour %06x, got %06x", c, got)
			}
		}
	}
}
