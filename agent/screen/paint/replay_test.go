package paint

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/agent/screen"
	"github.com/nuvirahub/latencylab/internal/yuv"
)

// TestModelReplaysRecording: the screen model's recording phase and the
// painter together give the recorded pixels at every version, the first
// frame again when the recording plays again.
func TestModelReplaysRecording(t *testing.T) {
	rec, frames := noiseRecording(t, 192, 108, 3)
	m := model(t, 1, screen.Phase{Source: screen.Recording{Recording: rec}})
	p, err := New(1, m, Config{Width: 192, Height: 108})
	require.NoError(t, err)
	end := rec.Duration() + 10*time.Millisecond
	require.Equal(t, []time.Duration{0, time.Second, 2 * time.Second, screen.NextTick(rec.Duration(), 60)}, m.Changes(end))
	for v, want := range []int{0, 1, 2, 0} {
		pic, err := p.Paint(uint64(v + 1))
		require.NoError(t, err)
		exp := yuv.New(192, 108)
		exp.FromRGB(frames[want].Pix, 192, 108)
		require.True(t, yuv.Equal(exp, pic), "version %d shows frame %d", v+1, want)
	}
}
