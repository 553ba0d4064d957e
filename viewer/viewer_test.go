package viewer_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"

	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
	"github.com/nuvirahub/latencylab/netem"
	"github.com/nuvirahub/latencylab/viewer"
)

// N1: with perfect clocks, a fixed 10 ms one-way delay and a viewer that
// decodes and presents in no time, the viewer's own latency figures are the
// true ones, to the nanosecond, and so is its network part (N12). The true
// latency is the modelled stages and nothing else: 5 ms of encoding and the
// 10 ms link.
func TestLatencyIsMeasuredExactly(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 1)
	synctest.Test(t, func(t *testing.T) {
		s := startSession(t, 10*time.Millisecond,
			viewer.Config{Decode: dist.Constant(0)},
			plan{interval: fps60, encode: dist.Constant(5 * time.Millisecond), payload: 1000})
		time.Sleep(2 * time.Second)
		s.close()

		frames := s.displayed(s.start)
		require.Greater(t, len(frames), 110)
		for _, f := range frames {
			require.Equal(t, 15*time.Millisecond, f.Latency(), "frame %d", f.Seq)
			require.Equal(t, f.Latency(), f.Estimated, "frame %d", f.Seq)
			require.Equal(t, 10*time.Millisecond, f.Network(), "frame %d", f.Seq)
			require.Equal(t, f.Network(), f.EstimatedNetwork, "frame %d", f.Seq)
		}
		c := s.viewer.Counters()
		require.Equal(t, c.Received, c.Displayed)
		require.Empty(t, c.Dropped)
		require.Equal(t, "latency 15 ms (min 15 ms) · network 10 ms · 60 fps", s.viewer.Status())
	})
}

// N1 with real clocks: the agent's clock is 2.5 s ahead and gains 30 ppm,
// the viewer's 0.5 s behind and loses 20 ppm: 3 s and 50 ppm between them,
// 3 ms more of offset after the minute. The viewer's estimate of every
// frame's latency and network part stays within 1 ms of the truth once the
// first second is over: on a plain 10 ms link, and on one where the agent's
// clock replies queue behind video in a 5 Mbit/s bottleneck (each 8 KB frame
// takes 13 ms to cross it), which only min-RTT filtering survives.
func TestLatencyEstimateFollowsOffsetAndDrift(t *testing.T) {
	for _, c := range []struct {
		name    string
		payload int
		down    []netem.Impairment
	}{
		{"fixed delay", 1500, nil},
		{"replies queue behind video", 8000, []netem.Impairment{&netem.Rate{Rate: 5e6}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, 2)
			synctest.Test(t, func(t *testing.T) {
				epoch := time.Now()
				agentClock := clock.New(2500*time.Millisecond, 30, epoch)
				viewerClock := clock.New(-500*time.Millisecond, -20, epoch)
				s := startSession(t, 10*time.Millisecond,
					viewer.Config{Clock: viewerClock, Decode: dist.Normal(3*time.Millisecond, time.Millisecond), Seed: 2},
					plan{clock: agentClock, interval: fps60, encode: dist.List(5*time.Millisecond, 9*time.Millisecond), payload: c.payload},
					c.down...)
				time.Sleep(time.Minute)
				s.close()

				frames := s.displayed(epoch.Add(time.Second))
				require.Greater(t, len(frames), 3500)
				// Until the samples span minDriftSpan the estimate is
				// the best sample, which the drift leaves behind.
				var early, worst, worstNet, maxRTT time.Duration
				for _, f := range frames {
					e := (f.Estimated - f.Latency()).Abs()
					if f.Captured.Sub(epoch) < 3*time.Second {
						early = max(early, e)
					}
					worst = max(worst, e)
					worstNet = max(worstNet, (f.EstimatedNetwork - f.Network()).Abs())
				}
				for _, cs := range s.viewer.Estimator().Samples() {
					maxRTT = max(maxRTT, cs.RTT)
				}
				t.Logf("%d frames: worst error %v in latency (%v in the first 3 s), %v in its network part; "+
					"drift estimated %.3f ppm; clock RTTs 20 ms to %v",
					len(frames), worst, early, worstNet, s.viewer.Estimator().Drift(), maxRTT)
				require.LessOrEqual(t, worst, time.Millisecond)
				require.LessOrEqual(t, worstNet, time.Millisecond)
				require.InDelta(t, 50, s.viewer.Estimator().Drift(), 1)
			})
		})
	}
}

