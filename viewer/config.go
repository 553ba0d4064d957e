package viewer

import (
	"errors"
	"fmt"
	"time"

	"github.com/nuvirahub/latencylab/internal/clock"
	"github.com/nuvirahub/latencylab/internal/dist"
	"github.com/nuvirahub/latencylab/internal/groundtruth"
)

// Defaults for a zero Config.
const (
	// DefaultDecode is a hardware H.264 decode of a desktop frame.
	DefaultDecode = 3 * time.Millisecond
	// DefaultReportEvery is the documented report period (N1).
	DefaultReportEvery = 250 * time.Millisecond
	// DefaultClockProbeEvery is the probe period once the start-up burst
	// has given a first estimate: often enough to follow tens of ppm of
	// drift to well under a millisecond, rare enough to cost nothing.
	DefaultClockProbeEvery = time.Second
	// DefaultClockBurst is how many probes the viewer sends at start, so
	// that the first frames already have a min-RTT-filtered estimate.
	DefaultClockBurst = 5
)

// clockBurstGap is the mean gap between the start-up probes: far enough
// apart that they do not queue behind one another, close enough to finish
// within the first quarter second.
const clockBurstGap = 50 * time.Millisecond

// Config sets up a viewer. The zero value is a viewer on a perfect clock,
// recording nothing, decoding in 3 ms, presenting instantly as soon as a
// frame is decoded, with the fixed display policy of N8.
type Config struct {
	// Clock is the viewer PC's own clock; nil is a perfect clock (true
	// time). Every time the viewer sends or computes with is read from it.
	Clock *clock.Clock
	// Recorder receives the ground truth of arrival, decoding, display and
	// drops, and the viewer's estimates; nil records nothing.
	Recorder *groundtruth.Recorder
	// Seed seeds the viewer's random decisions: decode times drawn from a
	// normal distribution, the gaps between clock probes.
	Seed uint64

	// Decode is how long decoding a frame takes. Unset (the zero value):
	// a constant DefaultDecode. dist.Constant(0) decodes instantly.
	Decode dist.Duration
	// Decoder, when set, is a real decoder behind the decoder model: it
	// gets every frame's payload, in the order the model decodes them, and
	// judges the picture the viewer then shows. The model still decides
	// when decoding ends (Decode), so a session stays in virtual time.
	Decoder FrameDecoder

	// Refresh is the display's vsync interval: a present starts only on a
	// refresh tick (ticks are counted from the start of Run). 0 means no
	// vsync: a present starts as soon as there is a frame and the previous
	// present has ended.
	Refresh time.Duration
	// Present is how long a present takes, from its start to the frame
	// being on the screen; the display can start no other present
	// meanwhile. A viewer whose Present exceeds the agent's frame interval
	// is slower than the agent (N8). 0 presents instantly.
	Present time.Duration
	// OldShowEveryFrame restores N8's documented bug: every decoded frame
	// is shown, in decode order, each waiting for the previous present, so
	// a viewer slower than the agent builds a queue without bound. False
	// (the fix): the display always shows the last decoded frame; a frame
	// overtaken by a newer one before it could be shown is dropped
	// ("overtaken"), and so is a frame that arrives after a newer one was
	// already decoded ("late").
	OldShowEveryFrame bool
	// Policy is what the viewer does with a frame that arrives after a
	// newer one, and how it repairs a broken reference chain (Policy*);
	// empty is PolicyDrop. With OldShowEveryFrame no frame is late: every
	// one is decoded in arrival order.
	Policy Policy

	// ReportEvery is the report period; 0 means DefaultReportEvery.
	ReportEvery time.Duration
	// ClockProbeEvery is the mean clock probe period after the start-up
	// burst (each gap is drawn between half and one and a half times it);
	// 0 means DefaultClockProbeEvery.
	ClockProbeEvery time.Duration
	// ClockBurst is how many probes the viewer sends at start, about 50 ms
	// apart (the first of them opens the control stream); 0 means
	// DefaultClockBurst.
	ClockBurst int
}

// ErrConfig wraps every reason a Config is refused.
var ErrConfig = errors.New("viewer: bad config")

// withDefaults validates c and puts the defaults in place of zero fields.
func (c Config) withDefaults() (Config, error) {
	c.Decode = c.Decode.Or(dist.Constant(DefaultDecode))
	if err := c.Decode.Validate(); err != nil {
		return c, fmt.Errorf("%w: Decode: %w", ErrConfig, err)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Refresh", c.Refresh}, {"Present", c.Present}, {"ReportEvery", c.ReportEvery}, {"ClockProbeEvery", c.ClockProbeEvery}} {
		if d.v < 0 {
			return c, fmt.Errorf("%w: %s is negative (%v)", ErrConfig, d.name, d.v)
		}
	}
	if err := c.Policy.validate(); err != nil {
		return c, fmt.Errorf("%w: Policy: %w", ErrConfig, err)
	}
	if c.ClockBurst < 0 {
		return c, fmt.Errorf("%w: ClockBurst is negative (%d)", ErrConfig, c.ClockBurst)
	}
	if c.ReportEvery == 0 {
		c.ReportEvery = DefaultReportEvery
	}
	if c.ClockProbeEvery == 0 {
		c.ClockProbeEvery = DefaultClockProbeEvery
	}
	if c.ClockBurst == 0 {
		c.ClockBurst = DefaultClockBurst
	}
	return c, nil
}
