package netem

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// outageSend sends one packet every gap from the epoch until end (exclusive),
// numbering them in their first two bytes, then lets the link drain.
func outageSend(t *testing.T, l *Link, epoch time.Time, gap, end time.Duration) int {
	t.Helper()
	n := 0
	for at := time.Duration(0); at < end; at += gap {
		time.Sleep(time.Until(epoch.Add(at)))
		require.NoError(t, l.Send(&Packet{Data: []byte{byte(n >> 8), byte(n), 0, 0}}))
		n++
	}
	time.Sleep(10 * time.Second)
	synctest.Wait()
	return n
}

func TestOutageDropPeriodic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		o := &Outage{Every: time.Second, Duration: 200 * time.Millisecond, Offset: 300 * time.Millisecond}
		l, rec := newTestLink(t, LinkConfig{Epoch: epoch, Impairments: []Impairment{&Delay{Delay: 10 * time.Millisecond}, o}})
		n := outageSend(t, l, epoch, 50*time.Millisecond, 3*time.Second)
		require.Equal(t, 60, n)

		dark := func(off time.Duration) bool {
			return off >= 300*time.Millisecond && (off-300*time.Millisecond)%time.Second < 200*time.Millisecond
		}
		var wantSent []time.Duration
		for at := time.Duration(0); at < 3*time.Second; at += 50 * time.Millisecond {
			if !dark(at) {
				wantSent = append(wantSent, at)
			}
		}
		got := rec.arrivals()
		require.Len(t, got, len(wantSent))
		for i, a := range got {
			require.Equal(t, wantSent[i], a.P.Sent.Sub(epoch))
			require.Equal(t, 10*time.Millisecond, a.At.Sub(a.P.Sent), "no delay added outside the windows")
		}
		// Sent at 300, 350, 400, 450 ms in each of the three windows; 500 ms
		// is the first instant after one.
		require.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}, []time.Duration{wantSent[5], wantSent[6]})
		s := l.Stats()
		require.Equal(t, Counter{Packets: 12, Bytes: 48}, s.Dropped[DropOutage])
		require.Equal(t, Counter{Packets: 48, Bytes: 192}, s.Delivered)
	})
}

func TestOutageHoldExplicitWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		o := &Outage{
			Windows: []OutageWindow{{Start: 100 * time.Millisecond, Duration: 250 * time.Millisecond}, {Start: time.Second, Duration: 100 * time.Millisecond}},
			Mode:    OutageHold,
		}
		l, rec := newTestLink(t, LinkConfig{Epoch: epoch, Impairments: []Impairment{o, &Delay{Delay: 20 * time.Millisecond}}})
		n := outageSend(t, l, epoch, 10*time.Millisecond, 1500*time.Millisecond)
		got := rec.arrivals()
		require.Len(t, got, n, "hold loses nothing")
		for i, a := range got {
			require.Equal(t, i, int(a.P.Data[0])<<8|int(a.P.Data[1]), "held packets leave in order")
			sent := a.P.Sent.Sub(epoch)
			want := sent + 20*time.Millisecond
			switch {
			case sent >= 100*time.Millisecond && sent < 350*time.Millisecond:
				want = 370 * time.Millisecond
			case sent >= time.Second && sent < 1100*time.Millisecond:
				want = 1120 * time.Millisecond
			}
			require.Equal(t, want, a.At.Sub(epoch), "packet sent at %v", sent)
		}
		s := l.Stats()
		require.Empty(t, s.Dropped)
		require.Equal(t, s.Offered, s.Delivered)
	})
}

func TestOutageHoldPeriodicReleasesAtWindowEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		o := &Outage{Every: 500 * time.Millisecond, Duration: 100 * time.Millisecond, Mode: OutageHold}
		l, rec := newTestLink(t, LinkConfig{Epoch: epoch, Impairments: []Impairment{o}})
		outageSend(t, l, epoch, 25*time.Millisecond, time.Second)
		for _, a := range rec.arrivals() {
			sent := a.P.Sent.Sub(epoch)
			want := sent
			if sent%(500*time.Millisecond) < 100*time.Millisecond {
				want = sent - sent%(500*time.Millisecond) + 100*time.Millisecond
			}
			require.Equal(t, want, a.At.Sub(epoch), "packet sent at %v", sent)
		}
	})
}