// n8 runs a viewer slower than the agent (a 40 ms present on a 60 Hz
// display; the agent sends 60 frames a second) for d, and returns the
// displayed frames' ground truth and the viewer's counters.
func n8(t *testing.T, old bool, d time.Duration) ([]groundtruth.Frame, viewer.Counters, time.Time) {
	var frames []groundtruth.Frame
	var counters viewer.Counters
	var start time.Time
	synctest.Test(t, func(t *testing.T) {
		s := startSession(t, 10*time.Millisecond,
			viewer.Config{Present: 40 * time.Millisecond, Refresh: fps60, OldShowEveryFrame: old},
			plan{interval: fps60, encode: dist.Constant(5 * time.Millisecond), payload: 1000})
		time.Sleep(d)
		s.close()
		frames, counters, start = s.displayed(s.start), s.viewer.Counters(), s.start
	})
	return frames, counters, start
}

// N8: a viewer slower than the agent. The old display shows every frame in
// order and its queue grows as long as the session lasts: latency climbs
// past the documented 2.5 s within seconds and keeps climbing. The fix shows
// the last decoded frame and drops the overtaken ones: latency stays under
// encode + network + decode + refresh + two presents, whatever the length.
func TestSlowViewer(t *testing.T) {
	const oneWay, encode, decode, present, refresh = 10 * time.Millisecond, 5 * time.Millisecond,
		viewer.DefaultDecode, 40 * time.Millisecond, fps60

	t.Run("old shows every frame", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 3)
		frames, c, start := n8(t, true, time.Minute)
		worstBySecond := map[int]time.Duration{}
		for _, f := range frames {
			sec := int(f.Displayed.Sub(start) / time.Second)
			worstBySecond[sec] = max(worstBySecond[sec], f.Latency())
		}
		t.Logf("old: latency at 5 s %v, 10 s %v, 30 s %v, 59 s %v; %d displayed of %d received",
			worstBySecond[5], worstBySecond[10], worstBySecond[30], worstBySecond[59], c.Displayed, c.Received)
		for sec := 2; sec < 59; sec++ {
			require.Greater(t, worstBySecond[sec+1], worstBySecond[sec], "latency grows every second (%d s)", sec)
		}
		// Two of every three frames add a queue place: 2/3 s of latency a
		// second, past the documented 2.5 s within 5 s.
		require.Greater(t, worstBySecond[5], 2500*time.Millisecond)
		require.Greater(t, worstBySecond[59], 35*time.Second)
		require.Empty(t, c.Dropped, "the old display drops nothing")
	})

	t.Run("fix shows the last decoded frame", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 3)
		frames, c, start := n8(t, false, time.Minute)
		bound := encode + oneWay + decode + refresh + 2*present
		var lat []time.Duration
		for _, f := range frames {
			if f.Captured.Sub(start) > time.Second {
				lat = append(lat, f.Latency())
				require.Less(t, f.Latency(), bound, "frame %d", f.Seq)
				require.InDelta(t, f.Latency(), f.Estimated, float64(time.Microsecond))
			}
		}
		slices.Sort(lat)
		t.Logf("fix: latency median %v, max %v (bound %v); %d displayed, %d overtaken, of %d received",
			lat[len(lat)/2], lat[len(lat)-1], bound, c.Displayed, c.Dropped[viewer.ReasonOvertaken], c.Received)
		// A present every 50 ms (40 ms rounded up to the next refresh
		// tick): 20 of the 60 frames a second are shown.
		require.InDelta(t, 20*60, c.Displayed, 30)
		require.Positive(t, c.Dropped[viewer.ReasonOvertaken])
		// Every frame received is displayed or dropped, but for the few
		// still between arrival and the screen when the session closed:
		// one decoding, one waiting, one being presented.
		inFlight := c.Received - c.Displayed - c.Dropped[viewer.ReasonOvertaken] - c.Dropped[viewer.ReasonLate]
		require.GreaterOrEqual(t, inFlight, int64(0))
		require.LessOrEqual(t, inFlight, int64(3))
	})
}

