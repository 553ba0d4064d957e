package screendrive

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/codec"
)

// fakeDisplay keeps what is put on it.
type fakeDisplay struct{ pix *codec.Frame }

func (d *fakeDisplay) Put(f *codec.Frame, rects []codec.Rect) error {
	if d.pix == nil {
		d.pix = codec.NewFrame(f.W, f.H)
	}
	for _, r := range rects {
		for y := r.Y; y < r.Y+r.H; y++ {
			copy(d.pix.Pix[y*f.W+r.X:y*f.W+r.X+r.W], f.Pix[y*f.W+r.X:y*f.W+r.X+r.W])
		}
	}
	return nil
}

func (d *fakeDisplay) Sync() error { return nil }

// drawAll draws every version of a seed's mixed 2 s screen on a fake
// display and hashes the display after each, with its marker read back.
func drawAll(t *testing.T, seed uint64) (sums [][32]byte) {
	tl, err := Timeline("mix", 2*time.Second)
	require.NoError(t, err)
	f, err := New(Config{Width: 320, Height: 180, Timeline: tl, Seed: seed})
	require.NoError(t, err)
	d := &fakeDisplay{}
	err = Drive(context.Background(), d, f, time.Now(), 2*time.Second, 0, false, func(dr Drawn) {
		v, ok := Read(d.pix)
		require.True(t, ok, "version %d: marker", dr.Version)
		require.Equal(t, uint32(dr.Version), v)
		require.Equal(t, uint64(len(sums)+1), dr.Version, "every version in turn")
		b := make([]byte, 0, 4*len(d.pix.Pix))
		for _, p := range d.pix.Pix {
			b = binary.LittleEndian.AppendUint32(b, p)
		}
		sums = append(sums, sha256.Sum256(b))
	})
	require.NoError(t, err)
	return sums
}

// The same seed draws the same frames, another seed others; the drawn
// display (dirty rectangles applied on the last) is the painted frame.
func TestDeterministicPerSeed(t *testing.T) {
	a, b, c := drawAll(t, 1), drawAll(t, 1), drawAll(t, 2)
	require.Greater(t, len(a), 30, "2 s of a mixed screen at 30 Hz is dozens of versions")
	require.Equal(t, a, b)
	require.NotEqual(t, a[0], c[0], "another seed, another desktop")
}

// A still screen has one version, the desktop.
func TestStillHasOneVersion(t *testing.T) {
	tl, err := Timeline("still", time.Second)
	require.NoError(t, err)
	f, err := New(Config{Timeline: tl, Seed: 1})
	require.NoError(t, err)
	n := 0
	require.NoError(t, Drive(context.Background(), &fakeDisplay{}, f, time.Now(), time.Second, 0, false, func(Drawn) { n++ }))
	require.Equal(t, 1, n)
	_, err = Timeline("juggling", time.Second)
	require.ErrorContains(t, err, "mix, still")
}

// Stamp and Read round-trip any 24-bit number; a torn or absent marker
// reads as none.
func TestMarker(t *testing.T) {
	f := codec.NewFrame(MarkerWidth, MarkerHeight)
	for _, n := range []uint32{0, 1, 0xABCDEF, 1<<24 - 1} {
		Stamp(f, n)
		got, ok := Read(f)
		require.True(t, ok)
		require.Equal(t, n, got)
	}
	Stamp(f, 5)
	f.Pix[MarkerBlock*f.W] ^= 0xFFFFFF // the inverse row's first block, half changed
	_, ok := Read(f)
	require.False(t, ok)
	Stamp(f, 5)
	for y := MarkerBlock; y < MarkerHeight; y++ { // the last bit's two rows agree: torn
		for x := MarkerWidth - MarkerBlock; x < MarkerWidth; x++ {
			f.Pix[y*f.W+x] = f.Pix[x]
		}
	}
	_, ok = Read(f)
	require.False(t, ok)
	_, ok = Read(codec.NewFrame(MarkerWidth, MarkerHeight))
	require.False(t, ok, "a black corner is no marker")
	// A block of one colour that is neither black nor white (a scaled or
	// blended marker) is no bit, even with its inverse below it: here the
	// first bit's black block turned grey.
	Stamp(f, 5)
	for y := range MarkerBlock {
		for x := range MarkerBlock {
			f.Pix[y*f.W+x] = 0x808080
		}
	}
	_, ok = Read(f)
	require.False(t, ok, "a grey block")
}
