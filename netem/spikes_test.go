package netem

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nuvirahub/latencylab/internal/seeded"
	"github.com/stretchr/testify/require"
)

// spikesSendEvery sends n one-byte packets into l, one every gap of virtual
// time starting now, then waits long enough for all of them to come out.
func spikesSendEvery(t *testing.T, l *Link, n int, gap time.Duration) {
	t.Helper()
	for i := range n {
		require.NoError(t, l.Send(&Packet{Data: []byte{byte(i)}}))
		time.Sleep(gap)
	}
	time.Sleep(10 * time.Second)
	synctest.Wait()
}

// spikesExpected is what a FIFO link with only s in it must deliver: a
// packet sent at off (from the epoch) leaves at off plus the extra delay of
// the window holding it, but never before the packet sent before it.
func spikesExpected(ws []SpikeWindow, sent []time.Duration) []time.Duration {
	out := make([]time.Duration, len(sent))
	var last time.Duration
	for i, off := range sent {
		at := off
		for _, w := range ws {
			if off >= w.Start && off < w.End() {
				at += w.Extra
			}
		}
		last = max(last, at)
		out[i] = last
	}
	return out
}

func TestSpikesFixedScheduleIsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		s := &Spikes{Min: 150 * time.Millisecond, Max: 600 * time.Millisecond, Every: 2 * time.Second, Duration: 100 * time.Millisecond, Offset: 500 * time.Millisecond}
		l, rec := newTestLink(t, LinkConfig{Seed: 7, Epoch: epoch, Impairments: []Impairment{s}})
		spikesSendEvery(t, l, 1000, 10*time.Millisecond) // 10 s of traffic

		ws := s.Windows(10 * time.Second)
		require.Len(t, ws, 5)
		extras := map[time.Duration]bool{}
		for k, w := range ws {
			require.Equal(t, 500*time.Millisecond+time.Duration(k)*2*time.Second, w.Start, "window %d", k)
			require.Equal(t, 100*time.Millisecond, w.Duration)
			require.GreaterOrEqual(t, w.Extra, s.Min)
			require.LessOrEqual(t, w.Extra, s.Max)
			extras[w.Extra] = true
		}
		require.Greater(t, len(extras), 1, "each spike draws its own extra delay")

		got := rec.arrivals()
		require.Len(t, got, 1000)
		sent := make([]time.Duration, len(got))
		for i, a := range got {
			require.Equal(t, byte(i), a.P.Data[0], "FIFO")
			sent[i] = a.P.Sent.Sub(epoch)
			require.Equal(t, time.Duration(i)*10*time.Millisecond, sent[i])
		}
		want := spikesExpected(ws, sent)
		inWindow, clean := 0, 0
		for i, a := range got {
			require.Equal(t, want[i], a.At.Sub(epoch), "packet sent at %v", sent[i])
			if a.At.Sub(a.P.Sent) == 0 {
				clean++
			}
			if a.At.Sub(a.P.Sent) >= s.Min && a.P.Sent.Sub(epoch) >= 500*time.Millisecond &&
				(a.P.Sent.Sub(epoch)-500*time.Millisecond)%(2*time.Second) < 100*time.Millisecond {
				inWindow++
			}
		}
		require.Equal(t, 5*10, inWindow, "ten packets in each 100 ms window")
		// At most 10 packets in each window and 60 (600 ms / 10 ms) queued
		// behind it: all the others come out at once.
		require.GreaterOrEqual(t, clean, 1000-5*(10+60), "packets outside windows get no extra")
	})
}

func TestSpikesFIFOBehindASpike(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		s := &Spikes{Min: 300 * time.Millisecond, Max: 300 * time.Millisecond, Every: time.Second, Duration: 50 * time.Millisecond, Offset: 100 * time.Millisecond}
		l, rec := newTestLink(t, LinkConfig{Epoch: epoch, Impairments: []Impairment{s}})
		for _, at := range []time.Duration{0, 99 * time.Millisecond, 100 * time.Millisecond, 149 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond, 449 * time.Millisecond, 450 * time.Millisecond, 500 * time.Millisecond} {
			time.Sleep(time.Until(epoch.Add(at)))
			require.NoError(t, l.Send(&Packet{Data: []byte{byte(at / time.Millisecond)}}))
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got := rec.arrivals()
		want := []struct{ sent, at time.Duration }{
			{0, 0},
			{99 * time.Millisecond, 99 * time.Millisecond}, // just before the window
			{100 * time.Millisecond, 400 * time.Millisecond},
			{149 * time.Millisecond, 449 * time.Millisecond},
			{150 * time.Millisecond, 449 * time.Millisecond}, // after the window: queued behind the stall
			{300 * time.Millisecond, 449 * time.Millisecond},
			{449 * time.Millisecond, 449 * time.Millisecond},
			{450 * time.Millisecond, 450 * time.Millisecond}, // the backlog is gone
			{500 * time.Millisecond, 500 * time.Millisecond},
		}
		require.Len(t, got, len(want))
		for i, w := range want {
			require.Equal(t, w.sent, got[i].P.Sent.Sub(epoch), "packet %d", i)
			require.Equal(t, w.at, got[i].At.Sub(epoch), "packet %d sent at %v", i, w.sent)
		}
	})
}

