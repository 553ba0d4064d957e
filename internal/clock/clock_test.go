package clock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClockRunsOffTrueTime(t *testing.T) {
	epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(3*time.Second, 50, epoch)
	require.Equal(t, epoch.Add(3*time.Second), c.At(epoch))
	// 50 ppm over 100 s is 5 ms.
	require.Equal(t, epoch.Add(103*time.Second+5*time.Millisecond), c.At(epoch.Add(100*time.Second)))
	for _, d := range []time.Duration{0, time.Second, 100 * time.Second, time.Hour} {
		tr := epoch.Add(d)
		require.WithinDuration(t, tr, c.True(c.At(tr)), time.Microsecond)
	}
	var perfect *Clock
	require.Equal(t, epoch, perfect.At(epoch))
}

func TestSleepUntilIsExactAndStopsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		require.True(t, SleepUntil(context.Background(), start.Add(25*time.Millisecond)))
		require.Equal(t, 25*time.Millisecond, time.Since(start))
		require.True(t, SleepUntil(context.Background(), start), "a past instant returns at once")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		require.False(t, SleepUntil(ctx, time.Now().Add(time.Hour)))
		require.Equal(t, 35*time.Millisecond, time.Since(start))
	})
}
