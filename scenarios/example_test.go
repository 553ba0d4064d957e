package scenarios_test

import (
	"fmt"

	"github.com/nuvirahub/latencylab/scenarios"
)

// A scenario inherits its folder's defaults; every mistake is reported
// with its file, line and field.
func ExampleParse() {
	defaults := []byte("duration: 20s\nseed: 1\n")
	s, err := scenarios.Parse("library/mobile.yaml", []byte(`
name: mobile
description: A phone on a mobile network.
network:
  down:
    delay: 30ms
    spikes: {min: 150ms, max: 600ms, every: 3s, duration: 200ms}
`), defaults)
	fmt.Println(s, err)

	_, err = scenarios.Parse("library/mobile.yaml", []byte(`
name: mobile
description: A phone on a mobile network.
network:
  down:
    delay: 30
    loss: 120%
expect:
  - {measure: latency.median, max: 1Mbit/s}
`), defaults)
	for _, e := range scenarios.Errors(err) {
		fmt.Printf("line %d, field %s: %s\n", e.Line, e.Field, e.Msg)
	}
	// Output:
	// mobile (library/mobile.yaml) 20s <nil>
	// line 6, field network.down.delay: 30 is missing a unit: expected a duration like 25ms, 1.5s or 500us
	// line 7, field network.down.loss: 120% out of range: expected a percentage from 0% to 100%
	// line 9, field expect[0].max: 1Mbit/s has the wrong unit: expected a duration like 25ms, 1.5s or 500us, not a rate
}