func TestSpikesRandomSchedule(t *testing.T) {
	const (
		every    = 2 * time.Second
		duration = 100 * time.Millisecond
		offset   = time.Second
	)
	windows := func(seed uint64, until time.Duration) []SpikeWindow {
		s := &Spikes{Min: 150 * time.Millisecond, Max: 600 * time.Millisecond, Every: every, Duration: duration, Offset: offset, Random: true}
		tp := newTestPipeline(t, seed, s)
		require.Nil(t, s.Windows(until), "no schedule before the first packet")
		tp.send(1, 0)
		return s.Windows(until)
	}

	t.Run("deterministic for a seed", func(t *testing.T) {
		a, b := windows(1, time.Minute), windows(1, time.Minute)
		require.NotEmpty(t, a)
		require.Equal(t, a, b)
		require.NotEqual(t, a, windows(2, time.Minute))
	})

	t.Run("statistics", func(t *testing.T) {
		ws := windows(3, 20000*time.Second)
		require.Equal(t, offset, ws[0].Start, "first spike at Offset")
		n := len(ws) - 1
		require.Greater(t, n, 9000)
		var sumGap, sumGap2 float64
		for i, w := range ws {
			require.Equal(t, duration, w.Duration)
			require.GreaterOrEqual(t, w.Extra, 150*time.Millisecond)
			require.LessOrEqual(t, w.Extra, 600*time.Millisecond)
			if i == 0 {
				continue
			}
			require.GreaterOrEqual(t, w.Start, ws[i-1].End(), "windows never overlap")
			gap := (w.Start - ws[i-1].End()).Seconds()
			sumGap += gap
			sumGap2 += gap * gap
		}
		mean := (ws[n].Start - ws[0].Start).Seconds() / float64(n)
		require.InDelta(t, every.Seconds(), mean, 0.05*every.Seconds(), "mean interval between starts")
		// The idle gap is exponential: its standard deviation equals its mean.
		gapMean := sumGap / float64(n)
		gapSD := math.Sqrt(sumGap2/float64(n) - gapMean*gapMean)
		require.InDelta(t, gapMean, gapSD, 0.1*gapMean)
	})

	t.Run("packets meet the random windows", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			epoch := time.Now()
			s := &Spikes{Min: 200 * time.Millisecond, Max: 400 * time.Millisecond, Every: every, Duration: duration, Offset: offset, Random: true}
			l, rec := newTestLink(t, LinkConfig{Seed: 11, Epoch: epoch, Impairments: []Impairment{s}})
			spikesSendEvery(t, l, 3000, 10*time.Millisecond) // 30 s
			ws := s.Windows(30 * time.Second)
			require.Greater(t, len(ws), 5)
			got := rec.arrivals()
			require.Len(t, got, 3000)
			sent := make([]time.Duration, len(got))
			for i, a := range got {
				sent[i] = a.P.Sent.Sub(epoch)
			}
			want := spikesExpected(ws, sent)
			for i, a := range got {
				require.Equal(t, want[i], a.At.Sub(epoch), "packet sent at %v", sent[i])
			}
		})
	})
}

// The schedule is a function of time and the seed: an impairment that sees
// one packet a second gives the same extra delays, from the same windows, as
// one that sees a thousand.
func TestSpikesScheduleIgnoresTraffic(t *testing.T) {
	mk := func() (*Spikes, *Env) {
		return &Spikes{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond, Every: 700 * time.Millisecond, Duration: 200 * time.Millisecond, Random: true},
			&Env{Rand: seeded.New(5, "spikes"), Epoch: t0}
	}
	extra := func(s *Spikes, env *Env, at time.Duration) time.Duration {
		return s.Apply(&Packet{}, t0.Add(at), env).At.Sub(t0.Add(at))
	}
	dense, denseEnv := mk()
	sparse, sparseEnv := mk()
	extras := map[time.Duration]time.Duration{}
	spiked := 0
	for at := time.Duration(0); at < 60*time.Second; at += time.Millisecond {
		e := extra(dense, denseEnv, at)
		if at%(100*time.Millisecond) == 0 {
			extras[at] = e
			if e > 0 {
				spiked++
			}
		}
	}
	require.Greater(t, spiked, 20)
	for at := time.Duration(0); at < 60*time.Second; at += 100 * time.Millisecond {
		require.Equal(t, extras[at], extra(sparse, sparseEnv, at), "packet at %v", at)
	}
	require.Equal(t, dense.Windows(time.Minute), sparse.Windows(time.Minute))

	// A first packet far from the epoch finds its window, as if the link had
	// been busy all along.
	ws := dense.Windows(time.Minute)
	w := ws[len(ws)-1]
	late, lateEnv := mk()
	require.Equal(t, w.Extra, extra(late, lateEnv, w.Start))
	require.Equal(t, w.Extra, extra(late, lateEnv, w.End()-1))
	require.Zero(t, extra(late, lateEnv, w.End()))
}