// A corrupt frame (bad magic) and a truncated one (its stream reset halfway)
// are dropped and counted, each brings a keyframe request to the agent, and
// the frames after them are displayed. A frame held back until newer ones
// were decoded is dropped as late (the default policy, drop); the frame
// decoded in its place had no reference, so it shows a damaged picture and
// asks for a keyframe too. The pictures are damaged from each break to the
// keyframe that answers it.
func TestBrokenFramesAreDroppedAndTheSessionGoesOn(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 4)
	synctest.Test(t, func(t *testing.T) {
		s := startSession(t, 10*time.Millisecond, viewer.Config{},
			plan{interval: fps60, encode: dist.Constant(5 * time.Millisecond), payload: 3000,
				broken: map[uint64]string{30: "corrupt", 60: "truncate", 90: "hold"}})
		time.Sleep(2 * time.Second)
		s.close()

		c := s.viewer.Counters()
		require.Equal(t, map[string]int64{viewer.ReasonCorrupt: 1, viewer.ReasonTruncated: 1, viewer.ReasonLate: 1}, c.Dropped)
		require.Equal(t, int64(3), c.KeyframeRequests)
		require.Equal(t, 3, s.rec.Count(viewer.EventAsk, viewer.AskKeyframe))
		require.Equal(t, 1, s.rec.Count(viewer.EventDrop, viewer.ReasonCorrupt))
		var drops []groundtruth.Event
		for _, e := range s.rec.Events() {
			if e.Kind == viewer.EventDrop {
				drops = append(drops, e)
			}
		}
		require.Len(t, drops, 3)
		require.Equal(t, uint64(0), drops[0].Seq, "a corrupt header names no frame")
		require.Equal(t, uint64(60), drops[1].Seq, "a truncated frame's header was read")
		require.Equal(t, uint64(90), drops[2].Seq)

		_, _, requests := s.agent.snapshot()
		require.Len(t, requests, 3)
		// The agent answers each request with a keyframe, which clears it:
		// the next broken frame asks again at once.
		var keyframes []uint64
		for _, f := range s.rec.Frames() {
			if f.Keyframe {
				keyframes = append(keyframes, f.Seq)
			}
		}
		require.Len(t, keyframes, 4)
		// Damaged from the frame after each break up to the keyframe
		// that repairs it, and whole everywhere else.
		repair := func(after uint64) uint64 {
			for _, k := range keyframes {
				if k > after {
					return k
				}
			}
			t.Fatalf("no keyframe after frame %d", after)
			return 0
		}
		var damaged int64
		for _, f := range s.rec.Frames() {
			if f.DecodeStart.IsZero() {
				continue
			}
			broken := false
			for _, b := range []uint64{30, 60, 90} {
				broken = broken || (f.Seq > b && f.Seq < repair(b))
			}
			require.Equal(t, broken, f.Damaged, "frame %d", f.Seq)
			if f.Damaged {
				damaged++
				require.Positive(t, f.DamageAge)
			}
		}
		require.Equal(t, damaged, c.Damaged)
		require.Positive(t, damaged)
		for _, f := range s.rec.Frames() {
			switch {
			case f.Seq == 30:
				require.True(t, f.Displayed.IsZero())
				require.True(t, f.Arrived.IsZero())
			case f.Seq == 60:
				require.True(t, f.Displayed.IsZero())
				require.Equal(t, viewer.ReasonTruncated, f.Dropped)
			case f.Seq == 90:
				require.False(t, f.Arrived.IsZero())
				require.True(t, f.DecodeStart.IsZero())
				require.Equal(t, viewer.ReasonLate, f.Dropped)
			case f.Seq > 60 && f.Seq < 110:
				require.False(t, f.Displayed.IsZero(), "frame %d after the broken ones", f.Seq)
			}
		}
		require.Greater(t, c.Bytes, c.Received*3000)
	})
}

// N1: a report every 250 ms, exactly, carrying the median and minimum of
// the latency and of its network part over the frames displayed in its
// period, and its frame count. Encode times vary so that the figures do.
func TestReportsEvery250ms(t *testing.T) {
	cryptotest.SetGlobalRandom(t, 5)
	synctest.Test(t, func(t *testing.T) {
		s := startSession(t, 10*time.Millisecond, viewer.Config{Decode: dist.Constant(0)},
			plan{interval: 20 * time.Millisecond, payload: 800,
				encode: dist.List(5*time.Millisecond, 11*time.Millisecond, 7*time.Millisecond, 9*time.Millisecond, 6*time.Millisecond)})
		// Not a multiple of 250 ms: the session closes between reports.
		time.Sleep(3*time.Second + 100*time.Millisecond)
		s.close()

		reports, _, _ := s.agent.snapshot()
		require.GreaterOrEqual(t, len(reports), 11)
		frames := s.rec.Frames()
		for i, ar := range reports {
			r := ar.r
			if i > 0 {
				require.Equal(t, 250*time.Millisecond, ar.at.Sub(reports[i-1].at), "report %d", i)
				require.Equal(t, 250*time.Millisecond, r.End.Sub(reports[i-1].r.End), "report %d", i)
			}
			// The viewer's clock is perfect: its End is true time.
			var lat, net []time.Duration
			for _, f := range frames {
				require.False(t, f.Displayed.Equal(r.End), "a frame displayed on a period's edge makes the test ambiguous")
				if f.Estimated != 0 && f.Displayed.After(r.End.Add(-250*time.Millisecond)) && !f.Displayed.After(r.End) {
					lat, net = append(lat, f.Estimated), append(net, f.EstimatedNetwork)
				}
			}
			require.Equal(t, len(lat), int(r.Frames), "report %d", i)
			if len(lat) == 0 {
				continue
			}
			slices.Sort(lat)
			slices.Sort(net)
			require.Equal(t, median(lat), r.Median, "report %d", i)
			require.Equal(t, lat[0], r.Min, "report %d", i)
			require.Equal(t, median(net), r.NetworkMedian, "report %d", i)
			require.Equal(t, net[0], r.NetworkMin, "report %d", i)
		}
		last, ok := s.viewer.LastReport()
		require.True(t, ok)
		require.Equal(t, reports[len(reports)-1].r, last)
		require.Equal(t, fmt.Sprintf("latency %d ms (min %d ms) · network 10 ms · %d fps",
			last.Median.Round(time.Millisecond)/time.Millisecond, last.Min/time.Millisecond, last.Frames*4), s.viewer.Status())
	})
}

