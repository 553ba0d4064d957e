package groundtruth

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRecorderKeepsFramesAndEvents(t *testing.T) {
	r := New()
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for seq := uint64(1); seq <= 50; seq++ {
		wg.Go(func() {
			r.Update(seq, func(f *Frame) { f.Captured = t0 })
			r.Update(seq, func(f *Frame) {
				f.EncodeEnd = t0.Add(10 * time.Millisecond)
				f.Arrived = t0.Add(30 * time.Millisecond)
				f.Displayed = t0.Add(38 * time.Millisecond)
			})
		})
	}
	wg.Wait()
	r.Event(Event{Kind: "skip", Reason: "send-cap"})
	r.Event(Event{Kind: "skip", Reason: "send-cap"})
	r.Event(Event{Kind: "drop", Reason: "overtaken"})
	fs := r.Frames()
	require.Len(t, fs, 50)
	for i, f := range fs {
		require.Equal(t, uint64(i+1), f.Seq)
		require.Equal(t, 38*time.Millisecond, f.Latency())
		require.Equal(t, 20*time.Millisecond, f.Network())
	}
	require.Equal(t, 2, r.Count("skip", "send-cap"))
	require.Equal(t, 1, r.Count("drop", ""))
	var none *Recorder
	none.Update(1, func(*Frame) { t.Fatal("a nil recorder records nothing") })
	require.Nil(t, none.Frames())
}