func TestSpikesKeepTheirScheduleAcrossAPhase(t *testing.T) {
	mk := func() *Spikes {
		return &Spikes{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond, Every: time.Second, Duration: 300 * time.Millisecond, Random: true}
	}
	before, after := mk(), mk()
	tp := newTestPipeline(t, 9, before, &Delay{Delay: 10 * time.Millisecond})
	var last time.Time
	for at := time.Duration(0); at < time.Minute; at += 10 * time.Millisecond {
		delay := 10 * time.Millisecond
		if at >= 30*time.Second {
			delay = 20 * time.Millisecond
		}
		if at == 30*time.Second {
			tp.pl.set([]Impairment{after, &Delay{Delay: delay}})
		}
		d := tp.send(1, at)
		want := t0.Add(at + delay)
		for _, w := range before.Windows(time.Minute) {
			if at >= w.Start && at < w.End() {
				want = want.Add(w.Extra)
			}
		}
		if want.Before(last) {
			want = last
		}
		last = want
		require.Equal(t, want, d[0].At, "packet at %v", at)
	}
	require.Equal(t, before.Windows(time.Minute), after.Windows(time.Minute), "same parameters: the schedule goes on")

	other := &Spikes{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond, Every: 2 * time.Second, Duration: 300 * time.Millisecond, Random: true}
	tp.pl.set([]Impairment{other})
	tp.send(1, 61*time.Second)
	require.NotEqual(t, before.Windows(time.Minute), other.Windows(time.Minute), "new parameters: a new schedule")
}

func TestSpikesValidate(t *testing.T) {
	ok := Spikes{Min: 150 * time.Millisecond, Max: 600 * time.Millisecond, Every: 3 * time.Second, Duration: 200 * time.Millisecond}
	require.NoError(t, ok.Validate())
	equal := ok
	equal.Min, equal.Max = time.Second, time.Second
	require.NoError(t, equal.Validate(), "Min == Max is allowed")
	backToBack := ok
	backToBack.Duration = backToBack.Every
	require.NoError(t, backToBack.Validate())

	for name, tc := range map[string]struct {
		mut  func(*Spikes)
		want string
	}{
		"negative min":      {func(s *Spikes) { s.Min = -time.Millisecond }, "min -1ms is negative"},
		"negative max":      {func(s *Spikes) { s.Min, s.Max = -2, -1 }, "max -1ns is negative"},
		"negative every":    {func(s *Spikes) { s.Every = -time.Second }, "every -1s is negative"},
		"zero every":        {func(s *Spikes) { s.Every = 0 }, "every must be positive"},
		"negative duration": {func(s *Spikes) { s.Duration = -time.Second }, "duration -1s is negative"},
		"negative offset":   {func(s *Spikes) { s.Offset = -time.Second }, "offset -1s is negative"},
		"min above max":     {func(s *Spikes) { s.Min = time.Second }, "min 1s is greater than max 600ms"},
		"duration > every":  {func(s *Spikes) { s.Duration = 4 * time.Second }, "duration 4s is longer than every 3s"},
		"random too":        {func(s *Spikes) { s.Duration, s.Random = 4*time.Second, true }, "longer than every"},
	} {
		t.Run(name, func(t *testing.T) {
			s := ok
			tc.mut(&s)
			require.ErrorContains(t, s.Validate(), tc.want)
			_, err := NewLink(LinkConfig{Impairments: []Impairment{&s}}, func(*Packet) {})
			require.ErrorContains(t, err, "spikes: ")
		})
	}
}

func TestSpikesRegistered(t *testing.T) {
	imp, err := New("spikes")
	require.NoError(t, err)
	s, ok := imp.(*Spikes)
	require.True(t, ok)
	require.NoError(t, s.Validate(), "the registered defaults are valid")
	require.Equal(t, StageDelay, s.Stage())
	require.Equal(t, 150*time.Millisecond, s.Min)
	require.Equal(t, 600*time.Millisecond, s.Max)
}

// A fixed schedule: a 200 ms stall of 100 ms every 2 s, the first at 1 s.
func ExampleSpikes_Windows() {
	synctest.Test(&testing.T{}, func(*testing.T) {
		s := &Spikes{Min: 200 * time.Millisecond, Max: 200 * time.Millisecond, Every: 2 * time.Second, Duration: 100 * time.Millisecond, Offset: time.Second}
		l, _ := NewLink(LinkConfig{Impairments: []Impairment{s}}, func(*Packet) {})
		defer l.Close()
		l.Send(&Packet{Data: []byte("x")}) // draws the schedule's source; windows count from the epoch
		for _, w := range s.Windows(6 * time.Second) {
			fmt.Println(w.Start, w.End(), w.Extra)
		}
	})
	// Output:
	// 1s 1.1s 200ms
	// 3s 3.1s 200ms
	// 5s 5.1s 200ms
}
