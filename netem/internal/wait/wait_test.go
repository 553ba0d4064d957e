package wait

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// conn is the smallest user of the package: a mutex, a signal and
// deadlines, and a reader that waits for a value or its deadline.
type conn struct {
	mu       sync.Mutex
	changed  Signal
	deadline Deadlines
	value    int
}

func newConn() *conn {
	c := &conn{}
	c.deadline = Deadlines{Mu: &c.mu, Changed: &c.changed}
	return c
}

// read returns the value once it is set, or false once the read deadline
// has passed.
func (c *conn) read() (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.value == 0 {
		if Passed(c.deadline.Read) {
			return 0, false
		}
		changed, deadline := c.changed.Wait(), c.deadline.Read
		c.mu.Unlock()
		Until(changed, deadline)
		c.mu.Lock()
	}
	return c.value, true
}

func TestBroadcastWakesReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConn()
		got := make(chan int)
		go func() {
			v, _ := c.read()
			got <- v
		}()
		synctest.Wait() // the reader is asleep
		time.Sleep(time.Hour)
		c.mu.Lock()
		c.value = 7
		c.changed.Broadcast()
		c.mu.Unlock()
		require.Equal(t, 7, <-got)
	})
}

func TestReadDeadlineTimesOutOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newConn()
		start := time.Now()
		require.NoError(t, c.deadline.SetReadDeadline(start.Add(3*time.Second)))
		_, ok := c.read()
		require.False(t, ok)
		require.Equal(t, 3*time.Second, time.Since(start))
	})
}

func TestMovingTheReadDeadlineWakesReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Deadlines, time.Time) error
	}{
		{"SetReadDeadline", (*Deadlines).SetReadDeadline},
		{"SetDeadline", (*Deadlines).SetDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newConn()
				start := time.Now()
				done := make(chan bool)
				go func() {
					_, ok := c.read()
					done <- ok
				}()
				synctest.Wait() // asleep with no deadline
				require.NoError(t, tc.set(&c.deadline, start.Add(time.Second)))
				require.False(t, <-done)
				require.Equal(t, time.Second, time.Since(start))
			})
		})
	}
}

func TestSetWriteDeadline(t *testing.T) {
	c := newConn()
	at := time.Unix(100, 0)
	require.NoError(t, c.deadline.SetWriteDeadline(at))
	require.Equal(t, at, c.deadline.Write)
	require.True(t, c.deadline.Read.IsZero())
	require.NoError(t, c.deadline.SetDeadline(at.Add(time.Second)))
	require.Equal(t, at.Add(time.Second), c.deadline.Read)
	require.Equal(t, at.Add(time.Second), c.deadline.Write)
}

func TestPassed(t *testing.T) {
	require.False(t, Passed(time.Time{}), "no deadline")
	require.True(t, Passed(time.Now().Add(-time.Second)))
	require.False(t, Passed(time.Now().Add(time.Hour)))
	// A deadline passes at its instant, not after it (net.Conn's): in a
	// bubble, whose clock stands still, now is the deadline.
	synctest.Test(t, func(t *testing.T) {
		require.True(t, Passed(time.Now()))
		require.False(t, Passed(time.Now().Add(time.Nanosecond)))
	})
}