func TestOutageActive(t *testing.T) {
	explicit := &Outage{Windows: []OutageWindow{{Start: time.Second, Duration: time.Second}, {Start: 2 * time.Second, Duration: 500 * time.Millisecond}, {Start: 5 * time.Second, Duration: time.Millisecond}}}
	periodic := &Outage{Every: time.Second, Duration: 100 * time.Millisecond, Offset: 50 * time.Millisecond}
	always := &Outage{Every: time.Second, Duration: time.Second}
	for _, tc := range []struct {
		o    *Outage
		off  time.Duration
		want OutageWindow
		dark bool
	}{
		{explicit, 0, OutageWindow{}, false},
		{explicit, time.Second - 1, OutageWindow{}, false},
		{explicit, time.Second, OutageWindow{time.Second, time.Second}, true},
		{explicit, 2*time.Second - 1, OutageWindow{time.Second, time.Second}, true},
		{explicit, 2 * time.Second, OutageWindow{2 * time.Second, 500 * time.Millisecond}, true},
		{explicit, 2500 * time.Millisecond, OutageWindow{}, false},
		{explicit, 5 * time.Second, OutageWindow{5 * time.Second, time.Millisecond}, true},
		{explicit, time.Hour, OutageWindow{}, false},
		{periodic, 0, OutageWindow{}, false},
		{periodic, 50 * time.Millisecond, OutageWindow{50 * time.Millisecond, 100 * time.Millisecond}, true},
		{periodic, 150 * time.Millisecond, OutageWindow{}, false},
		{periodic, 3*time.Second + 149*time.Millisecond, OutageWindow{3050 * time.Millisecond, 100 * time.Millisecond}, true},
		{periodic, -time.Second, OutageWindow{}, false},
		{always, 0, OutageWindow{0, time.Second}, true},
		{always, 7*time.Second + 999*time.Millisecond, OutageWindow{7 * time.Second, time.Second}, true},
	} {
		w, dark := tc.o.Active(tc.off)
		require.Equal(t, tc.dark, dark, "%+v at %v", tc.o, tc.off)
		if dark {
			require.Equal(t, tc.want, w, "%+v at %v", tc.o, tc.off)
		}
	}
}

func TestOutageValidate(t *testing.T) {
	require.NoError(t, (&Outage{Every: time.Second, Duration: time.Second}).Validate(), "Duration == Every: always dark")
	require.NoError(t, (&Outage{Windows: []OutageWindow{{0, time.Second}, {time.Second, time.Second}}, Mode: OutageHold}).Validate(), "adjacent windows")
	for name, tc := range map[string]struct {
		o    Outage
		want string
	}{
		"nothing":              {Outage{}, "no windows and no period"},
		"unknown mode":         {Outage{Every: time.Second, Duration: time.Millisecond, Mode: "pause"}, `unknown mode "pause"`},
		"both":                 {Outage{Every: time.Second, Duration: time.Millisecond, Windows: []OutageWindow{{0, 1}}}, "not both"},
		"negative every":       {Outage{Every: -time.Second, Duration: time.Millisecond}, "every -1s is negative"},
		"negative duration":    {Outage{Every: time.Second, Duration: -time.Millisecond}, "duration -1ms is negative"},
		"negative offset":      {Outage{Every: time.Second, Duration: time.Millisecond, Offset: -1}, "offset -1ns is negative"},
		"no period":            {Outage{Duration: time.Millisecond}, "every must be positive"},
		"no duration":          {Outage{Every: time.Second}, "duration must be positive"},
		"duration > every":     {Outage{Every: time.Second, Duration: 2 * time.Second}, "duration 2s is longer than every 1s"},
		"negative start":       {Outage{Windows: []OutageWindow{{-time.Second, time.Second}}}, "window 0: start -1s is negative"},
		"negative window":      {Outage{Windows: []OutageWindow{{time.Second, -time.Second}}}, "window 0: duration -1s is not positive"},
		"empty window":         {Outage{Windows: []OutageWindow{{time.Second, 0}}}, "window 0: duration 0s is not positive"},
		"overlapping windows":  {Outage{Windows: []OutageWindow{{0, 2 * time.Second}, {time.Second, time.Second}}}, "window 1 starts at 1s, before window 0 ends at 2s"},
		"windows out of order": {Outage{Windows: []OutageWindow{{5 * time.Second, time.Second}, {time.Second, time.Second}}}, "window 1 starts at 1s, before window 0 ends"},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorContains(t, tc.o.Validate(), tc.want)
			_, err := NewLink(LinkConfig{Impairments: []Impairment{&tc.o}}, func(*Packet) {})
			require.ErrorContains(t, err, "outage: ")
		})
	}
}

func TestOutageRegistered(t *testing.T) {
	imp, err := New("outage")
	require.NoError(t, err)
	require.IsType(t, &Outage{}, imp)
	require.Equal(t, StageGate, imp.Stage())
}
