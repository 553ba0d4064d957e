package measure_test

import (
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/lab/measure"
	"github.com/nuvirahub/latencylab/lab/result"
)

// Measurements are taken over a window of the session and come in the
// catalogue's units: seconds for durations, a plain number for fps. Here
// four frames are displayed 200 ms apart, each pause (and the one from the
// last frame to the end) longer than the 150 ms that makes a freeze. A
// result read back from its JSON file measures the same.
func ExampleOf() {
	const ms = time.Millisecond
	r := &result.Run{Duration: time.Second, Ran: time.Second, Refresh: 60, FreezeThreshold: 150 * ms}
	for i, lat := range []time.Duration{20 * ms, 30 * ms, 25 * ms, 80 * ms} {
		shown := time.Duration(i+1) * 200 * ms
		r.Frames = append(r.Frames, result.FrameRecord{Seq: uint64(i + 1), Captured: shown - lat, Displayed: shown, Latency: lat})
	}
	for _, name := range []string{"latency.median", "latency.max", "fps", "freezes"} {
		v, err := measure.Of(r, name, 0, 0)
		fmt.Println(name, v, err)
	}
	v, err := measure.Of(r, "latency.median", 700*ms, 0)
	fmt.Println("latency.median from 0.7 s:", v, err)
	// Output:
	// latency.median 0.025 <nil>
	// latency.max 0.08 <nil>
	// fps 4 <nil>
	// freezes 4 <nil>
	// latency.median from 0.7 s: 0.08 <nil>
}

// Some measurements read a figure of their own (scenarios.MeasurementKeys):
// here a latency bound. The same four frames, and a network change at
// 0.5 s: the picture is more than 50 ms late from 0.8 s to the end, a
// quarter of the time it is on the screen; the median latency of the last
// second stays under 50 ms after the change, but is 25 ms from 0.6 s on,
// never again under 25 ms.
func ExampleOfWith() {
	const ms = time.Millisecond
	r := &result.Run{Duration: time.Second, Ran: time.Second, Refresh: 60, FreezeThreshold: 150 * ms,
		Network: result.NetworkInfo{Down: []result.PhaseInfo{{At: 0}, {At: 500 * ms}}}}
	for i, lat := range []time.Duration{20 * ms, 30 * ms, 25 * ms, 80 * ms} {
		shown := time.Duration(i+1) * 200 * ms
		r.Frames = append(r.Frames, result.FrameRecord{Seq: uint64(i + 1), Captured: shown - lat, Displayed: shown, Latency: lat})
	}
	fmt.Println(measure.OfWith(r, "latency.time-above", 0, 0, measure.Params{Latency: 50 * ms}))
	fmt.Println(measure.OfWith(r, "recovery.under", 0, 0, measure.Params{Latency: 50 * ms}))
	fmt.Println(measure.OfWith(r, "recovery.under", 0, 0, measure.Params{Latency: 25 * ms}))
	fmt.Println(measure.Of(r, "recovery.under", 0, 0))
	// Output:
	// 0.25 <nil>
	// 0 <nil>
	// 0 lab: never recovered: after the change at 500ms (down) the latency did not come back under 25ms for good before the window's end, at 1s: the median of the last second was 25ms
	// 0 lab: bad parameters: recovery.under needs latency
}
