package clock

import (
	"testing"
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
