package lab

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/encoder"
	"github.com/nuvirahub/latencylab/scenarios"
)

// lowRate is what a session at a low target sent, from its tenth second
// on (the rate control's buffer has long settled).
type lowRate struct {
	fps, bytesPerFrame, sentBps float64
	// deliveredBps is everything the downlink delivered, videoBps the
	// frames that arrived; the rest is the packets' overhead (QUIC's
	// headers, the lab's frame header, acknowledgements).
	deliveredBps, videoBps float64
	skipped                int // captures the rate control skipped
	latencyMedian          time.Duration
}

func (l lowRate) overheadBps() float64 { return l.deliveredBps - l.videoBps }

// The encoder at targets too low for a frame of useful size at every
// refresh (docs/codecs.md, frame skipping): a full-screen animation over a
// 100 kbit/s link, 20 ms each way, at 50 and 100 kbit/s. The frames keep
// their smallest size, 320 bytes, the rate control skips captures, and
// the video sent is the target: 19.5 frames/s at 50 kbit/s, 39 at 100.
// The packets' overhead is then about a fifth of what the link carries.
// At 100 kbit/s the video and its overhead are more than the link: the
// queue grows until the send cap holds it.
func TestLowBitrateFrameSkipping(t *testing.T) {
	const from = 10 * time.Second
	for _, target := range []int64{50_000, 100_000} {
		sc := &scenarios.Scenario{Name: "low", Seed: 1, Duration: 30 * time.Second,
			Network:    both(scenarios.Phase{Delay: 20 * ms, Rate: 100_000}),
			Controller: scenarios.Controller{Kind: "fixed", Bitrate: target}, Agent: budget}
		r := runScenario(t, sc)
		var l lowRate
		var frames, bytes int
		for _, f := range r.Frames {
			if f.Sent >= from {
				frames++
				bytes += f.Bytes
			}
			if f.Arrived >= from {
				l.videoBps += float64(8 * f.Bytes)
			}
		}
		secs := (r.Ran - from).Seconds()
		for _, pt := range r.Series {
			if pt.From >= from {
				l.deliveredBps += pt.Down.ThroughputBps * (pt.To - pt.From).Seconds()
			}
		}
		l.deliveredBps /= secs
		l.videoBps /= secs
		l.fps = float64(frames) / secs
		l.bytesPerFrame = float64(bytes) / float64(frames)
		l.sentBps = float64(8*bytes) / secs
		l.skipped = int(measured(t, r, "frames.skipped.rate-control", from, 0))
		l.latencyMedian = time.Duration(measured(t, r, "latency.median", from, 0) * float64(time.Second))
		t.Logf("target %3d kbit/s: %.1f frames/s of %.0f bytes, sent %.1f kbit/s (%.2fx the target), %d captures skipped; the link carried %.1f kbit/s, %.1f of them overhead (%.0f%%); latency median %v",
			target/1000, l.fps, l.bytesPerFrame, l.sentBps/1000, l.sentBps/float64(target), l.skipped,
			l.deliveredBps/1000, l.overheadBps()/1000, 100*l.overheadBps()/l.deliveredBps, l.latencyMedian.Round(time.Millisecond))

		smallest := float64(encoder.DefaultMinFrameBytes + encoder.DefaultOverheadBytes)
		require.Equal(t, smallest, l.bytesPerFrame)
		require.InDelta(t, float64(target)/(8*smallest), l.fps, 0.02*l.fps)
		require.InDelta(t, float64(target), l.sentBps, 0.01*float64(target))
		require.Positive(t, l.skipped)
		require.Less(t, l.overheadBps()/l.deliveredBps, 0.25)
	}
}
