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
