package yuv

import "fmt"

// SSIM constants for 8-bit samples (Wang et al., 2004): C1 = (0.01 x 255)^2
// and C2 = (0.03 x 255)^2, scaled as ssimWindow needs them for sums over 64
// samples (C2 with the unbiased variance's 63 as well), as x264's and
// ffmpeg's ssim filter compute them, so that the lab's figure and ffmpeg's
// can be compared directly.
const (
	ssimC1 = 0.01 * 0.01 * 255 * 255 * 64
	ssimC2 = 0.03 * 0.03 * 255 * 255 * 64 * 63
)

// blockSums are the sums over one 4x4 block of two planes: the samples of
// each, the squares of both, and the products.
type blockSums struct{ a, b, squares, products int64 }

// SSIM is the structural similarity of the luma of got against want, from
// 0 (unrelated) to 1 (identical): the mean over every 8x8 window, the
// windows stepping 4 samples, of SSIM's luminance, contrast and structure
// terms, as ffmpeg's ssim filter computes it. Beside PSNR, it reads what
// the eye reads in a damaged picture: edges and texture in the wrong place
// rather than the size of the error. Pictures smaller than 8x8 have no
// window and give 1 when identical, 0 otherwise. It panics on pictures of
// different sizes, a programming error.
func SSIM(want, got *I420) float64 {
	if want.W != got.W || want.H != got.H {
		panic(fmt.Sprintf("yuv: SSIM of a %dx%d picture against a %dx%d one", got.W, got.H, want.W, want.H))
	}
	bw, bh := want.W/4, want.H/4
	if bw < 2 || bh < 2 {
		if Equal(want, got) {
			return 1
		}
		return 0
	}
	// Two rows of block sums at a time: a window is 2x2 blocks.
	rows := [2][]blockSums{make([]blockSums, bw), make([]blockSums, bw)}
	sumRow := func(by int, out []blockSums) {
		for bx := range out {
			var s blockSums
			for y := by * 4; y < by*4+4; y++ {
				off := y*want.W + bx*4
				for x := off; x < off+4; x++ {
					a, b := int64(want.Y[x]), int64(got.Y[x])
					s.a += a
					s.b += b
					s.squares += a*a + b*b
					s.products += a * b
				}
			}
			out[bx] = s
		}
	}
	sumRow(0, rows[0])
	var total float64
	for by := 1; by < bh; by++ {
		sumRow(by, rows[1])
		for bx := 0; bx+1 < bw; bx++ {
			var w blockSums
			for _, s := range [4]blockSums{rows[0][bx], rows[0][bx+1], rows[1][bx], rows[1][bx+1]} {
				w.a += s.a
				w.b += s.b
				w.squares += s.squares
				w.products += s.products
			}
			total += ssimWindow(w)
		}
		rows[0], rows[1] = rows[1], rows[0]
	}
	return total / float64((bw-1)*(bh-1))
}

// ssimWindow is SSIM over one window of 64 samples from its sums.
func ssimWindow(s blockSums) float64 {
	a, b := float64(s.a), float64(s.b)
	variances := float64(s.squares)*64 - a*a - b*b
	covariance := float64(s.products)*64 - a*b
	return (2*a*b + ssimC1) * (2*covariance + ssimC2) / ((a*a + b*b + ssimC1) * (variances + ssimC2))
}
