package calibrate

import (
	"fmt"
	"strings"
	"time"

	"github.com/nuvirahub/latencylab/agent/codec"
	"github.com/nuvirahub/latencylab/agent/encoder/openh264"
	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/agent/screen/recording"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// RealRecorded runs OpenH264 over a recorded screen as the agent's
// capture sees it: at every tick of Rate, if the recording has a frame
// newer than the one last offered that changed pixels (the index's
// Changed above 0: damage redrawn the same is no new picture, as the
// screen model's Recording has it), its newest frame so far is offered
// (converted to I420 as the painter's pictures are), timestamped with the
// tick; a frame the rate control skipped is offered again at the next
// tick, as the agent offers the screen again. It runs for length or the
// recording's duration, whichever is shorter, at the target bitrate, with
// frame skipping as the openh264-real preset has it (off with noSkip).
func RealRecorded(rec *recording.Recording, bitrate int, length time.Duration, noSkip bool) ([]Frame, error) {
	w, h := rec.Meta.Width&^1, rec.Meta.Height&^1
	enc, err := openh264.NewEncoder(openh264.Params{Width: w, Height: h, Bitrate: bitrate, FrameRate: openh264.FrameRate, FrameSkip: !noSkip})
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	play, err := rec.Play()
	if err != nil {
		return nil, err
	}
	defer play.Close()
	length = min(length, rec.Duration())
	pic := yuv.New(w, h)
	rgb := make([]uint32, w*h)
	var cur *codec.Frame
	next := 0      // the recording's next frame to decode
	offered := -1  // the frame last encoded (not skipped)
	fresh := -1    // the newest frame that changed pixels (or the first)
	var buf []byte // the encoder's output
	var out []Frame
	for k := int64(0); ; k++ {
		at := screen.Tick(k, Rate)
		if at >= length {
			break
		}
		// Decode up to the newest frame taken at or before the tick.
		for next < len(rec.Frames) && rec.Frames[next].At <= at {
			i, f, err := play.Next()
			if err != nil {
				return nil, err
			}
			cur, next = f, i+1
			if i == 0 || rec.Frames[i].Changed > 0 {
				fresh = i
			}
		}
		if cur == nil || fresh == offered {
			continue
		}
		crop(rgb, cur, w, h)
		pic.FromRGB(rgb, w, h)
		var typ openh264.FrameType
		buf, typ, err = enc.Encode(buf[:0], pic, at)
		if err != nil {
			return nil, err
		}
		if typ == openh264.Skipped {
			out = append(out, Frame{At: at, Skipped: true, Bitrate: bitrate})
			continue
		}
		offered = fresh
		out = append(out, Frame{At: at, Bytes: len(buf), Keyframe: typ.Keyframe(), Bitrate: bitrate})
	}
	return out, nil
}

// crop copies the top left w x h pixels of f (w and h are f's sides or
// one less, to make them even) into dst.
func crop(dst []uint32, f *codec.Frame, w, h int) {
	for y := range h {
		copy(dst[y*w:(y+1)*w], f.Pix[y*f.W:y*f.W+w])
	}
}

// RecordedRow is what OpenH264 made of one recording at one target.
type RecordedRow struct {
	// Name is the recording's file name without its folder.
	Name, Kind string
	Bitrate    int
	// Changes is how many frames a second the recording offered (its
	// changes, at most Rate), Encoded how many the encoder coded and
	// SkipRate the share of offers it skipped, from Warmup on.
	Changes, Encoded, SkipRate float64
	// Sent is the bits a second the encoder sent from Warmup on.
	Sent float64
	// Summary is the size experiment's summary of the run.
	Summary Summary
}

// RecordedWarmup is when a recorded run's figures start counting: OpenH264's
// first keyframe is paid for by then at the targets measured.
const RecordedWarmup = 2 * time.Second

// changes counts the ticks of Rate in [from, end) at which the recording
// has a frame taken since the tick before that changed pixels: the new
// pictures a capture at Rate sees.
func changes(rec *recording.Recording, from, end time.Duration) int {
	n, i := 0, 0
	for k := int64(0); ; k++ {
		at := screen.Tick(k, Rate)
		if at >= end {
			return n
		}
		fresh := false
		for i < len(rec.Frames) && rec.Frames[i].At <= at {
			fresh = fresh || i == 0 || rec.Frames[i].Changed > 0
			i++
		}
		if fresh && at >= from {
			n++
		}
	}
}

// RecordedTable is the rows as a markdown table.
func RecordedTable(rows []RecordedRow) string {
	var b strings.Builder
	b.WriteString("| recording | kind | target | sent | sent / target | frames coded a second | skipped | first keyframe | P frames, median |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %.2g Mbit/s | %.2f Mbit/s | %.2f | %.1f | %s | %.1f KB | %.1f KB |\n",
			r.Name, r.Kind, float64(r.Bitrate)/1e6, r.Sent/1e6, r.Sent/float64(r.Bitrate), r.Encoded, pct(r.SkipRate),
			float64(r.Summary.IBytes)/1000, r.Summary.PBytes/1000)
	}
	return b.String()
}
