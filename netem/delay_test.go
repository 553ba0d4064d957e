package netem

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDelayIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{&Delay{Delay: 25 * time.Millisecond}}})
		start := time.Now()
		for i := range 10 {
			require.NoError(t, l.Send(&Packet{Data: []byte{byte(i)}}))
			time.Sleep(3 * time.Millisecond) // virtual: spaces the packets
		}
		time.Sleep(time.Second)
		synctest.Wait()
		got := rec.arrivals()
		require.Len(t, got, 10)
		for i, a := range got {
			require.Equal(t, byte(i), a.P.Data[0])
			require.Equal(t, 25*time.Millisecond, a.At.Sub(a.P.Sent))
			require.Equal(t, start.Add(time.Duration(i)*3*time.Millisecond), a.P.Sent)
		}
		s := l.Stats()
		require.Equal(t, Counter{Packets: 10, Bytes: 10}, s.Offered)
		require.Equal(t, s.Offered, s.Delivered)
		require.Zero(t, s.InFlight)
	})
}

func TestDelayRefusesNegative(t *testing.T) {
	_, err := NewLink(LinkConfig{Impairments: []Impairment{&Delay{Delay: -time.Millisecond}}}, func(*Packet) {})
	require.ErrorContains(t, err, "negative")
}

func TestTimelineChangesAtTheConfiguredInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{
			Impairments: []Impairment{&Delay{Delay: 10 * time.Millisecond}},
			Timeline: []Phase{
				{At: 100 * time.Millisecond, Impairments: []Impairment{&Delay{Delay: 50 * time.Millisecond}}},
				{At: 200 * time.Millisecond, Impairments: []Impairment{&Delay{Delay: 60 * time.Millisecond}}},
			},
		})
		start := time.Now()
		for range 30 {
			require.NoError(t, l.Send(&Packet{Data: []byte{0}}))
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Second)
		for _, a := range rec.arrivals() {
			sent := a.P.Sent.Sub(start)
			want := 10 * time.Millisecond
			switch {
			case sent >= 200*time.Millisecond:
				want = 60 * time.Millisecond
			case sent >= 100*time.Millisecond:
				want = 50 * time.Millisecond
			}
			require.Equal(t, want, a.At.Sub(a.P.Sent), "packet sent at %v", sent)
		}
	})
}

func TestSetReplacesImpairmentsForLaterPacketsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, rec := newTestLink(t, LinkConfig{Impairments: []Impairment{&Delay{Delay: 40 * time.Millisecond}}})
		require.NoError(t, l.Send(&Packet{Data: []byte{1}}))
		time.Sleep(time.Millisecond)
		require.NoError(t, l.Set([]Impairment{&Delay{Delay: 100 * time.Millisecond}}))
		require.NoError(t, l.Send(&Packet{Data: []byte{2}}))
		time.Sleep(time.Second)
		got := rec.arrivals()
		require.Len(t, got, 2)
		require.Equal(t, 40*time.Millisecond, got[0].At.Sub(got[0].P.Sent))
		require.Equal(t, 100*time.Millisecond, got[1].At.Sub(got[1].P.Sent))
		require.Error(t, l.Set([]Impairment{&Delay{Delay: -1}}), "an invalid set is refused")
	})
}

func TestCloseCountsPacketsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := NewLink(LinkConfig{Impairments: []Impairment{&Delay{Delay: time.Second}}}, func(*Packet) {})
		require.NoError(t, err)
		require.NoError(t, l.Send(&Packet{Data: make([]byte, 100)}))
		require.NoError(t, l.Close())
		require.Equal(t, Counter{1, 100}, l.Stats().Dropped[DropClosed])
		require.ErrorIs(t, l.Send(&Packet{}), ErrClosed)
	})
}

func TestUnknownKindIsAnError(t *testing.T) {
	_, err := New("teleport")
	require.ErrorContains(t, err, `unknown impairment "teleport"`)
	d, err := New("delay")
	require.NoError(t, err)
	require.IsType(t, &Delay{}, d)
}

// A link with a fixed delay, inside a synctest bubble so the 25 ms pass in
// no wall time at all.
func ExampleLink() {
	synctest.Test(&testing.T{}, func(*testing.T) {
		done := make(chan time.Time, 1)
		l, _ := NewLink(LinkConfig{
			Name:        "uplink",
			Impairments: []Impairment{&Delay{Delay: 25 * time.Millisecond}},
		}, func(p *Packet) { done <- time.Now() })
		defer l.Close()
		start := time.Now()
		l.Send(&Packet{Data: []byte("hello")})
		fmt.Println((<-done).Sub(start))
	})
	// Output: 25ms
}
