package encoder

import (
	"errors"

	"github.com/nuvirahub/latencylab/internal/yuv"
)

// PixelEncoder is an encoder of real pixels (a real H.264 encoder): the
// agent paints every image it encodes (agent/screen/paint) at the size it
// asks for and hands it over in Input.Picture, and its frames carry their
// bitstream (Frame.Data), which the viewer decodes with the decoder it
// makes.
type PixelEncoder interface {
	Encoder
	// PictureSize is the size of the pictures it takes.
	PictureSize() (w, h int)
	// NewDecoder starts a decoder of its frames, for the viewer.
	NewDecoder() (PictureDecoder, error)
}

// PictureDecoder decodes the frames of a PixelEncoder, in order.
type PictureDecoder interface {
	// Decode decodes one frame's bitstream into dst; got tells whether it
	// yielded a picture, needKeyframe whether the decoder cannot go on
	// correctly without a keyframe (a frame before it was lost).
	Decode(data []byte, dst *yuv.I420) (got, needKeyframe bool, err error)
	// Close ends the decoder.
	Close() error
}

// ErrSkipped is returned by Encode (or Refine) when the encoder's own rate
// control dropped the image (or the pass) to stay within the bitrate (a
// real encoder's frame skipping, the H.264 model's SkipByFrames): no
// frame, and the changes are still to be sent.
var ErrSkipped = errors.New("encoder: frame skipped by the rate control")