func median(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
}

// Every goroutine of the viewer ends when the session does: whether the
// agent closes the connection (Run returns as its close arrives, one
// one-way delay later) or the caller cancels Run's context (Run returns at
// once, and the agent sees the control stream end). synctest.Test itself
// fails if any goroutine of the bubble is left blocked.
func TestRunEndsWithTheSession(t *testing.T) {
	t.Run("agent closes the connection", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 6)
		synctest.Test(t, func(t *testing.T) {
			s := startSession(t, 10*time.Millisecond, viewer.Config{Present: 5 * time.Millisecond, Refresh: fps60},
				plan{interval: fps60, encode: dist.Constant(5 * time.Millisecond), payload: 1000})
			time.Sleep(time.Second)
			closed := time.Now()
			require.NoError(t, s.pair.Server.CloseWithError(0, "bye"))
			require.NoError(t, <-s.viewDone)
			require.Equal(t, 10*time.Millisecond, time.Since(closed))
			s.viewDone <- nil // close waits for it
			s.close()
			require.Positive(t, s.viewer.Counters().Displayed)
		})
	})
	t.Run("context cancelled", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 7)
		synctest.Test(t, func(t *testing.T) {
			s := startSession(t, 10*time.Millisecond, viewer.Config{},
				plan{interval: fps60, encode: dist.Constant(5 * time.Millisecond), payload: 1000})
			time.Sleep(time.Second)
			cancelled := time.Now()
			s.stopView()
			require.NoError(t, <-s.viewDone)
			require.Equal(t, time.Duration(0), time.Since(cancelled))
			time.Sleep(10 * time.Millisecond) // the FIN crosses the link
			synctest.Wait()                   // and the agent reads it
			s.agent.mu.Lock()
			ended := s.agent.controlEnded
			s.agent.mu.Unlock()
			require.ErrorIs(t, ended, io.EOF, "the agent sees the viewer leave")
			s.viewDone <- nil
			s.close()
		})
	})
	t.Run("connection closed with an error", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 9)
		synctest.Test(t, func(t *testing.T) {
			s := startSession(t, 10*time.Millisecond, viewer.Config{}, plan{interval: fps60, payload: 100})
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, s.pair.Server.CloseWithError(42, "agent failed"))
			err := <-s.viewDone
			var app *quic.ApplicationError
			require.ErrorAs(t, err, &app)
			require.Equal(t, quic.ApplicationErrorCode(42), app.ErrorCode)
			s.viewDone <- nil
			s.close()
		})
	})
	t.Run("a viewer runs once", func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 8)
		synctest.Test(t, func(t *testing.T) {
			s := startSession(t, 10*time.Millisecond, viewer.Config{}, plan{interval: fps60, payload: 100})
			time.Sleep(100 * time.Millisecond)
			require.ErrorIs(t, s.viewer.Run(context.Background(), s.pair.Client), viewer.ErrAlreadyRun)
			s.close()
		})
	})
}

func TestConfigIsChecked(t *testing.T) {
	for name, cfg := range map[string]viewer.Config{
		"negative present": {Present: -1},
		"negative refresh": {Refresh: -time.Millisecond},
		"negative decode":  {Decode: dist.Constant(-1)},
		"negative burst":   {ClockBurst: -1},
	} {
		_, err := viewer.New(cfg)
		require.ErrorIs(t, err, viewer.ErrConfig, name)
	}
	v, err := viewer.New(viewer.Config{})
	require.NoError(t, err)
	require.Equal(t, "latency — · waiting for frames", v.Status())
	_, ok := v.LastReport()
	require.False(t, ok)
}
